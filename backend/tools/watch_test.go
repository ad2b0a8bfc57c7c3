package tools

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is the watches' clock in these tests: it moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func watchedPS(t *testing.T) (*Processes, *clock) {
	t.Helper()
	ps := newPS(t)
	clk := &clock{t: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	ps.now = clk.now
	return ps, clk
}

// startWatch starts cat (it prints what it is sent) watched for patterns.
func startWatch(t *testing.T, ps *Processes, owner, dir string, patterns ...any) (string, map[string]any) {
	t.Helper()
	out := bg(t, ps, owner, dir, terminalTool(), map[string]any{"command": "cat", "background": true, "watch_patterns": patterns})
	id, _ := out["session_id"].(string)
	if !strings.HasPrefix(id, "proc_") {
		t.Fatalf("start: %v", out)
	}
	return id, out
}

// watched is a cat started with watch_patterns for owner, on a clock of
// its own, with a listener for owner's notices.
type watched struct {
	ps        *Processes
	clk       *clock
	dir       string
	ch        <-chan Completion
	owner, id string
	start     map[string]any // what the start answered
}

func newWatched(t *testing.T, owner string, patterns ...any) *watched {
	t.Helper()
	ps, clk := watchedPS(t)
	w := &watched{ps: ps, clk: clk, dir: t.TempDir(), owner: owner}
	w.ch = notices(t, ps, owner)
	w.id, w.start = startWatch(t, ps, owner, w.dir, patterns...)
	return w
}

func (w *watched) say(t *testing.T, data string) {
	t.Helper()
	say(t, w.ps, w.owner, w.dir, w.id, data)
}

// say sends data to process id and waits until its output holds it: the
// watch has read it by then (the output and the watch move together).
func say(t *testing.T, ps *Processes, owner, dir, id, data string) {
	t.Helper()
	p, err := ps.get(owner, id)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	before := p.written
	p.mu.Unlock()
	if out := bg(t, ps, owner, dir, processTool(), map[string]any{"action": "write", "session_id": id, "data": data}); fmt.Sprint(out["bytes_written"]) != fmt.Sprint(len(data)) {
		t.Fatalf("write: %v", out)
	}
	waitFor(t, 10*time.Second, "the echo of "+data, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.written >= before+len(data)
	})
}

// none says nothing was told: the next notice (a process started and ended
// to make one) is that process's end.
func none(t *testing.T, ps *Processes, ch <-chan Completion, owner, dir, what string) {
	t.Helper()
	id, _ := startNotify(t, ps, owner, dir, "true")
	if c := next(t, ch); c.ID != id || c.Kind != NoticeEnd {
		t.Fatalf("%s: told %+v", what, c)
	}
}

// A watched process's line that holds a pattern is told to its
// conversation while it runs, in the familiar agent's words: the first
// pattern, the command, the matching lines. Inside the 15 seconds after a
// notice, matches are dropped and counted in the next notice; a process
// that was not asked to be told of its end is not.
func TestAWatchTellsTheLinesThatMatch(t *testing.T) {
	t.Parallel()
	w := newWatched(t, "desktop:s1", "ready", "listening on")
	ps, clk, dir, ch, id, out := w.ps, w.clk, w.dir, w.ch, w.id, w.start
	if fmt.Sprint(out["watch_patterns"]) != "[ready listening on]" || out["notify_on_complete"] != nil || out["note"] != nil ||
		!strings.Contains(fmt.Sprint(out["hint"]), "holds one of watch_patterns") {
		t.Fatalf("start: %v", out)
	}
	w.say(t, "booting\nlistening on :8080, ready\nwarming up\n")
	c := next(t, ch)
	want := "[IMPORTANT: Background process " + id + " matched watch pattern \"ready\".\nCommand: cat\nMatched output:\nlistening on :8080, ready]"
	if c.Kind != NoticeWatchMatch || c.Owner != "desktop:s1" || c.ID != id || c.Pattern != "ready" || c.Text() != want || !c.Take() || !c.Take() || c.Failed() {
		t.Fatalf("match %+v:\n%s\nwant\n%s", c, c.Text(), want)
	}
	// Inside the cooldown: two lines dropped, counted in the next notice.
	w.say(t, "ready twice\nlistening on :9090\n")
	clk.add(WatchMinInterval)
	w.say(t, "nothing here\nready at last\n")
	c = next(t, ch)
	if want := "[IMPORTANT: Background process " + id + " matched watch pattern \"ready\".\nCommand: cat\nMatched output:\nready at last\n" +
		"(2 earlier matches were suppressed by rate limit)]"; c.Text() != want {
		t.Fatalf("after the cooldown:\n%s\nwant\n%s", c.Text(), want)
	}
	// Its end is not told: it did not ask.
	bg(t, ps, "desktop:s1", dir, processTool(), map[string]any{"action": "close", "session_id": id})
	none(t, ps, ch, "desktop:s1", dir, "the end of a watched process")
}

