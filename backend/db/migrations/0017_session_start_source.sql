-- Why a session's next turn begins its context anew, until that turn is
-- stored: 'clear' for a session /new started, 'compact' for one a
-- compaction just rewrote (or continued into), '' otherwise (a session's
-- first turn is its 'startup'). Claude Code's SessionStart hooks match on
-- it. Read and written by id only; no index and no trigger.
ALTER TABLE sessions ADD COLUMN start_source TEXT NOT NULL DEFAULT '';
