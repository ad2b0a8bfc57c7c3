package sessions_test

import (
	"strings"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

func TestParseRuleRefusesBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name   string
		fields map[string]string
		field  string // named in the error
	}{
		{"unknown field", map[string]string{"sorce": "cli"}, "sorce"},
		{"bad scope", map[string]string{"scope": "attic"}, "scope"},
		{"bad source", map[string]string{"source": "cli,fax"}, "source"},
		{"bad platform", map[string]string{"platform": "a b"}, "platform"},
		{"bad profile", map[string]string{"profile": "../x"}, "profile"},
		{"duration without unit", map[string]string{"inactive_for": "30"}, "inactive_for"},
		{"negative duration", map[string]string{"older_than": "-3d"}, "older_than"},
		{"bad unit", map[string]string{"active_within": "3y"}, "active_within"},
		{"bad comparison", map[string]string{"messages": "<<3"}, "messages"},
		{"reversed range", map[string]string{"messages": "9..3"}, "messages"},
		{"bad bool", map[string]string{"pinned": "maybe"}, "pinned"},
		{"bad bool 2", map[string]string{"has_children": "2"}, "has_children"},
		{"no words", map[string]string{"match": "!!!"}, "match"},
		{"trashed_for outside the trash", map[string]string{"trashed_for": "2d"}, "trashed_for"},
		{"contradiction", map[string]string{"inactive_for": "30d", "active_within": "7d"}, "active_within"},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			_, err := sessions.ParseRule(sc.fields)
			if apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), sc.field) {
				t.Fatalf("err = %v, want invalid naming %s", err, sc.field)
			}
		})
	}
	good := map[string]string{"scope": "trash", "source": "cron, cli", "platform": "telegram,local", "profile": "work",
		"older_than": "2w", "inactive_for": "12h", "messages": "2..10", "pinned": "false", "has_children": "true",
		"match": "deploy", "title": "kernel", "trashed_for": "90m", "active_within": ""}
	r, err := sessions.ParseRule(good)
	if err != nil || r.Empty() || r.Scope != "trash" || len(r.Sources) != 2 || r.Messages.Op != ".." {
		t.Fatalf("good rule = %+v, %v", r, err)
	}
	if e, _ := sessions.ParseRule(map[string]string{"scope": "all", "source": ""}); !e.Empty() {
		t.Fatal("a rule with only a scope is not empty")
	}
	a, _ := sessions.ParseRule(map[string]string{"source": "cron", "messages": "<3"})
	b, _ := sessions.ParseRule(map[string]string{"messages": " <3", "source": "cron"})
	if a.Canonical() != b.Canonical() {
		t.Fatalf("canonical forms differ: %q %q", a.Canonical(), b.Canonical())
	}
}

func TestRuleFieldsMatchWhatTheySay(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	mk := func(title, source string, msgs int, idle time.Duration) string {
		s := e.MustCreate(t, sessions.CreateParams{Title: title, Source: source})
		e.MustAppend(t, s.ID, msgs)
		if err := e.DB.InTx(ctx, func(tx *db.Tx) error {
			at := db.Ms(e.Clock.Now().Add(-idle))
			return tx.G.Exec(`UPDATE sessions SET last_activity_at = ?, started_at = ? WHERE id = ?`, at, at, s.ID).Error
		}); err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	oldCron := mk("nightly report", "cron", 1, 40*24*time.Hour)
	newCron := mk("hourly report", "cron", 5, time.Hour)
	chat := mk("deploy the kernel", "cli", 2, 2*24*time.Hour)
	// A chain: its first part is old and short, its tip recent; with 4 messages in all.
	root := mk("long talk", "cli", 2, 60*24*time.Hour)
	tip := e.MustChild(t, root, sessions.RelationCompression)
	e.MustAppend(t, tip.ID, 2)
	child := e.MustChild(t, chat, sessions.RelationDelegate)
	if _, err := e.Sessions.SetPinned(ctx, newCron, true); err != nil {
		t.Fatal(err)
	}
	if err := e.DB.InTx(ctx, func(tx *db.Tx) error {
		return tx.G.Exec(`UPDATE sessions SET platform = 'telegram' WHERE id = ?`, newCron).Error
	}); err != nil {
		t.Fatal(err)
	}
	gw := e.MustCreate(t, sessions.CreateParams{Title: "from a chat", Source: "gateway", Platform: "slack", SenderID: "U1", SenderName: "Ada"})
	if gw.Platform != "slack" || gw.SenderName != "Ada" {
		t.Fatalf("gateway session = %+v", gw)
	}
	if _, err := e.Sessions.Create(ctx, sessions.CreateParams{Platform: "bad platform"}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("bad platform: %v", err)
	}
	if got, _ := e.Sessions.Match(ctx, mustRule(t, map[string]string{"platform": "slack"})); len(got) != 1 || got[0] != gw.ID {
		t.Fatalf("platform slack = %v", got)
	}
	if _, err := e.Sessions.Purge(ctx, []string{gw.ID}, nil); err != nil {
		t.Fatal(err)
	}
	scenarios := []struct {
		fields map[string]string
		want   []string
	}{
		{map[string]string{"source": "cron"}, []string{newCron, oldCron}},
		{map[string]string{"source": "cron", "inactive_for": "30d"}, []string{oldCron}},
		{map[string]string{"active_within": "1d"}, []string{child.ID, tip.ID, newCron}},
		{map[string]string{"platform": "telegram"}, []string{newCron}},
		{map[string]string{"platform": "local", "source": "cron"}, []string{oldCron}},
		{map[string]string{"pinned": "true"}, []string{newCron}},
		{map[string]string{"messages": "<2"}, []string{child.ID, oldCron}},
		{map[string]string{"messages": ">=4"}, []string{tip.ID, newCron}}, // the chain counts 4 in all
		{map[string]string{"messages": "2"}, []string{chat}},
		{map[string]string{"older_than": "50d"}, []string{tip.ID}}, // the chain started 60 days ago
		{map[string]string{"has_children": "true"}, []string{chat}},
		{map[string]string{"match": "hello"}, []string{tip.ID, newCron, chat, oldCron}},
		{map[string]string{"match": "kernel"}, []string{chat}},
		{map[string]string{"title": "report"}, []string{newCron, oldCron}},
		{map[string]string{"match": "talk"}, []string{tip.ID}}, // the chain's first part is titled so
	}
	for _, sc := range scenarios {
		r := mustRule(t, sc.fields)
		got, err := e.Sessions.Match(ctx, r)
		if err != nil || strings.Join(got, ",") != strings.Join(sc.want, ",") {
			t.Errorf("%v: got %v, %v; want %v", sc.fields, got, err, sc.want)
		}
	}
	// The flat list filters rows, not chains.
	p, err := e.Sessions.List(ctx, sessions.Filter{Rule: mustRule(t, map[string]string{"older_than": "50d"})})
	if err != nil || len(p.Sessions) != 1 || p.Sessions[0].ID != root {
		t.Fatalf("flat older_than = %+v, %v", p.Sessions, err)
	}
}
