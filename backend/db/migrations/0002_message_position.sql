-- A message's place in its transcript. NULL means "its id", which is right
-- for every appended message; a compaction summary takes the place of the
-- first message it replaces, so transcripts read ORDER BY COALESCE(pos, id).
ALTER TABLE messages ADD COLUMN pos REAL;
