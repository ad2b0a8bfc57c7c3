-- The buttons under a message to a chat (a Telegram inline keyboard: an
-- approval's Allow once / Session / Always / Deny), as JSON: rows of
-- {"label", "data"}. '' for a message without buttons, and for every row
-- written before.
ALTER TABLE gateway_outbox ADD COLUMN buttons TEXT NOT NULL DEFAULT '';
