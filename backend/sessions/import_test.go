package sessions_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"atrium/backend/apperr"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

func TestImportChecksWhatItCannotMendAndMendsTheRest(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	one := func(mod func(*sessions.Imported)) sessions.Imported {
		it := sessions.Imported{Origin: sessions.Origin{Kind: sessions.ImportClaude, Key: "k1"}, StartedAt: at,
			Messages: []sessions.ImportedMessage{{Role: "user", Content: "hi", CreatedAt: at}}}
		mod(&it)
		return it
	}
	// Refused, and nothing written: an unknown kind, a missing key, a role
	// the store does not keep, a relation it does not know.
	for name, bad := range map[string]sessions.Imported{
		"kind":     one(func(it *sessions.Imported) { it.Origin.Kind = "openclaw" }),
		"key":      one(func(it *sessions.Imported) { it.Origin.Key = "" }),
		"role":     one(func(it *sessions.Imported) { it.Messages[0].Role = "developer" }),
		"relation": one(func(it *sessions.Imported) { it.ParentKey, it.Relation = "p", "fork" }),
		"source":   one(func(it *sessions.Imported) { it.Source = "slack" }),
	} {
		good := one(func(it *sessions.Imported) { it.Origin.Key = "fine" })
		if _, err := e.Sessions.Import(ctx, []sessions.Imported{good, bad}, sessions.ImportOptions{}); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("%s: %v", name, err)
		}
		if e.Exists(t, "fine") {
			t.Fatalf("%s: a refused import wrote the good session beside it", name)
		}
	}

	// Mended: a key that is not an id gets one of its own, a title is one
	// clean line within the limit, a platform that is not a name is
	// dropped, messages without a time take the one before.
	long := strings.Repeat("word ", 100)
	res, err := e.Sessions.Import(ctx, []sessions.Imported{one(func(it *sessions.Imported) {
		it.Origin.Key = "/home/u/.claude/projects/x/../y.jsonl"
		it.Title = "\n\n  first\tline \x07here  \nsecond"
		it.Platform = "not a platform!"
		it.Messages = append(it.Messages, sessions.ImportedMessage{Role: "assistant", Content: "no time"})
	}), one(func(it *sessions.Imported) { it.Origin.Key = "long"; it.Title = long })}, sessions.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Outcomes[0].ID
	if id != sessions.ImportID(sessions.ImportClaude, "/home/u/.claude/projects/x/../y.jsonl") || !strings.HasPrefix(id, "claude-code-") || sessions.ValidateID(id) != nil {
		t.Fatalf("derived id %q", id)
	}
	s, err := e.Sessions.Get(ctx, id)
	if err != nil || s.Title != "first line here" || s.Platform != "" {
		t.Fatalf("mended session %+v %v", s, err)
	}
	msgs, _ := e.Sessions.Messages(ctx, id, true)
	if len(msgs) != 2 || !msgs[1].CreatedAt.Equal(at) {
		t.Fatalf("messages %+v", msgs)
	}
	l, _ := e.Sessions.Get(ctx, "long")
	if n := utf8.RuneCountInString(l.Title); n > 300 || !strings.HasSuffix(l.Title, "…") {
		t.Fatalf("long title (%d runes) %q", n, l.Title)
	}
	// A parent the store does not have: imported without the link, said.
	res, err = e.Sessions.Import(ctx, []sessions.Imported{one(func(it *sessions.Imported) {
		it.Origin.Key, it.ParentKey, it.Relation = "orphan", "gone", sessions.RelationDelegate
	})}, sessions.ImportOptions{})
	if err != nil || res.Outcomes[0].Status != sessions.ImportStatusImported || !strings.Contains(res.Outcomes[0].Note, "its parent gone is not in the store") {
		t.Fatalf("orphan %+v %v", res, err)
	}
	if o, _ := e.Sessions.Get(ctx, "orphan"); o.ParentSessionID != nil || o.Relation != "" {
		t.Fatalf("orphan kept a link: %+v", o)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{})
}
