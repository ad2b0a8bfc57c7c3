package sessions_test

import (
	"testing"

	"atrium/backend/apperr"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

// Undo takes back the last exchanges from the active transcript in one
// transaction (the messages stay, inactive; the counters follow), fires no
// hook, and refuses a session with nothing of the person's, an ended one
// and one in the trash. Spoken remembers a first exchange taken back.
func TestUndoTakesBackExchanges(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	s := e.MustCreate(t, sessions.CreateParams{Title: "undo"})
	if spoken, err := e.Sessions.Spoken(ctx, s.ID); err != nil || spoken {
		t.Fatalf("spoken before anything: %v %v", spoken, err)
	}
	for _, m := range []sessions.NewMessage{{Role: "system", Content: "prompt"}, {Role: "user", Content: "one"}, {Role: "assistant", Content: "1"},
		{Role: "user", Content: "two"}, {Role: "assistant", Content: "2"}, {Role: "tool", Content: "t", ToolName: "echo", ToolCallID: "c1"}} {
		if _, err := e.Sessions.AppendMessage(ctx, s.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	e.Rec.Reset()
	u, err := e.Sessions.Undo(ctx, s.ID, 1)
	if err != nil || u != (sessions.Undone{Exchanges: 1, Messages: 3, LastText: "two"}) {
		t.Fatalf("undo 1: %+v %v", u, err)
	}
	cur, _ := e.Sessions.Get(ctx, s.ID)
	active, _ := e.Sessions.Messages(ctx, s.ID, false)
	all, _ := e.Sessions.Messages(ctx, s.ID, true)
	if cur.MessageCount != 3 || len(active) != 3 || len(all) != 6 || active[2].Content != "1" {
		t.Fatalf("after undo: count %d, %d active of %d", cur.MessageCount, len(active), len(all))
	}
	if u, err := e.Sessions.Undo(ctx, s.ID, 9); err != nil || u.Exchanges != 1 || u.Messages != 2 || u.LastText != "one" {
		t.Fatalf("undo 9: %+v %v", u, err)
	}
	if _, err := e.Sessions.Undo(ctx, s.ID, 1); apperr.CodeOf(err) != apperr.Rejected {
		t.Fatalf("nothing left: %v", err)
	}
	if spoken, err := e.Sessions.Spoken(ctx, s.ID); err != nil || !spoken {
		t.Fatalf("spoken after undo: %v %v", spoken, err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
	if _, err := e.Sessions.Undo(ctx, s.ID, 0); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("undo 0: %v", err)
	}
	if _, err := e.Sessions.Undo(ctx, "not/an-id", 1); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("a bad id: %v", err)
	}
	ended := e.MustCreate(t, sessions.CreateParams{Title: "ended"})
	e.MustAppend(t, ended.ID, 2)
	if _, _, err := e.Sessions.End(ctx, ended.ID, "exit"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Sessions.Undo(ctx, ended.ID, 1); apperr.CodeOf(err) != apperr.Rejected {
		t.Fatalf("an ended session: %v", err)
	}
}

// BenchmarkUndo is /undo's store work on a session of 20 messages: an
// exchange appended (two messages, each in its own transaction, as a turn
// stores them) and taken back, beside the same exchange appended alone:
//
//	go test -tags sqlite_fts5 -run '^$' -bench BenchmarkUndo -benchtime 2000x ./backend/sessions/
func BenchmarkUndo(b *testing.B) {
	e := sessionstest.New(b)
	session := func(b *testing.B) string {
		s := e.MustCreate(b, sessions.CreateParams{Title: "bench"})
		e.MustAppend(b, s.ID, 20)
		return s.ID
	}
	exchange := func(b *testing.B, id string) {
		for _, m := range []sessions.NewMessage{{Role: "user", Content: "a question of some length for the index"},
			{Role: "assistant", Content: "an answer of some length for the index too"}} {
			if _, err := e.Sessions.AppendMessage(ctx, id, m); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("exchange", func(b *testing.B) {
		id := session(b)
		for b.Loop() {
			exchange(b, id)
		}
	})
	b.Run("exchange-undone", func(b *testing.B) {
		id := session(b)
		for b.Loop() {
			exchange(b, id)
			if _, err := e.Sessions.Undo(ctx, id, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
}
