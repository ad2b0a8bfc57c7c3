package sessions_test

import (
	"context"
	"testing"

	"atrium/backend/apperr"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

func TestSeedWritesCountedSearchableSessionsAndFiresNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := sessionstest.New(t)
	var steps []int
	ids, err := e.Sessions.Seed(ctx, sessions.SeedParams{Count: 1500, Messages: 3}, func(done, total int) { steps = append(steps, done) })
	if err != nil || len(ids) != 1500 {
		t.Fatalf("seed = %d ids, %v", len(ids), err)
	}
	if len(steps) != 2 || steps[1] != 1500 {
		t.Fatalf("progress = %v", steps)
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM messages`); n != 4500 {
		t.Fatalf("messages = %d", n)
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM sessions WHERE message_count != 3 OR token_count = 0`); n != 0 {
		t.Fatalf("%d sessions with wrong counters", n)
	}
	page, err := e.Sessions.List(ctx, sessions.Filter{Limit: 2})
	if err != nil || page.Sessions[0].ID != ids[0] || page.Sessions[1].ID != ids[1] {
		t.Fatalf("list order does not start with the newest seeded ids: %+v", page.Sessions)
	}
	if hits, err := e.Sessions.Search(ctx, "kernel", sessions.SearchOptions{Limit: 5}); err != nil || len(hits) != 5 {
		t.Fatalf("search = %d hits, %v", len(hits), err)
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM hook_events`); n != 0 {
		t.Fatalf("seeding fired %d events", n)
	}
	if _, err := e.Sessions.Seed(ctx, sessions.SeedParams{Count: 0}, nil); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("zero sessions: %v", err)
	}
}