// A line is read whole when it comes in pieces, and as it stands when a
// process prints it without ending it ("Ready" from a server that then
// waits), once; a carriage return ends a line as a newline does; a chunk
// of many matching lines tells its first 20, 2,000 characters at most.
func TestAWatchReadsLines(t *testing.T) {
	t.Parallel()
	w := newWatched(t, "cli:a", "Ready", "done")
	ps, clk, dir, ch := w.ps, w.clk, w.dir, w.ch
	tell := func(data, wantOutput string) {
		t.Helper()
		clk.add(WatchMinInterval)
		w.say(t, data)
		if c := next(t, ch); c.Output != wantOutput {
			t.Fatalf("after %q: told %q, want %q", data, c.Output, wantOutput)
		}
	}
	clk.add(WatchMinInterval)
	w.say(t, "Rea")
	tell("dy to serve\n", "Ready to serve")
	tell("Ready", "Ready")
	clk.add(WatchMinInterval)
	w.say(t, " and more\n") // the rest of a line told already
	tell("10%\r50% done\r\n", "50% done")
	tell("\x1b[32mdone\x1b[0m in green\n", "done in green")
	var many strings.Builder
	for i := 1; i <= 25; i++ {
		fmt.Fprintf(&many, "done %02d\n", i)
	}
	clk.add(WatchMinInterval)
	w.say(t, many.String())
	c := next(t, ch)
	if lines := strings.Split(c.Output, "\n"); len(lines) != 20 || lines[0] != "done 01" || lines[19] != "done 20" {
		t.Fatalf("25 matching lines: %q", c.Output)
	}
	long := strings.Repeat("x", 1500)
	clk.add(WatchMinInterval)
	w.say(t, "done "+long+"\ndone "+long+"\n")
	if c := next(t, ch); len([]rune(c.Output)) != 2000+len("\n...(truncated)") || !strings.HasSuffix(c.Output, "x\n...(truncated)") {
		t.Fatalf("3,000 characters of matches: %d %q", len(c.Output), c.Output[len(c.Output)-30:])
	}
	none(t, ps, ch, "cli:a", dir, "lines without a pattern")
}

// Three 15-second windows in a row with dropped matches end the watch: the
// conversation is told why, once, and then told of the process's end, as
// with notify_on_complete. A window without drops between starts the
// count again.
func TestAWatchThatFloodsEndsAndItsEndIsTold(t *testing.T) {
	t.Parallel()
	w := newWatched(t, "desktop:s1", "tick")
	ps, clk, dir, ch, id := w.ps, w.clk, w.dir, w.ch, w.id
	window := func(drop bool) {
		t.Helper()
		w.say(t, "tick\n")
		if c := next(t, ch); c.Kind != NoticeWatchMatch {
			t.Fatalf("told %+v", c)
		}
		if drop {
			clk.add(time.Second)
			w.say(t, "tick\ntick\n")
			clk.add(WatchMinInterval - time.Second)
		} else {
			clk.add(WatchMinInterval)
		}
	}
	window(true)
	window(true)
	window(false) // the run of strikes ends
	window(true)
	window(true)
	w.say(t, "tick\n")
	if c := next(t, ch); c.Kind != NoticeWatchMatch || c.Suppressed != 2 {
		t.Fatalf("told %+v", c)
	}
	clk.add(time.Second)
	w.say(t, "tick\n")
	c := next(t, ch)
	want := "[IMPORTANT: Watch patterns disabled for process " + id + " — 3 consecutive rate-limit windows triggered (min spacing 15s). " +
		"Falling back to notify_on_complete semantics; you'll get exactly one notification when the process exits.]"
	if c.Kind != NoticeWatchDisabled || c.ID != id || c.Text() != want {
		t.Fatalf("the watch's end:\n%s\nwant\n%s", c.Text(), want)
	}
	clk.add(WatchMinInterval)
	w.say(t, "tick\n")
	bg(t, ps, "desktop:s1", dir, processTool(), map[string]any{"action": "close", "session_id": id})
	if c := next(t, ch); c.Kind != NoticeEnd || c.ID != id || c.ExitCode != 0 || !c.Take() {
		t.Fatalf("after the watch ended, the end is told: %+v", c)
	}
}

