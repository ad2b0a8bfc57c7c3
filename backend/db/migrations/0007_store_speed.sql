-- Search indexing leaves the message writes. A new message is queued in
-- fts_pending (one small B-tree insert) instead of being indexed in its
-- own transaction (FTS5 writes a segment and merges per transaction: two
-- thirds of an append's cost); a deleted (or edited) message that was
-- indexed is queued in fts_gone instead of being removed from the index in
-- the deleting transaction (FTS5 tombstones: 40% of a bulk delete). The
-- session service's background indexer applies both queues in batches,
-- removals first. Meanwhile search and the match filter cover the queues:
-- queued messages are matched on their own, and index entries of gone
-- messages are left out, so no hit is missed and no stale one shown.
CREATE TABLE fts_pending (id INTEGER PRIMARY KEY);
CREATE TABLE fts_gone (id INTEGER PRIMARY KEY);
DROP TRIGGER messages_fts_ai;
DROP TRIGGER messages_fts_ad;
DROP TRIGGER messages_fts_au;
CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN
  INSERT INTO fts_pending (id) VALUES (new.id);
END;
-- A queued row was never indexed: it only leaves the queue.
CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
  INSERT OR IGNORE INTO fts_gone (id) SELECT old.id WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
  DELETE FROM fts_pending WHERE id = old.id;
END;
CREATE TRIGGER messages_fts_au AFTER UPDATE OF content ON messages BEGIN
  INSERT OR IGNORE INTO fts_gone (id) SELECT old.id WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
  INSERT OR IGNORE INTO fts_pending (id) VALUES (new.id);
END;

-- Deletes never make FTS5 rewrite a segment in the deleting (or indexing)
-- transaction: a single delete cost 1.3-2.0 ms with the default (10%),
-- 0.7 ms with 0 (docs/benchmarks.md). Maintenance merges the index, which
-- drops the deleted entries, in small steps (sessions.Service.MergeIndex).
INSERT INTO messages_fts (messages_fts, rank) VALUES ('deletemerge', 0);
INSERT INTO sessions_fts (sessions_fts, rank) VALUES ('deletemerge', 0);

-- Transcripts read in their order, COALESCE(pos, id), straight from the
-- index (no sort); deletes still find a session's messages by its prefix.
DROP INDEX messages_session;
CREATE INDEX messages_session ON messages (session_id, COALESCE(pos, id));

-- Counting is hot (the window's title, every list's total): one row per
-- scope, kept by triggers on every path that adds, removes, archives or
-- trashes a session.
CREATE TABLE session_counts (
  scope TEXT PRIMARY KEY CHECK (scope IN ('active', 'archived', 'trash')),
  n     INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO session_counts (scope, n) VALUES
  ('active', (SELECT count(*) FROM sessions WHERE archived = 0 AND trashed_at IS NULL)),
  ('archived', (SELECT count(*) FROM sessions WHERE archived = 1 AND trashed_at IS NULL)),
  ('trash', (SELECT count(*) FROM sessions WHERE trashed_at IS NOT NULL));
CREATE TRIGGER session_counts_ai AFTER INSERT ON sessions BEGIN
  UPDATE session_counts SET n = n + 1
  WHERE scope = CASE WHEN new.trashed_at IS NOT NULL THEN 'trash' WHEN new.archived THEN 'archived' ELSE 'active' END;
END;
CREATE TRIGGER session_counts_ad AFTER DELETE ON sessions BEGIN
  UPDATE session_counts SET n = n - 1
  WHERE scope = CASE WHEN old.trashed_at IS NOT NULL THEN 'trash' WHEN old.archived THEN 'archived' ELSE 'active' END;
END;
CREATE TRIGGER session_counts_au AFTER UPDATE OF archived, trashed_at ON sessions
WHEN (old.trashed_at IS NULL) <> (new.trashed_at IS NULL) OR (old.archived <> new.archived AND new.trashed_at IS NULL) BEGIN
  UPDATE session_counts SET n = n + CASE scope
      WHEN CASE WHEN new.trashed_at IS NOT NULL THEN 'trash' WHEN new.archived THEN 'archived' ELSE 'active' END THEN 1 ELSE 0 END
    - CASE scope
      WHEN CASE WHEN old.trashed_at IS NOT NULL THEN 'trash' WHEN old.archived THEN 'archived' ELSE 'active' END THEN 1 ELSE 0 END;
END;
