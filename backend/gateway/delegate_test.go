package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atrium/backend/gateway/gatewaytest"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// On a chat platform, subagents of a delegate_task ask their approvals in
// the chat, as the turn that started them would, one at a time, saying a
// subagent asks; the sender's answer, well after the turn's own time,
// goes to the one asked, and "/approve session" holds for the chat's
// conversation, its other subagent too; the chat gets the parent's reply.
func TestGatewaySubagentsAskTheSender(t *testing.T) {
	t.Parallel()
	const turnTime = 300 * time.Millisecond
	e := newEnv(t, 8192, 0.9)
	e.turnTimeout = turnTime
	dir := t.TempDir()
	for _, d := range []string{"junk1", "junk2"} {
		if err := os.MkdirAll(filepath.Join(dir, d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.useLoop(t, turns.Options{Machine: func() tools.Settings { return tools.Settings{Cwd: dir, Toolsets: []string{"terminal", "delegation"}} },
		Approve: func(ctx context.Context, a turns.Approval) (turns.Answer, error) { return e.gw.Approve(ctx, a) }})
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	sent := sentTo(t, f)
	late := func() { pastATurn(turnTime) }
	f.Push(5, "Cy", 5, "private", `use tool delegate_task: {"tasks": [{"goal": "use tool terminal: {\"command\": \"rm -rf junk1\"}"}, `+
		`{"goal": "use tool terminal: {\"command\": \"rm -rf junk2\"}"}]}`)
	first := sent(1, "the first subagent's approval")
	if !strings.Contains(first, "A subagent asks (its task: use tool terminal:") || !strings.Contains(first, "rm -rf junk") {
		t.Fatalf("the first approval: %q", first)
	}
	late()
	if n := len(f.SentTexts()); n != 1 {
		t.Fatalf("the second subagent asked while the first waited: %q", f.SentTexts())
	}
	// "For this conversation" covers the chat's conversation, the other
	// subagent's command included: it is not asked about again.
	f.Push(5, "Cy", 5, "private", "/approve session")
	reply := sent(2, "the reply")
	if !strings.Contains(reply, "The tool delegate_task returned:") || strings.Count(reply, `"status":"completed"`) != 1 {
		// the reply quotes the result's first 200 characters: the first task's entry
		t.Fatalf("the reply: %q", f.SentTexts())
	}
	if r := e.toolResult(t); strings.Count(r, `"status":"completed"`) != 2 {
		t.Fatalf("the model read %s", r)
	}
	for _, d := range []string{"junk1", "junk2"} {
		if _, err := os.Stat(filepath.Join(dir, d)); !os.IsNotExist(err) {
			t.Fatalf("%s is still there: %v", d, err)
		}
	}
}

// A message to a chat whose session has a turn of another surface under
// way (the window's) waits for it, its own clock standing still, rather
// than run beside it; then it is answered.
func TestGatewayWaitsForAnotherSurfacesTurn(t *testing.T) {
	t.Parallel()
	const turnTime = 300 * time.Millisecond
	e := newEnv(t, 8192, 0.9)
	e.turnTimeout = turnTime
	runs := turns.NewRuns(t.TempDir())
	e.useLoop(t, turns.Options{Runs: runs})
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	sent := sentTo(t, f)
	f.Push(5, "Cy", 5, "private", "hello")
	sent(1, "the first reply")
	var sid string
	if err := e.db.Read.Raw(`SELECT session_id FROM messages WHERE content = 'hello'`).Scan(&sid).Error; err != nil || sid == "" {
		t.Fatalf("the chat's session: %q %v", sid, err)
	}
	end := runs.Begin(sid, "desktop", func(error) {}) // the window's turn in that session
	f.Push(5, "Cy", 5, "private", "while the window works")
	pastATurn(turnTime)
	if got := f.SentTexts(); len(got) != 1 {
		t.Fatalf("answered beside the window's turn: %q", got)
	}
	end()
	if got := sent(2, "the reply once the window's turn ended"); got != "offline reply to: while the window works" {
		t.Fatalf("the reply: %q", got)
	}
}
