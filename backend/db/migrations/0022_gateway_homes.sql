-- A platform's home channel as a chat's /sethome set it: where the gateway
-- speaks first (a scheduled job delivering to the bare platform name). It
-- wins over gateway.<platform>.home_channel and <PLATFORM>_HOME_CHANNEL.
CREATE TABLE gateway_homes (
  platform  TEXT    PRIMARY KEY,
  chat_id   TEXT    NOT NULL,
  thread_id TEXT    NOT NULL DEFAULT '',
  set_by    TEXT    NOT NULL DEFAULT '',
  set_at    INTEGER NOT NULL
) WITHOUT ROWID;
