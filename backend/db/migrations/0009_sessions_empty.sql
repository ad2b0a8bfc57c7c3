-- The empty-session sweep looked for ended sessions without messages by
-- walking the list index over every unarchived session: 350 ms at 100,000
-- sessions, holding the writer. This index holds only those sessions (a
-- session gets no message once ended, so appends never touch it), in the
-- sweep's order. archived leads because the sweep asks for archived = 0:
-- without that equality the planner kept the list index.
CREATE INDEX sessions_empty ON sessions (archived, last_activity_at, id) WHERE message_count = 0 AND ended_at IS NOT NULL;
