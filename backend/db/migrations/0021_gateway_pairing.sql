-- DM pairing, as the familiar gateway pairs: a person it does not know who
-- writes to the bot in a DM is given a one-time code; the owner approves
-- it (atrium pairing approve PLATFORM CODE, or by the request's id from
-- the window) and the person is let in. Only a salted SHA-256 of a code is
-- kept; a request lasts an hour.
CREATE TABLE gateway_pairing_requests (
  id         TEXT    PRIMARY KEY, -- 16 hex digits, never the code
  platform   TEXT    NOT NULL,
  user_id    TEXT    NOT NULL,
  user_name  TEXT    NOT NULL DEFAULT '',
  chat_id    TEXT    NOT NULL DEFAULT '',
  code_hash  TEXT    NOT NULL,
  salt       TEXT    NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX gateway_pairing_requests_platform ON gateway_pairing_requests (platform, created_at);

-- The people pairing let in, per platform.
CREATE TABLE gateway_paired (
  platform    TEXT    NOT NULL,
  user_id     TEXT    NOT NULL,
  user_name   TEXT    NOT NULL DEFAULT '',
  approved_at INTEGER NOT NULL,
  PRIMARY KEY (platform, user_id)
) WITHOUT ROWID;

-- Pairing's limits: when a person last asked for a code (platform, user),
-- and per platform the failed approvals in a row and the end of a lockout
-- (user_id '' with kind 'failures' or 'lockout').
CREATE TABLE gateway_pairing_limits (
  platform TEXT    NOT NULL,
  kind     TEXT    NOT NULL CHECK (kind IN ('asked', 'failures', 'lockout')),
  user_id  TEXT    NOT NULL DEFAULT '',
  value    INTEGER NOT NULL,
  PRIMARY KEY (platform, kind, user_id)
) WITHOUT ROWID;
