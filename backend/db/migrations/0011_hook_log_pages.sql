-- Ending a session wrote ten pages to the WAL at its commit, more than half of them
-- for its on_session_finalize event row, and every event row (a delete, an
-- archive, each hook fired) paid the same. Three of those pages kept
-- bookkeeping that no reader needed at insert time:
--   * AUTOINCREMENT rewrote the sqlite_sequence row at every insert. What it
--     guarded, that a seq is never given twice (subscribers' positions and
--     the activity feed's cursors are seqs), is now hook_seq: at or past
--     every seq the log ever let go of, read (not written) by each insert
--     and raised by the prune. It starts at the old AUTOINCREMENT counter.
--   * event_id's UNIQUE index: no query looks an event up by its id, and
--     ids are UUIDv7s made by the bus.
--   * hook_events_rev held every event, all at rev 0 until a delivery was
--     recorded; the activity feed and nextRev only ever ask for rev > 0.
-- hook_deliveries refers to hook_events, so it is rebuilt around it
-- (dropping the old log with it still attached would cascade-delete it).
CREATE TABLE hook_seq (
  id    INTEGER PRIMARY KEY CHECK (id = 1),
  floor INTEGER NOT NULL
);
INSERT INTO hook_seq (id, floor)
SELECT 1, max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'hook_events'), 0),
              COALESCE((SELECT MAX(seq) FROM hook_events), 0));

CREATE TABLE hook_events_new (
  seq          INTEGER PRIMARY KEY,
  event_id     TEXT    NOT NULL,
  hook         TEXT    NOT NULL,
  payload      TEXT    NOT NULL,
  created_at   INTEGER NOT NULL,
  delivered_at INTEGER,
  redelivered  INTEGER NOT NULL DEFAULT 0,
  rev          INTEGER NOT NULL DEFAULT 0
);
INSERT INTO hook_events_new (seq, event_id, hook, payload, created_at, delivered_at, redelivered, rev)
SELECT seq, event_id, hook, payload, created_at, delivered_at, redelivered, rev FROM hook_events;

CREATE TABLE hook_deliveries_new (
  seq          INTEGER NOT NULL REFERENCES hook_events_new (seq) ON DELETE CASCADE,
  subscriber   TEXT    NOT NULL,
  status       TEXT    NOT NULL CHECK (status IN ('ok', 'failed', 'timeout')),
  error        TEXT    NOT NULL DEFAULT '',
  redelivery   INTEGER NOT NULL DEFAULT 0,
  delivered_at INTEGER NOT NULL,
  duration_us  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (seq, subscriber)
) WITHOUT ROWID;
INSERT INTO hook_deliveries_new (seq, subscriber, status, error, redelivery, delivered_at, duration_us)
SELECT seq, subscriber, status, error, redelivery, delivered_at, duration_us FROM hook_deliveries
WHERE seq IN (SELECT seq FROM hook_events_new);

DROP TABLE hook_deliveries;
DROP TABLE hook_events;
-- Renaming the log also points hook_deliveries_new's reference at its new name.
ALTER TABLE hook_events_new RENAME TO hook_events;
ALTER TABLE hook_deliveries_new RENAME TO hook_deliveries;

CREATE INDEX hook_events_pending ON hook_events (seq) WHERE delivered_at IS NULL;
CREATE INDEX hook_events_hook ON hook_events (hook, seq);
CREATE INDEX hook_events_delivered ON hook_events (delivered_at) WHERE delivered_at IS NOT NULL;
CREATE INDEX hook_events_rev ON hook_events (rev) WHERE rev > 0;
