-- Conversations: chain_root names the first session of the compression chain
-- a session continues (NULL for a session that continues none), so a chain
-- is one index lookup and lists can show it as one row. A trigger fills it
-- for every new compression child, whatever path inserts it.
ALTER TABLE sessions ADD COLUMN chain_root TEXT;
CREATE INDEX sessions_chain ON sessions (chain_root) WHERE chain_root IS NOT NULL;
CREATE TRIGGER sessions_chain_ai AFTER INSERT ON sessions
WHEN new.relation = 'compression' AND new.parent_session_id IS NOT NULL AND new.chain_root IS NULL BEGIN
  UPDATE sessions SET chain_root = (SELECT COALESCE(p.chain_root, p.id) FROM sessions p WHERE p.id = new.parent_session_id)
  WHERE pk = new.pk;
END;
WITH RECURSIVE ch(id, root) AS (
  SELECT r.id, r.id FROM sessions r
  WHERE r.relation <> 'compression'
    AND EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = r.id AND c.relation = 'compression')
  UNION ALL
  SELECT s.id, ch.root FROM sessions s JOIN ch ON s.parent_session_id = ch.id WHERE s.relation = 'compression'
)
UPDATE sessions SET chain_root = ch.root FROM ch WHERE ch.id = sessions.id AND sessions.relation = 'compression';

-- One row per rotation (a compaction that continued a conversation in a new
-- session): what the divider between two parts of a chain says.
CREATE TABLE session_rotations (
  session_id      TEXT    PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
  from_session_id TEXT    NOT NULL,
  kind            TEXT    NOT NULL,
  reason          TEXT    NOT NULL,
  before_tokens   INTEGER,
  after_tokens    INTEGER,
  created_at      INTEGER NOT NULL
);
-- Rotations made before this table existed, from their post_compaction events.
INSERT OR IGNORE INTO session_rotations (session_id, from_session_id, kind, reason, before_tokens, after_tokens, created_at)
SELECT json_extract(e.payload, '$.session_id'), json_extract(e.payload, '$.old_session_id'), json_extract(e.payload, '$.kind'),
       json_extract(e.payload, '$.reason'), json_extract(e.payload, '$.before_tokens'), json_extract(e.payload, '$.after_tokens'), e.created_at
FROM hook_events e
WHERE e.hook = 'post_compaction' AND COALESCE(json_extract(e.payload, '$.old_session_id'), '') <> ''
  AND json_extract(e.payload, '$.session_id') IN (SELECT id FROM sessions);
