package gatewayhooks_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/config"
	"atrium/backend/gatewayhooks"
	"atrium/backend/hooks"
	"atrium/backend/plugins/proc"
	"atrium/backend/sessions/sessionstest"
)

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Discover takes exactly the folders with both files and a HOOK.yaml that
// lists event names; the others are left out, silently when a file is
// missing, with the reason otherwise (a manifest past the bounds, a YAML
// bomb, a list that is not of names, none at all). A missing directory has
// no hooks and no error.
func TestDiscoverTakesWhatTheFamiliarAgentTakes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	handler := "def handle(event_type, context):\n    pass\n"
	for name, manifest := range map[string]string{
		"good":      "name: Good One\ndescription: logs\nevents:\n  - agent:start\n  - command:*\n  - agent:start\n",
		"unnamed":   "events: [session:start]\n",
		"empty":     "name: empty\nevents: []\n",
		"none":      "name: none\n",
		"not-names": "events:\n  - {agent: start}\n",
		"scalar":    "just text\n",
		"broken":    "events: [agent:start\n",
		"huge":      "events: [agent:start]\n# " + strings.Repeat("x", 70<<10) + "\n",
		"deep":      "events:" + strings.Repeat("\n"+strings.Repeat(" ", 1)+"- ", 1) + strings.Repeat("[", 100) + "\n",
		"bomb":      "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nevents: [agent:start]\n",
	} {
		write(t, filepath.Join(dir, name, gatewayhooks.ManifestFile), manifest)
		write(t, filepath.Join(dir, name, gatewayhooks.HandlerFile), handler)
	}
	write(t, filepath.Join(dir, "no-handler", gatewayhooks.ManifestFile), "events: [agent:start]\n")
	write(t, filepath.Join(dir, "no-manifest", gatewayhooks.HandlerFile), handler)
	write(t, filepath.Join(dir, "a-file"), "events: [agent:start]\n")
	found, skipped := gatewayhooks.Discover(dir)
	var names []string
	for _, h := range found {
		names = append(names, h.Folder)
	}
	if strings.Join(names, " ") != "bomb good unnamed" {
		t.Fatalf("found %v", names)
	}
	if g := found[1]; g.Name != "Good One" || g.Description != "logs" || strings.Join(g.Events, ",") != "agent:start,command:*" || g.Dir != filepath.Join(dir, "good") {
		t.Fatalf("good: %+v", g)
	}
	if u := found[2]; u.Name != "unnamed" {
		t.Fatalf("a hook without a name is named by its folder: %+v", u)
	}
	text := ""
	for _, err := range skipped {
		text += err.Error() + "\n"
	}
	for _, want := range []string{"empty skipped", "none skipped", "not-names skipped", "scalar skipped", "broken skipped", "huge skipped", "deep skipped"} {
		if !strings.Contains(text, want) {
			t.Errorf("no reason for %q in:\n%s", strings.Fields(want)[0], text)
		}
	}
	if len(skipped) != 7 || strings.Contains(text, "no-handler") || strings.Contains(text, "no-manifest") {
		t.Fatalf("skipped:\n%s", text)
	}
	if found, skipped := gatewayhooks.Discover(filepath.Join(dir, "missing")); len(found)+len(skipped) != 0 {
		t.Fatalf("a missing directory: %v %v", found, skipped)
	}
}

func TestTakesMatchesNamesAndPrefixWildcards(t *testing.T) {
	t.Parallel()
	h := gatewayhooks.Hook{Events: []string{"agent:start", "command:*"}}
	for event, want := range map[string]string{"agent:start": "agent:start", "command:model": "command:*", "command:": "command:*",
		"agent:end": "", "agent:start2": "", "commands:x": ""} {
		if got, ok := h.Takes(event); got != want || ok != (want != "") {
			t.Errorf("%s: %q %v, want %q", event, got, ok, want)
		}
	}
}

