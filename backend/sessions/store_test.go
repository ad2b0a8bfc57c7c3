package sessions_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

var ctx = context.Background()

func TestCreateValidates(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	parent := e.MustCreate(t, sessions.CreateParams{Title: "p"})
	scenarios := []struct {
		name string
		p    sessions.CreateParams
		code apperr.Code
	}{
		{"unknown source", sessions.CreateParams{Source: "fax"}, apperr.Invalid},
		{"relation without parent", sessions.CreateParams{Relation: "branch"}, apperr.Invalid},
		{"parent without relation", sessions.CreateParams{ParentID: parent.ID}, apperr.Invalid},
		{"unknown relation", sessions.CreateParams{ParentID: parent.ID, Relation: "cousin"}, apperr.Invalid},
		{"missing parent", sessions.CreateParams{ParentID: "nope", Relation: "branch"}, apperr.NotFound},
		{"hostile id", sessions.CreateParams{ID: "../../etc/passwd"}, apperr.Invalid},
		{"duplicate id", sessions.CreateParams{ID: parent.ID}, apperr.Conflict},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			_, err := e.Sessions.Create(ctx, sc.p)
			if got := apperr.CodeOf(err); got != sc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, sc.code)
			}
		})
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM sessions`); n != 1 {
		t.Fatalf("rows = %d, want 1", n)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{"*": 0})
}

func TestValidateIDRefusesHostileIDs(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"", "..", "../x", "a/b", `a\b`, "a..b", ".hidden", "a\x00b", "a\nb", "a b", strings.Repeat("x", 129), "é"} {
		if err := sessions.ValidateID(id); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("ValidateID(%q) = %v, want invalid", id, err)
		}
	}
	for _, id := range []string{"01HZX", "abc-def_1.jsonl", strings.Repeat("x", 128)} {
		if err := sessions.ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q) = %v", id, err)
		}
	}
}

func TestAppendMessageCountersAndRefusals(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	s := e.MustCreate(t, sessions.CreateParams{Title: "t"})
	e.Clock.Advance(time.Minute)
	m, err := e.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "assistant", Content: "twelve chars"})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID == 0 || m.TokenCount != sessions.EstimateTokens("twelve chars") || !m.Active {
		t.Fatalf("message = %+v", m)
	}
	got, err := e.Sessions.Get(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.MessageCount != 1 || got.TokenCount != m.TokenCount || !got.LastActivityAt.Equal(e.Clock.Now()) {
		t.Fatalf("session = %+v", got)
	}
	if _, err := e.Sessions.AppendMessage(ctx, "missing", sessions.NewMessage{Role: "user", Content: "x"}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("missing session: %v", err)
	}
	if _, err := e.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "robot", Content: "x"}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("bad role: %v", err)
	}
	e.MustEnd(t, s.ID)
	if _, err := e.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: "x"}); apperr.CodeOf(err) != apperr.Rejected {
		t.Fatalf("ended session: %v", err)
	}
	if n := e.Count(t, `SELECT COUNT(*) FROM messages`); n != 1 {
		t.Fatalf("messages = %d, want 1 (refusals must insert nothing)", n)
	}
	_, changed, err := e.Sessions.End(ctx, s.ID, "again")
	if err != nil || changed {
		t.Fatalf("second end: changed=%v err=%v", changed, err)
	}
}

func TestListPagesNewestFirstWithFilters(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	var ids []string
	for i := 0; i < 7; i++ {
		src := "cli"
		if i%2 == 1 {
			src = "gateway"
		}
		s := e.MustCreate(t, sessions.CreateParams{Title: fmt.Sprint("s", i), Source: src})
		ids = append(ids, s.ID)
		e.Clock.Advance(time.Second)
	}
	// Same last-activity instant for two rows: the id breaks the tie.
	e.MustAppend(t, ids[0], 1)
	e.MustAppend(t, ids[1], 1)
	var seen []string
	cursor := ""
	for {
		p, err := e.Sessions.List(ctx, sessions.Filter{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Sessions {
			seen = append(seen, s.ID)
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	want := []string{ids[1], ids[0], ids[6], ids[5], ids[4], ids[3], ids[2]}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("order\n got %v\nwant %v", seen, want)
	}
	src := "gateway"
	p, err := e.Sessions.List(ctx, sessions.Filter{Rule: mustRule(t, map[string]string{"source": src})})
	if err != nil || len(p.Sessions) != 3 {
		t.Fatalf("source filter: %d, %v", len(p.Sessions), err)
	}
	if _, err := e.Sessions.Archive(ctx, []string{ids[2]}); err != nil {
		t.Fatal(err)
	}
	p, err = e.Sessions.List(ctx, sessions.Filter{Rule: sessions.Rule{Scope: sessions.ScopeArchived}})
	if err != nil || len(p.Sessions) != 1 || p.Sessions[0].ID != ids[2] {
		t.Fatalf("archived view: %+v %v", p.Sessions, err)
	}
	prof := "other"
	if p, _ := e.Sessions.List(ctx, sessions.Filter{Rule: mustRule(t, map[string]string{"profile": prof})}); len(p.Sessions) != 0 {
		t.Fatalf("profile filter returned %d", len(p.Sessions))
	}
	if _, err := e.Sessions.List(ctx, sessions.Filter{Cursor: "garbage!"}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("bad cursor: %v", err)
	}
}

func TestSearchTitlesAndMessages(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	a := e.MustCreate(t, sessions.CreateParams{Title: "Deploy checklist"})
	b := e.MustCreate(t, sessions.CreateParams{Title: "misc"})
	c := e.MustCreate(t, sessions.CreateParams{Title: "other"})
	for _, m := range []struct{ id, text string }{
		{b.ID, "we decided the deploy happens on Fridays"},
		{c.ID, "nothing relevant here"},
		{b.ID, "Kubernetes namespace is payments-prod"},
	} {
		if _, err := e.Sessions.AppendMessage(ctx, m.id, sessions.NewMessage{Role: "user", Content: m.text}); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := e.Sessions.Search(ctx, "deploy", sessions.SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].Session.ID != b.ID || hits[1].Session.ID != a.ID || !hits[1].InTitle || hits[0].MessageID == 0 {
		t.Fatalf("hits = %+v", hits)
	}
	// Prefix on the last word, all words required, FTS syntax taken literally.
	for q, want := range map[string]int{"kubern": 1, "deploy fridays": 1, "deploy nothing": 0, `payments-prod AND (" NEAR`: 0, "namespace OR": 0} {
		hits, err := e.Sessions.Search(ctx, q, sessions.SearchOptions{})
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		if len(hits) != want {
			t.Errorf("search %q: %d hits, want %d", q, len(hits), want)
		}
	}
	if _, err := e.Sessions.Search(ctx, "  ()  ", sessions.SearchOptions{}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("empty query: %v", err)
	}
	// Deleted sessions vanish from the index.
	if _, err := e.Sessions.Delete(ctx, []string{b.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if hits, _ := e.Sessions.Search(ctx, "kubernetes", sessions.SearchOptions{}); len(hits) != 0 {
		t.Fatalf("deleted session still found: %+v", hits)
	}
}

func TestLineageRootToTip(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	root := e.MustCreate(t, sessions.CreateParams{Title: "root"})
	mid := e.MustChild(t, root.ID, sessions.RelationCompression)
	tip := e.MustChild(t, mid.ID, sessions.RelationCompression)
	e.MustChild(t, mid.ID, sessions.RelationDelegate) // not part of the lineage
	for _, from := range []string{root.ID, mid.ID, tip.ID} {
		chain, err := e.Sessions.Lineage(ctx, from)
		if err != nil {
			t.Fatal(err)
		}
		got := []string{}
		for _, s := range chain {
			got = append(got, s.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint([]string{root.ID, mid.ID, tip.ID}) {
			t.Fatalf("lineage from %s = %v", from, got)
		}
	}
	if _, err := e.Sessions.Lineage(ctx, "missing"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("missing: %v", err)
	}
}
