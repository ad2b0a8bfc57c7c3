-- The search index's tail: a new message is no longer queued in
-- fts_pending (a row of its own, one more page in every append's commit);
-- every message above fts_mark.upto is simply not indexed yet, and the
-- indexer takes them in id order and moves the mark. fts_pending keeps what
-- the mark cannot tell: a message at or below the mark, which is an edited
-- one or a new one that got the id of a deleted message (SQLite hands out
-- max(id)+1, so deleting the newest messages gives their ids again).
CREATE TABLE fts_mark (
  one  INTEGER PRIMARY KEY CHECK (one = 1),
  upto INTEGER NOT NULL
);
-- Every message there is now is indexed or queued already.
INSERT INTO fts_mark (one, upto) VALUES (1, COALESCE((SELECT max(id) FROM messages), 0));

DROP TRIGGER messages_fts_ai;
DROP TRIGGER messages_fts_ad;
DROP TRIGGER messages_fts_au;
CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages WHEN new.id <= (SELECT upto FROM fts_mark) BEGIN
  INSERT OR IGNORE INTO fts_pending (id) VALUES (new.id);
END;
-- Above the mark a message was never indexed: nothing to undo. At or below
-- it, a queued one only leaves the queue; an indexed one is queued for
-- removal.
CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages WHEN old.id <= (SELECT upto FROM fts_mark) BEGIN
  INSERT OR IGNORE INTO fts_gone (id) SELECT old.id WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
  DELETE FROM fts_pending WHERE id = old.id;
END;
CREATE TRIGGER messages_fts_au AFTER UPDATE OF content ON messages WHEN old.id <= (SELECT upto FROM fts_mark) BEGIN
  INSERT OR IGNORE INTO fts_gone (id) SELECT old.id WHERE NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
  INSERT OR IGNORE INTO fts_pending (id) VALUES (new.id);
END;
