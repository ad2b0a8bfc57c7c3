-- A file a reply carries (the agent's MEDIA:<path> tag), as JSON: {"path",
-- "name", "kind", "size"}; one row per file, sent after the reply's text.
-- The file is read when the row is sent. '' for a message of text alone,
-- and for every row written before.
ALTER TABLE gateway_outbox ADD COLUMN file TEXT NOT NULL DEFAULT '';