// After eight notices the watch ends, though no match was ever dropped:
// the eighth is told, then why, then the end.
func TestAWatchEndsAfterEightNotices(t *testing.T) {
	t.Parallel()
	w := newWatched(t, "desktop:s1", "restarted")
	ps, clk, dir, ch, id := w.ps, w.clk, w.dir, w.ch, w.id
	for i := 1; i <= WatchLifetimeMaxHits; i++ {
		w.say(t, fmt.Sprintf("service restarted (%d)\n", i))
		if c := next(t, ch); c.Kind != NoticeWatchMatch || c.Output != fmt.Sprintf("service restarted (%d)", i) {
			t.Fatalf("notice %d: %+v", i, c)
		}
		clk.add(WatchMinInterval)
	}
	c := next(t, ch)
	if !strings.Contains(c.Text(), "— reached the lifetime cap of 8 delivered matches. Falling back to notify_on_complete semantics;") {
		t.Fatalf("after 8: %q", c.Text())
	}
	w.say(t, "service restarted (9)\n")
	bg(t, ps, "desktop:s1", dir, processTool(), map[string]any{"action": "kill", "session_id": id})
	// Killed by the conversation: its end is not told either.
	none(t, ps, ch, "desktop:s1", dir, "the ninth match and a kill")
}

// Across every process, more than 15 notices in 10 seconds hold the watches
// back for 30 seconds: the conversation whose match tripped it is told so,
// and each conversation that lost matches meanwhile is told, with how
// many, at the first match after.
func TestTheWatchBreaker(t *testing.T) {
	t.Parallel()
	ps, clk := watchedPS(t)
	got := map[string][]Completion{}
	to := func(owner string) func(Completion) {
		return func(c Completion) { got[owner] = append(got[owner], c) }
	}
	now := clk.now()
	for i := 0; i < 15; i++ {
		if ok, notes := ps.admit(now.Add(time.Duration(i)*100*time.Millisecond), "a", to("a")); !ok || notes != nil {
			t.Fatalf("match %d: %v %v", i, ok, notes)
		}
	}
	ok, notes := ps.admit(now.Add(2*time.Second), "a", to("a"))
	if ok || len(notes) != 1 || notes[0].Owner != "a" || notes[0].Text() != "[IMPORTANT: Watch-pattern overflow: >15 notifications in 10s "+
		"across all processes. Suppressing further watch_match events for 30s.]" {
		t.Fatalf("the 16th: %v %+v", ok, notes)
	}
	for _, o := range []string{"b", "b", "a"} {
		if ok, notes := ps.admit(now.Add(20*time.Second), o, to(o)); ok || notes != nil {
			t.Fatalf("while tripped: %v %v", ok, notes)
		}
	}
	ok, notes = ps.admit(now.Add(32*time.Second), "c", to("c"))
	if !ok || len(notes) != 2 {
		t.Fatalf("after the cooldown: %v %+v", ok, notes)
	}
	for _, n := range notes {
		n.deliverTo(n)
	}
	if len(got["a"]) != 1 || got["a"][0].Text() != "[IMPORTANT: Watch-pattern notifications resumed. 2 match event(s) were suppressed during the flood.]" ||
		len(got["b"]) != 1 || !strings.Contains(got["b"][0].Text(), "resumed. 2 match event(s)") || got["c"] != nil {
		t.Fatalf("resumed: %+v", got)
	}
	// The window starts again: 15 more pass.
	for i := 1; i < 15; i++ {
		if ok, _ := ps.admit(now.Add(33*time.Second), "c", to("c")); !ok {
			t.Fatalf("match %d of the new window held back", i)
		}
	}
}

