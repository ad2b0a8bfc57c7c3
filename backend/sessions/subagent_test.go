package sessions_test

import (
	"testing"

	"atrium/backend/hooks"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

// A subagent whose context was compacted ends in its chain's last link:
// subagent_stop fires then, once, under the id subagent_start gave it,
// with the last link's answer and the whole goal the caller names. A
// compacted conversation of no subagent fires none; ending twice fires
// nothing more.
func TestASubagentEndsInItsChainsLastLink(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	lead := e.MustCreate(t, sessions.CreateParams{Title: "lead"})
	sub, err := e.Sessions.Create(ctx, sessions.CreateParams{Title: "review the parser", Goal: "review the parser\nand its tests",
		ParentID: lead.ID, Relation: sessions.RelationDelegate, ParentTurnID: "turn-1"})
	if err != nil {
		t.Fatal(err)
	}
	tip := e.MustChild(t, sub.ID, sessions.RelationCompression)
	if _, err := e.Sessions.AppendMessage(ctx, tip.ID, sessions.NewMessage{Role: "assistant", Content: "Two bugs, both fixed."}); err != nil {
		t.Fatal(err)
	}
	plain := e.MustChild(t, lead.ID, sessions.RelationCompression) // the lead's own continuation
	e.Rec.Reset()
	for range 2 {
		if _, _, err := e.Sessions.EndWith(ctx, tip.ID, "completed", sessions.EndInfo{Goal: "review the parser\nand its tests", ParentTurnID: "turn-1"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := e.Sessions.End(ctx, plain.ID, "user"); err != nil {
		t.Fatal(err)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.SubagentStop: 1, hooks.OnSessionFinalize: 2})
	var p hooks.SubagentStopPayload
	if err := e.Rec.Events(hooks.SubagentStop)[0].Decode(&p); err != nil {
		t.Fatal(err)
	}
	if p.ParentSessionID != lead.ID || p.ChildSessionID != sub.ID || p.ChildSubagentID != sub.ID || p.ChildGoal != "review the parser\nand its tests" ||
		p.ParentTurnID == nil || *p.ParentTurnID != "turn-1" || p.ChildStatus != "completed" || p.ChildSummary == nil || *p.ChildSummary != "Two bugs, both fixed." {
		t.Fatalf("subagent_stop: %+v", p)
	}
}
