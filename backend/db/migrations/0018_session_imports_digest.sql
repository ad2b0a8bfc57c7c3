-- What the messages taken from an imported session were, as a digest of
-- their roles, texts and tool calls in order: an import run again adds a
-- source's new messages only while the ones taken before are still the
-- same there. A conversation rewound or edited in the other agent since
-- (Gemini CLI's /rewind, a transcript written anew) is then left as
-- imported and said to be so, instead of gaining messages that follow
-- what it no longer holds. '' for the rows of earlier imports: their next
-- import writes it.
ALTER TABLE session_imports ADD COLUMN digest TEXT NOT NULL DEFAULT '';