// notify_on_complete and watch_patterns together: the familiar agent keeps
// the first and says so. Bad patterns are refused before anything runs;
// empty ones mean nothing; one string is a list of one.
func TestWatchPatternsAsked(t *testing.T) {
	t.Parallel()
	ps, _ := watchedPS(t)
	dir := t.TempDir()
	ch := notices(t, ps, "desktop:")
	out := bg(t, ps, "desktop:s1", dir, terminalTool(), map[string]any{"command": "echo ready", "background": true,
		"notify_on_complete": true, "watch_patterns": []any{"ready"}})
	if out["watch_patterns_ignored"] != "watch_patterns ignored because notify_on_complete=True; these two flags produce duplicate notifications when combined" ||
		out["notify_on_complete"] != true || out["watch_patterns"] != nil {
		t.Fatalf("both: %v", out)
	}
	if c := next(t, ch); c.Kind != NoticeEnd || c.Output != "ready" {
		t.Fatalf("both: told %+v", c)
	}
	for _, bad := range []struct {
		v    any
		want string
	}{
		{5, "watch_patterns must be a list of strings, not a number"},
		{[]any{"ok", true}, "watch_patterns must be a list of strings: true is a switch"},
		{[]any{strings.Repeat("p", 1001)}, "a watch pattern of 1001 bytes is longer than the 1000 allowed"},
		{strings.Fields(strings.Repeat("p ", 33)), "33 watch patterns are more than the 32 allowed"},
	} {
		out := bg(t, ps, "desktop:s1", dir, terminalTool(), map[string]any{"command": "touch started", "background": true, "watch_patterns": bad.v})
		if out["error"] != bad.want || out["session_id"] != nil {
			t.Fatalf("%v: %v", bad.v, out)
		}
	}
	out = bg(t, ps, "desktop:s1", dir, terminalTool(), map[string]any{"command": "cat", "background": true, "watch_patterns": []any{"", ""}})
	if out["watch_patterns"] != nil || out["session_id"] == nil {
		t.Fatalf("empty patterns: %v", out)
	}
	id, out := startWatch(t, ps, "desktop:s1", dir)
	if out["watch_patterns"] != nil {
		t.Fatalf("no patterns: %v", out)
	}
	say(t, ps, "desktop:s1", dir, id, "anything\n")
	if out := bg(t, ps, "desktop:s1", dir, terminalTool(), map[string]any{"command": "cat", "background": true, "watch_patterns": "up"}); fmt.Sprint(out["watch_patterns"]) != "[up]" {
		t.Fatalf("one string: %v", out)
	}
	none(t, ps, ch, "desktop:s1", dir, "processes without patterns")
}

// Notices that wait for one turn: ends are batched under the familiar
// header, a watch's notices stand alone beside them.
func TestNoticesTogether(t *testing.T) {
	m := Completion{Kind: NoticeWatchMatch, ID: "proc_w", Command: "serve", Pattern: "up", Output: "up on :80"}
	a := Completion{ID: "proc_a", Command: "make", Output: "ok"}
	b := Completion{ID: "proc_b", Command: "test", ExitCode: 1, Output: "FAIL"}
	got := CompletionsText([]Completion{m, a, b})
	want := m.Text() + "\n\n[IMPORTANT: 2 background processes completed. Treat these results as one batch and give one consolidated response; " +
		"preserve failures and actionable results.]\n\n" + a.Text() + "\n\n" + b.Text()
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if got := CompletionsText([]Completion{a, m}); got != a.Text()+"\n\n"+m.Text() {
		t.Fatalf("one end and a match:\n%s", got)
	}
	if s := m.Summary(); s != `background process proc_w printed a line with "up": serve` {
		t.Fatal(s)
	}
	if s := b.Summary(); s != "background process proc_b ended with exit code 1: test" {
		t.Fatal(s)
	}
}
