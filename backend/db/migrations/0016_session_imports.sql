-- Sessions imported from another agent (the familiar Python agent's
-- state.db, Claude Code's and Codex's JSONL transcripts): where each came
-- from and how many of its messages were taken, so an import run again adds
-- only what is new and never makes a second copy. No foreign key to
-- sessions: a delete stays as cheap as it was, and a row whose session is
-- gone for good only means that importing again brings the session back.
CREATE TABLE IF NOT EXISTS session_imports (
  kind        TEXT    NOT NULL,
  source_key  TEXT    NOT NULL,
  session_id  TEXT    NOT NULL,
  path        TEXT    NOT NULL DEFAULT '',
  messages    INTEGER NOT NULL,
  imported_at INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (kind, source_key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS session_imports_session ON session_imports (session_id);
