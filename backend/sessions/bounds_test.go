package sessions_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

func TestHostileInputIsBoundedAndNotEchoedWhole(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	ctx := context.Background()
	long := strings.Repeat("x/", 5000) // 10 KB, invalid
	for name, err := range map[string]error{
		"id": sessions.ValidateID(long),
		"search": func() error {
			_, err := e.Sessions.Search(ctx, strings.Repeat("word ", 2000), sessions.SearchOptions{})
			return err
		}(),
		"words": func() error {
			_, err := e.Sessions.Search(ctx, strings.Repeat("w ", 40), sessions.SearchOptions{})
			return err
		}(),
		"cursor": func() error { _, err := e.Sessions.List(ctx, sessions.Filter{Cursor: long}); return err }(),
	} {
		if apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("%s: %v, want invalid", name, err)
			continue
		}
		if len(err.Error()) > 300 {
			t.Errorf("%s: a %d-byte error echoes the input: %.120s", name, len(err.Error()), err)
		}
	}
	if err := sessions.ValidateID(long); !strings.Contains(err.Error(), "(10000 bytes)") {
		t.Errorf("the error does not say how long the id was: %v", err)
	}

	// A search that runs past its bound is interrupted and says so.
	e.MustCreate(t, sessions.CreateParams{Title: "deploy on fridays"})
	slow := sessions.NewService(e.DB, e.Bus, sessions.Options{SearchTimeout: time.Nanosecond})
	if _, err := slow.Search(ctx, "deploy", sessions.SearchOptions{}); apperr.CodeOf(err) != apperr.Rejected || !strings.Contains(err.Error(), "the limit") {
		t.Fatalf("a search past its time bound: %v", err)
	}
	if hits, err := e.Sessions.Search(ctx, "deploy", sessions.SearchOptions{}); err != nil || len(hits) != 1 {
		t.Fatalf("a normal search: %v %v", hits, err)
	}
}
