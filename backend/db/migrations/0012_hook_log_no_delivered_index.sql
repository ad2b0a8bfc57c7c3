-- hook_events_delivered served only the prune (delivered events older than
-- the retention), and every event entered it once delivered: a page at the
-- commit of each event that no plugin takes (delivered at birth), and one
-- more in the recording of each that a plugin took. The prune now walks the
-- log by seq up to the newest event created before its cutoff (a delivery
-- comes after its event), which is what it removes.
DROP INDEX hook_events_delivered;
