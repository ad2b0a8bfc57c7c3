-- The gateway: which session each conversation of a chat platform is in
-- (session_key = <platform>:<chat_type>:<chat_id>[:<thread_id>]), the
-- replies waiting to be delivered (retried with backoff, never by running
-- the turn again), the inbound messages already taken (a platform that
-- redelivers one does not start a second turn), the senders refused, and
-- each adapter's state as the process running it last saw it.
CREATE TABLE gateway_routes (
  session_key TEXT    PRIMARY KEY,
  platform    TEXT    NOT NULL,
  session_id  TEXT    NOT NULL,
  updated_at  INTEGER NOT NULL
);
CREATE INDEX gateway_routes_session ON gateway_routes (session_id);

CREATE TABLE gateway_outbox (
  id          INTEGER PRIMARY KEY,
  platform    TEXT    NOT NULL,
  chat_id     TEXT    NOT NULL,
  thread_id   TEXT    NOT NULL DEFAULT '',
  reply_to    TEXT    NOT NULL DEFAULT '',
  text        TEXT    NOT NULL,
  session_id  TEXT    NOT NULL DEFAULT '',
  origin      TEXT    NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL,
  next_at     INTEGER NOT NULL,
  deadline    INTEGER NOT NULL,
  attempts    INTEGER NOT NULL DEFAULT 0,
  last_error  TEXT    NOT NULL DEFAULT '',
  state       TEXT    NOT NULL DEFAULT 'pending', -- pending, sent, failed
  sent_at     INTEGER,
  message_id  TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX gateway_outbox_due ON gateway_outbox (platform, next_at) WHERE state = 'pending';

CREATE TABLE gateway_inbound (
  platform   TEXT    NOT NULL,
  event_id   TEXT    NOT NULL,
  seen_at    INTEGER NOT NULL,
  PRIMARY KEY (platform, event_id)
);

CREATE TABLE gateway_refusals (
  platform   TEXT    NOT NULL,
  user_id    TEXT    NOT NULL,
  user_name  TEXT    NOT NULL DEFAULT '',
  chat_id    TEXT    NOT NULL DEFAULT '',
  first_at   INTEGER NOT NULL,
  last_at    INTEGER NOT NULL,
  count      INTEGER NOT NULL DEFAULT 1,
  PRIMARY KEY (platform, user_id)
);

CREATE TABLE gateway_status (
  platform      TEXT    PRIMARY KEY,
  state         TEXT    NOT NULL,       -- starting, connected, retrying, stopped, disabled
  detail        TEXT    NOT NULL DEFAULT '',
  last_error    TEXT    NOT NULL DEFAULT '',
  last_error_at INTEGER,
  received      INTEGER NOT NULL DEFAULT 0,
  sent          INTEGER NOT NULL DEFAULT 0,
  pid           INTEGER NOT NULL DEFAULT 0,
  process       TEXT    NOT NULL DEFAULT '',
  updated_at    INTEGER NOT NULL
);

-- Cron: scheduled prompts. last_tick is the scheduled time last claimed (a
-- host claims a tick by moving it forward in one statement, so two hosts
-- never run the same tick, and a run missed while no host ran is run once).
CREATE TABLE cron_jobs (
  name            TEXT    PRIMARY KEY,
  schedule        TEXT    NOT NULL,
  timezone        TEXT    NOT NULL,
  prompt          TEXT    NOT NULL,
  deliver         TEXT    NOT NULL DEFAULT '',
  paused          INTEGER NOT NULL DEFAULT 0,
  created_at      INTEGER NOT NULL,
  last_tick       INTEGER,
  last_run_at     INTEGER,
  last_session_id TEXT    NOT NULL DEFAULT '',
  last_status     TEXT    NOT NULL DEFAULT '',
  last_error      TEXT    NOT NULL DEFAULT '',
  runs            INTEGER NOT NULL DEFAULT 0
);
