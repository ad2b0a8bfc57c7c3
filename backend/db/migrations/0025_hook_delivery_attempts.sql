-- A receiver elsewhere (an outbound webhook) is tried again for hours: its
-- attempts so far and when the next may be made are kept on the (event,
-- subscriber) row, so a process started again goes on where the last left
-- off (the attempt's number, its backoff) instead of from the first. The
-- final outcome keeps the count. 0 for every row written before.
ALTER TABLE hook_deliveries ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hook_deliveries ADD COLUMN next_at INTEGER NOT NULL DEFAULT 0;
