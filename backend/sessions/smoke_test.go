package sessions_test

import (
	"context"
	"testing"

	"atrium/backend/hooks"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

func TestSmokeDeleteFiresOnce(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "alpha"})
	e.MustAppend(t, a.ID, 3)
	res, err := e.Sessions.Delete(context.Background(), []string{a.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionDelete: 1, "*": 0})
	if len(res.AffectedIDs) != 1 || e.Exists(t, a.ID) {
		t.Fatalf("res=%+v", res)
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM messages`); n != 0 {
		t.Fatalf("messages left: %d", n)
	}
}
