-- 1 for a message the model wrote (a turn's answer, a scheduled run's, its
-- send_message): Markdown, which an adapter writes in its platform's markup
-- (Telegram's HTML, Slack's mrkdwn). 0 for Atrium's own words (progress,
-- approvals, questions, refusals, command output), sent as they are, and
-- for every row written before.
ALTER TABLE gateway_outbox ADD COLUMN markdown INTEGER NOT NULL DEFAULT 0;
