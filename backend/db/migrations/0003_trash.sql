-- The trash: a user delete moves rows here (trashed_at set) in its one
-- transaction; they are hidden from every list and search, keep their
-- messages and sidecar files, and are purged after sessions.trash_days.
-- trash_batch groups the rows one operation moved (the request id, so a
-- request can be undone as a whole); trash_reported says on_session_delete
-- already told plugins about the row, so a purge never reports it twice.
ALTER TABLE sessions ADD COLUMN trashed_at INTEGER;
ALTER TABLE sessions ADD COLUMN trash_batch TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN trash_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN trash_reported INTEGER NOT NULL DEFAULT 0;
-- Where a session came from on a chat platform (issue #13 fills them; local
-- sessions keep '').
ALTER TABLE sessions ADD COLUMN platform TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN sender_id TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN sender_name TEXT NOT NULL DEFAULT '';

-- The list pages only what is not in the trash; the trash view pages by
-- deletion time.
DROP INDEX sessions_list;
CREATE INDEX sessions_list ON sessions (archived, last_activity_at DESC, id DESC) WHERE trashed_at IS NULL;
CREATE INDEX sessions_trash ON sessions (trashed_at DESC, id DESC) WHERE trashed_at IS NOT NULL;
CREATE INDEX sessions_trash_batch ON sessions (trash_batch) WHERE trash_batch <> '';
