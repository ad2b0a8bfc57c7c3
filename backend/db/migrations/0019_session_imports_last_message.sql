-- The last message an import wrote into its session. A session continued
-- here since (its own turns after the imported messages) no longer takes
-- the source's new messages after them, which would splice two agents'
-- continuations of one conversation into one transcript; it is left as it
-- is and said to be so. 0 for the rows of earlier imports: their next
-- import that adds messages writes it.
ALTER TABLE session_imports ADD COLUMN last_message INTEGER NOT NULL DEFAULT 0;
