-- Sessions. pk is the stable integer rowid the title index points at; id is
-- the public, time-ordered id (UUIDv7) everything else uses.
CREATE TABLE sessions (
  pk                INTEGER PRIMARY KEY,
  id                TEXT    NOT NULL UNIQUE,
  source            TEXT    NOT NULL,
  title             TEXT    NOT NULL DEFAULT '',
  profile           TEXT    NOT NULL,
  parent_session_id TEXT    REFERENCES sessions(id) ON DELETE SET NULL,
  relation          TEXT    NOT NULL DEFAULT ''
                    CHECK (relation IN ('', 'delegate', 'branch', 'compression')),
  started_at        INTEGER NOT NULL,
  ended_at          INTEGER,
  end_reason        TEXT    NOT NULL DEFAULT '',
  last_activity_at  INTEGER NOT NULL,
  archived          INTEGER NOT NULL DEFAULT 0,
  archived_at       INTEGER,
  archived_by       TEXT    NOT NULL DEFAULT '',
  pinned            INTEGER NOT NULL DEFAULT 0,
  message_count     INTEGER NOT NULL DEFAULT 0,
  token_count       INTEGER NOT NULL DEFAULT 0
);
-- The list page: newest activity first, keyset-paged on (last_activity_at, id).
CREATE INDEX sessions_list ON sessions (archived, last_activity_at DESC, id DESC);
CREATE INDEX sessions_parent ON sessions (parent_session_id) WHERE parent_session_id IS NOT NULL;
-- Retention and sweeps scan ended sessions by age.
CREATE INDEX sessions_ended ON sessions (last_activity_at) WHERE ended_at IS NOT NULL;

CREATE TABLE messages (
  id            INTEGER PRIMARY KEY,
  session_id    TEXT    NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  role          TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
  content       TEXT    NOT NULL,
  sent_content  TEXT,
  tool_name     TEXT    NOT NULL DEFAULT '',
  tool_call_id  TEXT    NOT NULL DEFAULT '',
  token_count   INTEGER NOT NULL DEFAULT 0,
  created_at    INTEGER NOT NULL,
  active        INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX messages_session ON messages (session_id, id);

-- Full-text search. Contentless tables with contentless_delete=1: the text
-- lives once, in messages/sessions; a delete removes index entries by rowid
-- without re-tokenising the old text, which keeps bulk deletes cheap.
CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN
  INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content);
END;
CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
  DELETE FROM messages_fts WHERE rowid = old.id;
END;
CREATE TRIGGER messages_fts_au AFTER UPDATE OF content ON messages BEGIN
  DELETE FROM messages_fts WHERE rowid = old.id;
  INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content);
END;

CREATE VIRTUAL TABLE sessions_fts USING fts5(title, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2');
CREATE TRIGGER sessions_fts_ai AFTER INSERT ON sessions WHEN new.title <> '' BEGIN
  INSERT INTO sessions_fts (rowid, title) VALUES (new.pk, new.title);
END;
CREATE TRIGGER sessions_fts_ad AFTER DELETE ON sessions WHEN old.title <> '' BEGIN
  DELETE FROM sessions_fts WHERE rowid = old.pk;
END;
CREATE TRIGGER sessions_fts_au AFTER UPDATE OF title ON sessions BEGIN
  DELETE FROM sessions_fts WHERE rowid = old.pk;
  INSERT INTO sessions_fts (rowid, title) SELECT new.pk, new.title WHERE new.title <> '';
END;

-- The durable hook event log: written in the transaction of the change it
-- reports, delivered after commit by the process named in claimed_by.
CREATE TABLE hook_events (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  event_id     TEXT    NOT NULL UNIQUE,
  hook         TEXT    NOT NULL,
  payload      TEXT    NOT NULL,
  created_at   INTEGER NOT NULL,
  claimed_by   TEXT    NOT NULL DEFAULT '',
  delivered_at INTEGER,
  redelivered  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX hook_events_pending ON hook_events (seq) WHERE delivered_at IS NULL;
CREATE INDEX hook_events_hook ON hook_events (hook, seq);
CREATE INDEX hook_events_delivered ON hook_events (delivered_at) WHERE delivered_at IS NOT NULL;

-- One row per (event, subscriber) once that subscriber was handed the event.
CREATE TABLE hook_deliveries (
  seq          INTEGER NOT NULL REFERENCES hook_events (seq) ON DELETE CASCADE,
  subscriber   TEXT    NOT NULL,
  status       TEXT    NOT NULL CHECK (status IN ('ok', 'failed', 'timeout')),
  error        TEXT    NOT NULL DEFAULT '',
  redelivery   INTEGER NOT NULL DEFAULT 0,
  delivered_at INTEGER NOT NULL,
  duration_us  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (seq, subscriber)
) WITHOUT ROWID;

-- Live Atrium processes; an event whose claimer is gone is redelivered.
CREATE TABLE processes (
  id           TEXT    PRIMARY KEY,
  host         TEXT    NOT NULL,
  pid          INTEGER NOT NULL,
  started_at   INTEGER NOT NULL,
  heartbeat_at INTEGER NOT NULL
);

-- Idempotent runtime receipts for desktop and dashboard deletes and archives.
CREATE TABLE receipts (
  request_id  TEXT    PRIMARY KEY,
  op          TEXT    NOT NULL,
  fingerprint TEXT    NOT NULL,
  result      TEXT    NOT NULL,
  created_at  INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL
);
CREATE INDEX receipts_expiry ON receipts (expires_at);

-- Throttle for automatic maintenance: one run per task per day across processes.
CREATE TABLE maintenance_runs (
  task        TEXT    PRIMARY KEY,
  last_run_at INTEGER NOT NULL
);

-- Journal of cross-profile moves, so an interrupted move can be finished.
CREATE TABLE profile_moves (
  id          TEXT    PRIMARY KEY,
  to_profile  TEXT    NOT NULL,
  session_ids TEXT    NOT NULL,
  created_at  INTEGER NOT NULL
);
