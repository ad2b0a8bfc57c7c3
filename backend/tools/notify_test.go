package tools

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// notices listens for the completions of owners that start with prefix,
// on a channel.
func notices(t *testing.T, ps *Processes, prefix string) <-chan Completion {
	t.Helper()
	ch := make(chan Completion, 8)
	stop := ps.Listen(func(owner string) func(Completion) {
		if !strings.HasPrefix(owner, prefix) {
			return nil
		}
		return func(c Completion) { ch <- c }
	})
	t.Cleanup(stop)
	return ch
}

func next(t *testing.T, ch <-chan Completion) Completion {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no completion")
		return Completion{}
	}
}

func startNotify(t *testing.T, ps *Processes, owner, dir, command string) (string, map[string]any) {
	t.Helper()
	out := bg(t, ps, owner, dir, terminalTool(), map[string]any{"command": command, "background": true, "notify_on_complete": true})
	id, _ := out["session_id"].(string)
	if !strings.HasPrefix(id, "proc_") {
		t.Fatalf("start %q: %v", command, out)
	}
	return id, out
}

// terminal(background=true, notify_on_complete=true) tells the surface that
// runs the conversation's turns when the process ends, once, in the
// familiar agent's words: the exit code, the command, the end of the
// output. The start says the conversation will be told.
func TestACompletionIsToldToItsConversation(t *testing.T) {
	t.Parallel()
	ps, dir := newPS(t), t.TempDir()
	ch := notices(t, ps, "desktop:")
	id, out := startNotify(t, ps, "desktop:s1", dir, "echo building; echo done; exit 3")
	if out["notify_on_complete"] != true || out["note"] != nil || !strings.Contains(fmt.Sprint(out["hint"]), "told in this conversation") {
		t.Fatalf("start: %v", out)
	}
	c := next(t, ch)
	if c.Owner != "desktop:s1" || c.ID != id || c.ExitCode != 3 || !c.Failed() {
		t.Fatalf("completion %+v", c)
	}
	want := "[IMPORTANT: Background process " + id + " exited (exit code 3).\nCommand: echo building; echo done; exit 3\nOutput:\nbuilding\ndone]"
	if c.Text() != want {
		t.Fatalf("text:\n%s\nwant\n%s", c.Text(), want)
	}
	if !c.Take() || c.Take() {
		t.Fatal("a completion is taken once")
	}

	// A clean exit; a long output's last 2,000 characters; a signal.
	id2, _ := startNotify(t, ps, "desktop:s1", dir, "head -c 5000 /dev/zero | tr '\\0' x; echo; echo tail-end")
	c = next(t, ch)
	if c.ExitCode != 0 || c.Failed() || !strings.HasPrefix(c.Text(), "[IMPORTANT: Background process "+id2+" completed normally (exit code 0).") ||
		len([]rune(c.Output)) != CompletionOutputChars || !strings.HasSuffix(c.Output, "x\ntail-end") {
		t.Fatalf("a long output: %d chars, %q", len(c.Output), c.Text()[:120])
	}
	startNotify(t, ps, "desktop:s1", dir, "kill -TERM $$")
	if c = next(t, ch); c.ExitCode != -15 || !strings.Contains(c.Text(), "exited (exit code -15, SIGTERM).") {
		t.Fatalf("a signal: %+v %q", c, c.Text())
	}
	batch := CompletionsText([]Completion{{ID: "proc_a", Command: "make", Output: "ok"}, {ID: "proc_b", Command: "test", ExitCode: 1, Output: "FAIL"}})
	if !strings.HasPrefix(batch, "[IMPORTANT: 2 background processes completed. Treat these results as one batch and give one consolidated response; preserve failures and actionable results.]\n\n[IMPORTANT: Background process proc_a completed normally (exit code 0).") ||
		!strings.HasSuffix(batch, "]\n\n[IMPORTANT: Background process proc_b exited (exit code 1).\nCommand: test\nOutput:\nFAIL]") {
		t.Fatalf("batch:\n%s", batch)
	}
}

// A conversation that learnt of the end itself (a wait, a poll, a log that
// saw it exit) is not told again: the completion cannot be taken. One it
// killed is not told at all. Nor is one that did not ask.
func TestACompletionSeenIsNotToldAgain(t *testing.T) {
	t.Parallel()
	ps, dir := newPS(t), t.TempDir()
	ch := notices(t, ps, "cli:")
	for _, action := range []string{"wait", "poll", "log"} {
		id, _ := startNotify(t, ps, "cli:a", dir, "echo hi")
		c := next(t, ch)
		if action != "wait" { // poll and log see the end only once it came
			waitFor(t, 10*time.Second, "the exit", func() bool { p, _ := ps.get("cli:a", id); return p.hasExited() })
		}
		if out := bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": action, "session_id": id}); out["status"] != "exited" {
			t.Fatalf("%s: %v", action, out)
		}
		if c.Take() {
			t.Fatalf("after a %s that saw the end, the completion is still told", action)
		}
	}
	// A poll while it runs is no answer: the completion still comes.
	id, _ := startNotify(t, ps, "cli:a", dir, "read line; echo got $line")
	if out := bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "poll", "session_id": id}); out["status"] != "running" {
		t.Fatalf("poll: %v", out)
	}
	bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "submit", "session_id": id, "data": "yes"})
	if c := next(t, ch); c.ID != id || c.Output != "got yes" || !c.Take() {
		t.Fatalf("after a poll of a running process: %+v", c)
	}

	killed, _ := startNotify(t, ps, "cli:a", dir, "sleep 60")
	bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "kill", "session_id": killed})
	quiet := startBG(t, ps, "cli:a", dir, "true")
	bg(t, ps, "cli:a", dir, processTool(), map[string]any{"action": "wait", "session_id": quiet})
	last, _ := startNotify(t, ps, "cli:a", dir, "true")
	if c := next(t, ch); c.ID != last {
		t.Fatalf("told of %s (the killed one is %s, the one that did not ask %s)", c.ID, killed, quiet)
	}
}

// Where no surface takes the conversation's completions (a scheduled run,
// a one-shot send), the start says notify_on_complete is not available;
// a listener that stopped takes none.
func TestNotifyWhereNobodyListens(t *testing.T) {
	t.Parallel()
	ps, dir := newPS(t), t.TempDir()
	stop := ps.Listen(func(owner string) func(Completion) {
		if owner == "desktop:s1" {
			return func(Completion) {}
		}
		return nil
	})
	for _, owner := range []string{"cron:job", "desktop:s1"} {
		if owner == "desktop:s1" {
			stop()
		}
		_, out := startNotify(t, ps, owner, dir, "true")
		if out["notify_on_complete"] != nil || !strings.Contains(fmt.Sprint(out["note"]), "notify_on_complete is not available here") {
			t.Fatalf("%s: %v", owner, out)
		}
	}
	_, out := startNotify(t, ps, "cli:x", dir, "true")
	if out2 := bg(t, ps, "cli:x", dir, terminalTool(), map[string]any{"command": "true", "background": true, "watch_patterns": []any{"ERROR"}}); !strings.Contains(fmt.Sprint(out2["note"]), "watch_patterns is not available") || strings.Contains(fmt.Sprint(out2["note"]), "notify_on_complete") {
		t.Fatalf("watch_patterns: %v (and %v)", out2, out)
	}
}
