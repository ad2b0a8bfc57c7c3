-- The ids whose sidecar files (<id>.* and a folder <id> in the profile's
-- sessions/ folder) are still to be removed. A delete for good records its
-- ids here in its own transaction; a background task of the store removes
-- the files with one reading of the folder, and a later write of the store
-- clears the rows (backend/sessions/sidecars.go). Kept in the
-- store, not in memory, so a process that stops between the commit and the
-- removal (a crash, a kill) leaves the work to the next process that opens
-- the store instead of leaving a deleted conversation's files on disk.
CREATE TABLE sidecar_pending (id TEXT PRIMARY KEY) WITHOUT ROWID;
