-- A delivery whose receiver is elsewhere (an outbound webhook) can fail and
-- be tried again for hours: each failed attempt is recorded as the
-- (event, subscriber) row with status 'retrying' (its error says which
-- attempt and when the next comes), replaced by the final outcome. The
-- status CHECK is in the table's definition, so the table is rebuilt.
CREATE TABLE hook_deliveries_new (
  seq          INTEGER NOT NULL REFERENCES hook_events (seq) ON DELETE CASCADE,
  subscriber   TEXT    NOT NULL,
  status       TEXT    NOT NULL CHECK (status IN ('ok', 'failed', 'timeout', 'retrying')),
  error        TEXT    NOT NULL DEFAULT '',
  redelivery   INTEGER NOT NULL DEFAULT 0,
  delivered_at INTEGER NOT NULL,
  duration_us  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (seq, subscriber)
) WITHOUT ROWID;
INSERT INTO hook_deliveries_new (seq, subscriber, status, error, redelivery, delivered_at, duration_us)
SELECT seq, subscriber, status, error, redelivery, delivered_at, duration_us FROM hook_deliveries;
DROP TABLE hook_deliveries;
ALTER TABLE hook_deliveries_new RENAME TO hook_deliveries;
