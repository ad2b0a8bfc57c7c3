package gateway_test

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"atrium/backend/gateway/gatewaytest"
	"atrium/backend/stack"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// A background process a chat's turn started with notify_on_complete is
// told to the chat when it ends (as the stack wires it: FollowEnds): a turn of
// its own from the sender, whose message is the familiar agent's
// notification and whose reply goes to the chat. A question that waits is
// not answered by it. Two ends that wait at once are told in one turn. One
// that ends after /new is not told.
func TestGatewayTellsTheChatOfABackgroundProcessEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9)
	dir := t.TempDir()
	ps := tools.NewProcesses()
	t.Cleanup(ps.Close)
	e.useLoop(t, turns.Options{Processes: ps,
		Machine:        func() tools.Settings { return tools.Settings{Cwd: dir, Toolsets: []string{"terminal", "clarify"}} },
		Clarify:        func(ctx context.Context, q turns.Question) (turns.Reply, error) { return e.gw.Clarify(ctx, q) },
		ClarifyTimeout: func() time.Duration { return time.Hour }})
	var ended atomic.Int32  // ends handed over, told or not
	var tell tools.Listener // the gateway's, once it runs
	ps.Listen(func(owner string) func(tools.Completion) {
		deliver := tell(owner)
		if deliver == nil {
			return nil
		}
		return func(c tools.Completion) {
			defer ended.Add(1)
			deliver(c)
		}
	})
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	tell = stack.FollowEnds(e.gw, e.log)
	sent := sentTo(t, f)
	// The process waits for a file the test writes once a question waits.
	gate := dir + "/go"
	f.Push(5, "Cy", 5, "private", `use tool terminal: {"command": "while [ ! -e go ]; do sleep 0.05; done; echo deployed", "background": true, "notify_on_complete": true}`)
	if got := sent(1, "the start's reply"); !strings.Contains(got, `"notify_on_complete":true`) {
		t.Fatalf("the start: %q", got)
	}
	f.Push(5, "Cy", 5, "private", `use tool clarify: {"question": "Which target?", "choices": ["staging", "prod"]}`)
	sent(2, "the question")
	touch(t, gate)
	f.Push(5, "Cy", 5, "private", "2")
	sent(3, "the question's turn's reply")
	if got := e.toolResult(t); got != `{"question":"Which target?","choices_offered":["staging","prod"],"user_response":"prod"}` {
		t.Fatalf("the question was answered by %s", got)
	}
	told := sent(4, "the end's turn's reply")
	if !strings.Contains(told, "[IMPORTANT: Background process proc_") || !strings.Contains(told, "completed normally (exit code 0).") || !strings.Contains(told, "deployed") {
		t.Fatalf("the end's reply: %q", told)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE role = 'user' AND content LIKE '[IMPORTANT: Background process proc_%completed normally%deployed]'`); n != 1 {
		t.Fatalf("%d messages tell the end", n)
	}

	// Two that end while the conversation is busy (a question waits) are
	// told in one turn after it, with the familiar agent's batch header.
	f.Push(5, "Cy", 5, "private", `use tool terminal: {"command": "while [ ! -e go2 ]; do sleep 0.05; done; echo one", "background": true, "notify_on_complete": true}`)
	sent(5, "the first start")
	f.Push(5, "Cy", 5, "private", `use tool terminal: {"command": "while [ ! -e go2 ]; do sleep 0.05; done; echo two; exit 1", "background": true, "notify_on_complete": true}`)
	sent(6, "the second start")
	f.Push(5, "Cy", 5, "private", `use tool clarify: {"question": "Go on?"}`)
	sent(7, "the second question")
	touch(t, dir+"/go2")
	waitFor(t, "both ends handed over", func() bool { return ended.Load() == 3 })
	f.Push(5, "Cy", 5, "private", "yes")
	sent(8, "the question's reply")
	if batch := sent(9, "the batch's reply"); !strings.Contains(batch, "[IMPORTANT: 2 background processes completed. Treat these results as one batch") {
		t.Fatalf("the batch's reply: %q", batch)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE role = 'user' AND content LIKE '[IMPORTANT: 2 background processes completed.%'
		AND content LIKE '%Output:'||char(10)||'one]%' AND content LIKE '%Output:'||char(10)||'two]%' AND content LIKE '%exited (exit code 1).%'`); n != 1 {
		t.Fatalf("the batch's message: %d", n)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE role = 'user' AND content LIKE '[IMPORTANT:%'`); n != 2 {
		t.Fatalf("%d turns told of the three ends", n)
	}

	// One that ends after /new reset the conversation is not told (the
	// familiar gateway drops it); the fresh conversation goes on.
	f.Push(5, "Cy", 5, "private", `use tool terminal: {"command": "while [ ! -e go3 ]; do sleep 0.05; done; echo stale", "background": true, "notify_on_complete": true}`)
	sent(10, "the third start")
	f.Push(5, "Cy", 5, "private", "/new")
	sent(11, "/new")
	touch(t, dir+"/go3")
	waitFor(t, "the end handed over", func() bool { return ended.Load() == 4 })
	f.Push(5, "Cy", 5, "private", "hello again")
	if got := sent(12, "the next reply"); !strings.Contains(got, "hello again") {
		t.Fatalf("after /new, the chat was sent %q", got)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE content LIKE '%stale%' AND role = 'user' AND content LIKE '[IMPORTANT:%'`); n != 0 {
		t.Fatalf("the end after /new was told (%d)", n)
	}
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}
