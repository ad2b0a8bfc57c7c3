package turns_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/compaction"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/turns"
)

// roles is the active transcript of id as "role:content" lines.
func roles(t *testing.T, e env, id string) string {
	t.Helper()
	ms, err := e.Sessions.Messages(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Role+":"+m.Content)
	}
	return strings.Join(out, "|")
}

// /undo takes back the last exchange (or N of them) from the transcript
// the model reads, keeping it in the store; /retry sends the last message
// again, its answer taken back. A session whose only exchange was taken
// back does not start again: on_session_start fires once.
func TestUndoAndRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, nil)
	s := e.MustCreate(t, sessions.CreateParams{Title: "undo"})
	e.send(t, s.ID, "first")
	e.send(t, s.ID, "second")
	e.send(t, s.ID, "use tool echo: third")
	if got := e.send(t, s.ID, "/undo"); got.Command != "undo" ||
		got.Output != `Took back your last message and what answered (4 messages; they stay in the store, out of the conversation): "use tool echo: third"` {
		t.Fatalf("/undo: %+v", got)
	}
	if got := roles(t, e, s.ID); got != "user:first|assistant:offline reply to: first|user:second|assistant:offline reply to: second" {
		t.Fatalf("after /undo: %s", got)
	}
	all, _ := e.Sessions.Messages(ctx, s.ID, true)
	if len(all) != 8 {
		t.Fatalf("the store keeps %d messages, not 8", len(all))
	}
	if cur, _ := e.Sessions.Get(ctx, s.ID); cur.MessageCount != 4 {
		t.Fatalf("message_count %d", cur.MessageCount)
	}

	turn := e.send(t, s.ID, "/retry")
	if turn.Reply != "offline reply to: second" {
		t.Fatalf("/retry: %+v", turn)
	}
	if got := roles(t, e, s.ID); got != "user:first|assistant:offline reply to: first|user:second|assistant:offline reply to: second" {
		t.Fatalf("after /retry: %s", got)
	}

	if got := e.send(t, s.ID, "/undo 5"); !strings.HasPrefix(got.Output, "Took back your last 2 messages and what answered (4 messages;") {
		t.Fatalf("/undo 5: %+v", got)
	}
	if got := roles(t, e, s.ID); got != "" {
		t.Fatalf("after /undo 5: %s", got)
	}
	for text, code := range map[string]apperr.Code{"/undo": apperr.Rejected, "/retry": apperr.Rejected, "/undo x": apperr.Invalid, "/undo 0": apperr.Invalid, "/retry now": apperr.Invalid} {
		if _, err := e.loop.Send(ctx, s.ID, text, hooks.LocalContext("cli", s.ID)); apperr.CodeOf(err) != code {
			t.Fatalf("%s: %v, want %s", text, err, code)
		}
	}
	e.send(t, s.ID, "again from the start")
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.OnSessionStart: 1, hooks.PostLLMCall: 5, hooks.OnSessionEnd: 5, hooks.PostToolCall: 1})
}

// Nothing is taken back while another turn runs in the session, in this
// process or another.
func TestUndoWaitsForTheTurnUnderWay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, nil)
	dir := t.TempDir()
	runs := turns.NewRuns(dir)
	eng := compaction.NewEngine(e.DB, e.Sessions, e.Bus, llm.OfflineSummarizer{}, compaction.DefaultConfig())
	loop, err := turns.New(e.DB, e.Sessions, eng, e.Bus, turns.Options{Provider: llm.OfflineProvider{Window: 100000}, Runs: runs})
	if err != nil {
		t.Fatal(err)
	}
	s := e.MustCreate(t, sessions.CreateParams{Title: "busy"})
	if _, err := loop.Send(ctx, s.ID, "hello", hooks.LocalContext("cli", s.ID)); err != nil {
		t.Fatal(err)
	}
	other := turns.NewRuns(dir) // another process's turn in the same session
	end := other.Begin(s.ID, "telegram", func(error) {})
	defer end()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r, _ := runs.Running(s.ID); len(r) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the other process's turn was never written down")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, text := range []string{"/undo", "/retry"} {
		_, err := loop.Send(context.Background(), s.ID, text, hooks.LocalContext("cli", s.ID))
		if apperr.CodeOf(err) != apperr.Conflict || !strings.Contains(err.Error(), "a turn is running in this session (in the gateway (telegram))") {
			t.Fatalf("%s: %v", text, err)
		}
	}
	if got := roles(t, e, s.ID); got != "user:hello|assistant:offline reply to: hello" {
		t.Fatalf("the transcript changed: %s", got)
	}
}