type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func waitFor(t *testing.T, what string, cond func() bool, logs ...*logBuf) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			for _, l := range logs {
				t.Log(l.String())
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A handler that raises is logged and the others go on; one that hangs is
// bounded by the timeout (its process is started again), and the events
// after it still arrive, in order;
// Emit never waits for a handler; Stop delivers what was queued, and an
// event emitted after it goes nowhere.
func TestHooksAreBoundedAndKeepTheirOrder(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	root := t.TempDir()
	home := config.Home{Root: root, Dir: root, Profile: "default"}
	out := filepath.Join(root, "seen.jsonl")
	write(t, filepath.Join(gatewayhooks.Dir(home), "slow", gatewayhooks.ManifestFile), "events: [agent:*]\n")
	write(t, filepath.Join(gatewayhooks.Dir(home), "slow", gatewayhooks.HandlerFile), `import json, os, time

def handle(event_type, context):
    if context.get("hang"):
        time.sleep(30)
    if context.get("raise"):
        raise ValueError("no such thing")
    with open(`+pyString(out)+`, "a") as f:
        f.write(json.dumps({"event": event_type, "n": context.get("n")}) + "\n")
`)
	logs := &logBuf{}
	st := sessionstest.NewWith(t, hooks.Options{Timeout: 5 * time.Second})
	h := gatewayhooks.New(gatewayhooks.Options{Home: home, Bus: st.Bus, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Timeout: 2 * time.Second, Tune: func(ph *proc.Host) { ph.Grace = 200 * time.Millisecond; ph.BackoffMin = 20 * time.Millisecond }})
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := h.Running(); len(r) != 1 || r[0].Folder != "slow" {
		t.Fatalf("running: %+v", r)
	}
	began := time.Now()
	h.Emit("agent:start", map[string]any{"n": 1})
	h.Emit("agent:end", map[string]any{"n": 2, "raise": true})
	h.Emit("agent:step", map[string]any{"n": 3, "hang": true})
	h.Emit("session:start", map[string]any{"n": 99}) // not listened to
	h.Emit("agent:end", map[string]any{"n": 4})
	if d := time.Since(began); d > 500*time.Millisecond {
		t.Fatalf("Emit waited for the handlers: %v", d)
	}
	seen := func() []string {
		data, _ := os.ReadFile(out)
		var got []string
		for line := range strings.Lines(string(data)) {
			var e struct {
				Event string `json:"event"`
				N     int    `json:"n"`
			}
			if json.Unmarshal([]byte(line), &e) == nil {
				got = append(got, e.Event+"#"+string(rune('0'+e.N)))
			}
		}
		return got
	}
	waitFor(t, "the last event", func() bool { return slices.Contains(seen(), "agent:end#4") }, logs)
	if got := strings.Join(seen(), " "); got != "agent:start#1 agent:end#4" {
		t.Fatalf("seen %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h.Emit("agent:start", map[string]any{"n": 5})
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	h.Emit("agent:start", map[string]any{"n": 6})
	if got := strings.Join(seen(), " "); got != "agent:start#1 agent:end#4 agent:start#5" {
		t.Fatalf("after Stop: %q", got)
	}
	text := logs.String()
	for _, want := range []string{"gateway hook failed", "no such thing", "ValueError"} {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %q:\n%s", want, text)
		}
	}
}

// Check reads a handler without running it: a handle defined, async,
// assigned or imported is fine; a syntax error or no handle is said, with
// the line; a handler that would raise at import is not run.
func TestCheckReadsAHandlerWithoutRunningIt(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	for name, c := range map[string]struct{ src, want string }{
		"plain":    {"def handle(event_type, context):\n    pass\n", ""},
		"async":    {"async def handle(event_type, context):\n    pass\n", ""},
		"assigned": {"def _h(e, c):\n    pass\nhandle = _h\n", ""},
		"imported": {"from somewhere import handle\n", ""},
		"side":     {"open(" + pyString(ran) + ", 'w').write('x')\ndef handle(e, c):\n    pass\n", ""},
		"syntax":   {"def handle(e, c:\n    pass\n", "syntax/handler.py syntax error at line 1"},
		"nested":   {"class X:\n    def handle(self, e, c):\n        pass\n", "nested/handler.py has no handle(event_type, context) function"},
		"latin1":   {"\xff\xfe\x00", "latin1/handler.py cannot be read"},
	} {
		write(t, filepath.Join(dir, name, gatewayhooks.HandlerFile), c.src)
		err := gatewayhooks.Check(context.Background(), "", gatewayhooks.Hook{Folder: name, Dir: filepath.Join(dir, name)})
		if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("Check ran a handler's code")
	}
}

// pyString is s as a Python string literal (a JSON string is one).
func pyString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
