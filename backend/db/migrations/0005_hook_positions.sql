-- Delivery from positions (issue #11). Each subscriber of observer hooks (a
-- plugin) has one row: the hooks it takes, the last seq it handled (its
-- position), the highest seq handed to it and not recorded when its last
-- deliverer let it go (inflight: the next one redelivers (position,
-- inflight] flagged; after a crash, up to the head of the log), and the one
-- process delivering to it now (claimed_by, a processes.id). Events are no
-- longer claimed one by one.
CREATE TABLE hook_subscribers (
  name        TEXT    PRIMARY KEY,
  hooks       TEXT    NOT NULL DEFAULT '[]',
  position    INTEGER NOT NULL DEFAULT 0,
  inflight    INTEGER NOT NULL DEFAULT 0,
  claimed_by  TEXT    NOT NULL DEFAULT '',
  active      INTEGER NOT NULL DEFAULT 1,
  last_error  TEXT    NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
) WITHOUT ROWID;

-- A store written by an older Atrium: every subscriber that ever took an
-- event continues from the first event not yet delivered to everyone; what
-- it may have had already comes flagged as a redelivery.
INSERT INTO hook_subscribers (name, hooks, position, inflight, created_at, updated_at)
SELECT d.subscriber, json_group_array(DISTINCT e.hook),
       COALESCE((SELECT MIN(seq) - 1 FROM hook_events WHERE delivered_at IS NULL), (SELECT COALESCE(MAX(seq), 0) FROM hook_events)),
       (SELECT COALESCE(MAX(seq), 0) FROM hook_events),
       CAST(strftime('%s', 'now') AS INTEGER) * 1000, CAST(strftime('%s', 'now') AS INTEGER) * 1000
FROM hook_deliveries d JOIN hook_events e ON e.seq = d.seq
GROUP BY d.subscriber;

ALTER TABLE hook_events DROP COLUMN claimed_by;

-- rev: bumped whenever an event's deliveries change, so the activity feed
-- (Bus.Tail) finds new and changed events without scanning the log.
ALTER TABLE hook_events ADD COLUMN rev INTEGER NOT NULL DEFAULT 0;
CREATE INDEX hook_events_rev ON hook_events (rev);

-- A process's start time (clock ticks since boot) next to its pid, so a pid
-- reused by another program never passes for a live Atrium process.
ALTER TABLE processes ADD COLUMN start TEXT NOT NULL DEFAULT '';
