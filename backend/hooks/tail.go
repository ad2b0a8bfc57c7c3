package hooks

import (
	"context"
	"fmt"

	"atrium/backend/db"
)

// TailCursor is where a reader of the activity feed stands: the newest
// event it saw and the newest change to an event's deliveries.
type TailCursor struct {
	Seq int64 `json:"seq"`
	Rev int64 `json:"rev"`
}

// TailStart is a cursor at the present: Tail from it returns only what
// happens next.
func (b *Bus) TailStart(ctx context.Context) (TailCursor, error) {
	var c TailCursor
	err := b.db.Read.WithContext(ctx).Raw(`SELECT COALESCE((SELECT MAX(seq) FROM hook_events), 0) AS seq,
		COALESCE((SELECT MAX(rev) FROM hook_events WHERE rev > 0), 0) AS rev`).Scan(&c).Error
	if err != nil {
		return c, fmt.Errorf("read the hook log's head: %w", err)
	}
	return c, nil
}

// Tail returns the events committed after the cursor and those whose
// deliveries changed since (whichever process committed or delivered
// them), oldest first, at most limit (default 500), and the cursor to pass
// next. It is the activity feed of the window and the dashboard.
func (b *Bus) Tail(ctx context.Context, from TailCursor, limit int) ([]LoggedEvent, TailCursor, error) {
	if limit <= 0 {
		limit = 500
	}
	evs, err := readEvents(ctx, b.db, tailQuery+db.Limit(limit), from.Seq, from.Rev)
	if err != nil {
		return nil, from, err
	}
	next := from
	for _, e := range evs {
		next.Seq = max(next.Seq, e.Seq)
		next.Rev = max(next.Rev, e.Rev)
	}
	if len(evs) == limit {
		// A full page: the rest comes next time, from the last seq read.
		next.Rev = from.Rev
	}
	return evs, next, nil
}

// tailQuery reads the feed's page: the new events by their seq, the changed
// ones through hook_events_rev (which holds only rev > 0; a cursor's Rev is
// never negative), each side on its own index (UNION ALL: IN drops an event
// found by both). Written as one OR, or with UNION (which SQLite merges in
// seq order), the planner walked the whole log at every poll.
const tailQuery = `SELECT seq, event_id, hook, payload, created_at, delivered_at, redelivered, rev FROM hook_events
	WHERE seq IN (SELECT seq FROM hook_events WHERE seq > ? UNION ALL SELECT seq FROM hook_events WHERE rev > ? AND rev > 0)
	ORDER BY seq`
