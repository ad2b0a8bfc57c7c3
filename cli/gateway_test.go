package cli_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const cliTGToken = "424242:cli-test-token-never-logged"

// gatewayRun starts `atrium gateway run --json` as a real process.
func gatewayRun(t *testing.T, home string) (*exec.Cmd, *lockedBuf) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "gateway", "run", "--json", "--home", home)
	cmd.Env = append(os.Environ(), "ATRIUM_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0", "TG_TEST_TOKEN="+cliTGToken)
	logs := &lockedBuf{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, logs
}

// sentBy waits for the nth message the bot sent on tg, and returns it.
func sentBy(t *testing.T, tg *gatewaytest.Telegram) func(n int) string {
	return func(n int) string {
		t.Helper()
		waitFor(t, fmt.Sprintf("message %d", n), 30*time.Second, func() bool { return len(tg.SentTexts()) >= n })
		return tg.SentTexts()[n-1]
	}
}

// telegramHome is a home whose config.yaml (cfg) runs Telegram against tg,
// the sender 42 allowed.
func telegramHome(t *testing.T, tg *gatewaytest.Telegram) (home, cfg string) {
	t.Helper()
	home = t.TempDir()
	cfg = fmt.Sprintf("gateway:\n  telegram:\n    token_env: TG_TEST_TOKEN\n    base_url: %s\n    allowed_users: [42]\n    poll_timeout_seconds: 1\n", tg.URL)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, cfg
}

// `atrium gateway run` answers on Telegram (a loopback fake of the Bot
// API): /whoami tells the sender's id; a second gateway stands by and takes
// over when the first stops; `gateway status` tells who runs it; the token
// is never logged.
func TestGatewayRunEndToEnd(t *testing.T) {
	t.Parallel()
	tg := gatewaytest.NewTelegram(t, cliTGToken)
	home, _ := telegramHome(t, tg)
	first, logs1 := gatewayRun(t, home)
	waitFor(t, "the first gateway connected", 30*time.Second, func() bool { return strings.Contains(logs1.String(), `"state":"connected"`) })
	tg.Push(42, "Ada", 42, "private", "/whoami")
	waitFor(t, "the reply", 30*time.Second, func() bool { return len(tg.SentTexts()) == 1 })
	if got := tg.SentTexts()[0]; !strings.Contains(got, "Ada (42) on telegram") {
		t.Fatalf("whoami: %q", got)
	}

	st := atrium(t, home, "gateway", "status", "--json")
	var rep struct {
		Running bool `json:"running"`
		Host    struct {
			Process string `json:"process"`
		} `json:"host"`
		Adapters []struct {
			Platform     string   `json:"platform"`
			State        string   `json:"state"`
			Received     int      `json:"received"`
			AllowedUsers []string `json:"allowed_users"`
		} `json:"adapters"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &rep); err != nil || st.code != 0 {
		t.Fatalf("status: %v %+v", err, st)
	}
	if !rep.Running || rep.Host.Process != "atrium gateway run" || len(rep.Adapters) != 1 || rep.Adapters[0].State != "connected" ||
		rep.Adapters[0].Received != 1 || rep.Adapters[0].AllowedUsers[0] != "42" {
		t.Fatalf("status %+v", rep)
	}

	second, logs2 := gatewayRun(t, home)
	waitFor(t, "the second standing by", 30*time.Second, func() bool { return strings.Contains(logs2.String(), "standing by") })
	if err := first.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first gateway after SIGTERM: %v\n%s", err, logs1.String())
	}
	waitFor(t, "the second taking over", 30*time.Second, func() bool { return strings.Contains(logs2.String(), `"state":"connected"`) })
	tg.Push(42, "Ada", 42, "private", "still there?")
	waitFor(t, "the second's reply", 30*time.Second, func() bool { return len(tg.SentTexts()) == 2 })
	_ = second.Process.Signal(syscall.SIGTERM)
	_ = second.Wait()
	for _, l := range []string{logs1.String(), logs2.String()} {
		if strings.Contains(l, cliTGToken) {
			t.Fatal("the token reached the log")
		}
	}
	if st := atrium(t, home, "gateway", "status"); st.code != 0 || !strings.Contains(st.stdout, "Not running") {
		t.Fatalf("status after: %+v", st)
	}
}

func TestGatewayRunWithoutAdaptersSaysWhat(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	r := atrium(t, home, "gateway", "run")
	if r.code != 2 || !strings.Contains(r.stderr, "no gateway adapter is configured") {
		t.Fatalf("%+v", r)
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("gateway:\n  telegram:\n    token_env: \"123:abc-pasted-token\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = atrium(t, home, "gateway", "status")
	if r.code != 2 || !strings.Contains(r.stderr, "must name an environment variable") || strings.Contains(r.stderr, "pasted-token") {
		t.Fatalf("a token pasted into the config: %+v", r)
	}
}

func TestCronCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if r := atrium(t, home, "cron", "add", "standup", "--schedule", "0 9 * * 1-5", "--tz", "Europe/Paris", "--prompt", "what is on today?",
		"--deliver", "telegram:123456789"); r.code != 0 || !strings.Contains(r.stdout, "added standup: 0 9 * * 1-5 (Europe/Paris)") ||
		!strings.Contains(r.stderr, "no gateway adapter \"telegram\" is configured") {
		t.Fatalf("add: %+v", r)
	}
	for _, sc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cron", "add", "standup", "--schedule", "@daily", "--prompt", "x"}, 4, "already exists"},
		{[]string{"cron", "add", "x", "--schedule", "0 25 * * *", "--prompt", "x"}, 2, "invalid schedule"},
		{[]string{"cron", "add", "x", "--schedule", "0 9 * * *", "--tz", "Nowhere/City", "--prompt", "x"}, 2, "unknown time zone"},
		{[]string{"cron", "add", "x", "--schedule", "0 9 * * *", "--prompt", "x", "--deliver", "telegram 42"}, 2, "invalid --deliver"},
		{[]string{"cron", "pause", "nope"}, 3, "no cron job named"},
		{[]string{"cron", "run", "nope"}, 3, "no cron job named"},
	} {
		if r := atrium(t, home, sc.args...); r.code != sc.code || !strings.Contains(r.stderr, sc.want) {
			t.Fatalf("%v: %+v", sc.args, r)
		}
	}
	if r := atrium(t, home, "cron", "pause", "standup"); r.code != 0 {
		t.Fatalf("pause: %+v", r)
	}
	r := atrium(t, home, "cron", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "standup") || !strings.Contains(r.stdout, "(paused)") || !strings.Contains(r.stdout, "Scheduler not running") {
		t.Fatalf("list: %+v", r)
	}
	r = atrium(t, home, "cron", "run", "standup", "--json")
	var res struct {
		SessionID string `json:"session_id"`
		Reply     string `json:"reply"`
		Delivered int64  `json:"delivery_id"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != 0 || !strings.Contains(res.Reply, "what is on today?") || res.Delivered == 0 {
		t.Fatalf("run: %+v %v", r, err)
	}
	s := atrium(t, home, "sessions", "show", res.SessionID, "--json")
	if !strings.Contains(s.stdout, `"source": "cron"`) || !strings.Contains(s.stdout, `"title": "standup"`) || !strings.Contains(s.stdout, `"end_reason": "cron"`) {
		t.Fatalf("the run's session: %s", s.stdout)
	}
	if r := atrium(t, home, "cron", "resume", "standup"); r.code != 0 || !strings.Contains(r.stdout, "next run") {
		t.Fatalf("resume: %+v", r)
	}
	if r := atrium(t, home, "cron", "remove", "standup"); r.code != 0 {
		t.Fatalf("remove: %+v", r)
	}
	if r := atrium(t, home, "cron", "list", "--json"); !strings.Contains(r.stdout, `"jobs": []`) {
		t.Fatalf("list after remove: %+v", r)
	}
}

// A real Python plugin (hermes-guard, unchanged) wants read_notes approved:
// under `atrium gateway run` the sender is asked in the chat, and their
// /approve lets the call run; /deny blocks the next one.
// Not parallel: its three Python plugins and a gateway process would add to
// the peak of the package's parallel tests, which wait on processes too.
func TestGatewayRunAsksTheSenderToApprove(t *testing.T) {
	tg := gatewaytest.NewTelegram(t, cliTGToken)
	home := hermesHome(t, fmt.Sprintf("gateway:\n  telegram:\n    token_env: TG_TEST_TOKEN\n    base_url: %s\n    allowed_users: [42]\n    poll_timeout_seconds: 1\n", tg.URL),
		"hermes-audit", "hermes-guard", "hermes-notes")
	gw, logs := gatewayRun(t, home)
	waitFor(t, "the gateway connected", 30*time.Second, func() bool { return strings.Contains(logs.String(), `"state":"connected"`) })
	// The chat is shown each call as it starts (display.tool_progress:
	// all), in a message of its own beside the approval's.
	sent := func(n int, what string) []string {
		t.Helper()
		waitFor(t, what, 60*time.Second, func() bool { return len(tg.SentTexts()) >= n })
		got := tg.SentTexts()
		return got[n-2 : n]
	}
	tg.Push(42, "Ada", 42, "private", `use tool read_notes: {"ask": true}`)
	if got := strings.Join(sent(2, "the approval request"), "\n"); !strings.Contains(got, "the plugin hermes-guard wants a person to approve the tool read_notes") ||
		!strings.Contains(got, "reading notes needs a yes") || !strings.Contains(got, "⚙️ read_notes...") {
		t.Fatalf("approval request: %q", got)
	}
	tg.Push(42, "Ada", 42, "private", "/approve")
	if got := sent(3, "the reply after /approve")[1]; !strings.Contains(got, `[checked by hermes-notes]`) || strings.Contains(got, "BLOCKED") {
		t.Fatalf("after /approve: %q", got)
	}
	tg.Push(42, "Ada", 42, "private", `use tool read_notes: {"ask": true}`)
	sent(5, "the second approval request")
	tg.Push(42, "Ada", 42, "private", "/deny")
	if got := sent(6, "the reply after /deny")[1]; !strings.Contains(got, "BLOCKED: plugin approval required for read_notes") {
		t.Fatalf("after /deny: %q", got)
	}
	reads := byKey(records(t, home, "hermes-notes", "notes-calls.jsonl"), "kind", "read_notes")
	if len(reads) != 1 {
		t.Fatalf("read_notes ran %d times, want once (approved)", len(reads))
	}
	_ = gw.Process.Signal(syscall.SIGTERM)
	_ = gw.Wait()
}

// The familiar agent's gateway event hooks run unchanged: a folder of
// <home>/hooks/ with HOOK.yaml and handler.py (here the documented
// activity-log example, async, writing under Path.home()) hears
// gateway:startup, session:start, agent:start, agent:step, agent:end,
// command:* (with session:end and session:reset after /new), with the
// documented context keys and the gateway's environment. A folder without
// handler.py is left out silently; one whose handler fails at import, or
// whose HOOK.yaml names no events, is left out with a log line (`gateway
// status` lists the hooks and the latter; `hooks doctor` also finds a
// handler with a syntax error or no handle, without running it); the
// gateway answers all the same.
func TestGatewayEventHooksOfTheFamiliarAgent(t *testing.T) {
	needPython(t)
	t.Parallel()
	tg := gatewaytest.NewTelegram(t, cliTGToken)
	home, person := t.TempDir(), t.TempDir()
	cfg := fmt.Sprintf("gateway:\n  telegram:\n    token_env: TG_TEST_TOKEN\n    base_url: %s\n    allowed_users: [42]\n    poll_timeout_seconds: 1\n", tg.URL)
	write := func(rel, text string) { writeUnder(t, home, rel, text) }
	write("config.yaml", cfg)
	write("hooks/my-hook/HOOK.yaml", "name: my-hook\ndescription: Log all agent activity to a file\nevents:\n  - gateway:startup\n  - session:start\n  - agent:start\n  - agent:step\n  - agent:end\n  - command:*\n  - session:end\n  - session:reset\n")
	write("hooks/my-hook/handler.py", `import json
import os
from datetime import datetime
from pathlib import Path

LOG_FILE = Path.home() / ".hermes" / "hooks" / "my-hook" / "activity.log"

async def handle(event_type: str, context: dict):
    """Called for each subscribed event. Must be named 'handle'."""
    entry = {
        "timestamp": datetime.now().isoformat(),
        "event": event_type,
        "seen_env": os.environ.get("HOOK_TEST_MARK", ""),
        **context,
    }
    with open(LOG_FILE, "a") as f:
        f.write(json.dumps(entry) + "\n")
`)
	write("hooks/broken/HOOK.yaml", "name: broken\nevents: [agent:start]\n")
	write("hooks/broken/handler.py", "raise RuntimeError('not today')\n")
	write("hooks/no-handler/HOOK.yaml", "name: no-handler\nevents: [agent:start]\n")
	write("hooks/no-events/HOOK.yaml", "name: no-events\nevents: []\n")
	write("hooks/no-events/handler.py", "def handle(event_type, context):\n    pass\n")
	write("hooks/syntax/HOOK.yaml", "events: [agent:end]\n")
	write("hooks/syntax/handler.py", "def handle(event_type, context:\n    pass\n")
	write("hooks/no-handle/HOOK.yaml", "events: [agent:end]\n")
	write("hooks/no-handle/handler.py", "def on_event(event_type, context):\n    pass\n")
	logFile := filepath.Join(person, ".hermes", "hooks", "my-hook", "activity.log")
	if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "gateway", "run", "--json", "--home", home)
	cmd.Env = append(os.Environ(), "ATRIUM_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0", "TG_TEST_TOKEN="+cliTGToken,
		"HOME="+person, "HOOK_TEST_MARK=from-the-gateway")
	logs := &lockedBuf{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, "the gateway connected", 30*time.Second, func() bool { return strings.Contains(logs.String(), `"state":"connected"`) })
	type entry map[string]any
	read := func() []entry {
		data, _ := os.ReadFile(logFile)
		var out []entry
		for line := range strings.Lines(string(data)) {
			var e entry
			if json.Unmarshal([]byte(line), &e) == nil {
				out = append(out, e)
			}
		}
		return out
	}
	events := func() []string {
		var out []string
		for _, e := range read() {
			out = append(out, e["event"].(string))
		}
		return out
	}
	tg.Push(42, "Ada", 42, "private", "/whoami")
	waitFor(t, "the whoami reply", 30*time.Second, func() bool { return len(tg.SentTexts()) == 1 })
	tg.Push(42, "Ada", 42, "private", `use tool echo: {"text": "hi"}`)
	waitFor(t, "the tool's progress and reply", 30*time.Second, func() bool { return len(tg.SentTexts()) == 3 })
	if got := tg.SentTexts()[1]; got != `⚙️ echo: "hi"` {
		t.Fatalf("the progress line: %q", got)
	}
	tg.Push(42, "Ada", 42, "private", "/new")
	waitFor(t, "the /new reply", 30*time.Second, func() bool { return len(tg.SentTexts()) == 4 })
	want := "gateway:startup session:start command:whoami agent:start agent:step agent:end command:new session:end session:reset"
	waitFor(t, "the hook's log", 30*time.Second, func() bool { return strings.Join(events(), " ") == want })
	got := read()
	if p, _ := got[0]["platforms"].([]any); len(p) != 1 || p[0] != "telegram" {
		t.Fatalf("gateway:startup: %v", got[0])
	}
	if got[1]["platform"] != "telegram" || got[1]["user_id"] != "42" || got[1]["session_id"] == "" || got[1]["session_key"] == "" {
		t.Fatalf("session:start: %v", got[1])
	}
	if got[2]["command"] != "whoami" || got[2]["args"] != "" || got[2]["user_id"] != "42" {
		t.Fatalf("command:whoami: %v", got[2])
	}
	start, step, end := got[3], got[4], got[5]
	if start["message"] != `use tool echo: {"text": "hi"}` || start["chat_id"] != "42" || start["chat_type"] == nil ||
		start["session_id"] != got[1]["session_id"] || start["seen_env"] != "from-the-gateway" {
		t.Fatalf("agent:start: %v", start)
	}
	if step["iteration"] != 1.0 || fmt.Sprint(step["tool_names"]) != "[echo]" {
		t.Fatalf("agent:step: %v", step)
	}
	if r, _ := end["response"].(string); !strings.Contains(r, "hi") || end["message"] != start["message"] {
		t.Fatalf("agent:end: %v", end)
	}
	if got[7]["session_key"] != got[1]["session_key"] || got[8]["session_key"] != got[1]["session_key"] {
		t.Fatalf("session:end / session:reset: %v %v", got[7], got[8])
	}
	// gateway status lists what the gateway loads, and what it leaves out.
	var rep struct {
		Hooks []struct {
			Folder string   `json:"folder"`
			Events []string `json:"events"`
		} `json:"hooks"`
		Problems []string `json:"hook_problems"`
	}
	st := atrium(t, home, "gateway", "status", "--json")
	if err := json.Unmarshal([]byte(st.stdout), &rep); err != nil || len(rep.Hooks) != 4 || rep.Hooks[0].Folder != "broken" ||
		rep.Hooks[1].Folder != "my-hook" || len(rep.Hooks[1].Events) != 8 || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "no-events") {
		t.Fatalf("gateway status: %v %+v", err, rep)
	}
	// hooks doctor reads the handlers without running them.
	doc := atriumExec(t, home, "", nil, "hooks", "doctor")
	if doc.code != 5 || !strings.Contains(doc.stdout, "4 gateway event hook(s)") || !strings.Contains(doc.stdout, "syntax/handler.py syntax error at line 1") ||
		!strings.Contains(doc.stdout, "no-handle/handler.py has no handle(event_type, context) function") ||
		!strings.Contains(doc.stdout, "no-events/HOOK.yaml names no events") || !strings.Contains(doc.stdout, "broken/handler.py has no handle") ||
		strings.Contains(doc.stdout, "my-hook/") {
		t.Fatalf("hooks doctor: %+v", doc)
	}
	if st := atrium(t, home, "gateway", "status"); !strings.Contains(st.stdout, "my-hook") || !strings.Contains(st.stdout, "left out: gateway hook no-events") {
		t.Fatalf("gateway status: %s", st.stdout)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM) // it hosts the profile's plugins until it ends
	_ = cmd.Wait()
	out := logs.String()
	for _, w := range []string{"gateway hook not loaded", "broken", "not today", "no-events", "names no events"} {
		if !strings.Contains(out, w) {
			t.Errorf("the log lacks %q", w)
		}
	}
	if strings.Contains(out, "no-handler") {
		t.Errorf("a folder without handler.py is not left out silently:\n%s", out)
	}
	if t.Failed() {
		t.Log(out)
		data, _ := os.ReadFile(logFile)
		t.Log(string(data))
	}
}

// `hooks test EVENT` hands a gateway event's sample context (with
// --payload's fields) to the gateway event hooks that listen to it, each
// in its own process as the gateway runs them, and says how each took it:
// a handler that raises fails the command with its error; a hook that
// listens to other events is not started; an event nobody listens to is
// not found.
func TestHooksTestHandsAGatewayEventToItsHooks(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := t.TempDir()
	write := func(rel, text string) { writeUnder(t, home, rel, text) }
	seen := filepath.Join(home, "seen.jsonl")
	write("hooks/logger/HOOK.yaml", "events: [agent:start, command:*]\n")
	write("hooks/logger/handler.py", `import json, os

async def handle(event_type, context):
    with open(os.path.join(os.environ["HERMES_HOME"], "seen.jsonl"), "a") as f:
        f.write(json.dumps({"event": event_type, **context}) + "\n")
`)
	write("hooks/raising/HOOK.yaml", "events: [agent:start]\n")
	write("hooks/raising/handler.py", "def handle(event_type, context):\n    raise ValueError('nope')\n")
	write("hooks/other/HOOK.yaml", "events: [session:start]\n")
	write("hooks/other/handler.py", "import os\nopen(os.path.join(os.environ['HERMES_HOME'], 'other-started'), 'w').close()\ndef handle(e, c):\n    pass\n")
	r := atriumExec(t, home, "", nil, "hooks", "test", "agent:start", "--payload", `{"message": "hi there"}`)
	if r.code != 5 || !strings.Contains(r.stdout, "agent:start → gateway hook logger (agent:start)\n  handled in") ||
		!strings.Contains(r.stdout, "agent:start → gateway hook raising (agent:start)\n  failed after") || !strings.Contains(r.stdout, "ValueError: nope") ||
		!strings.Contains(r.stderr, "1 of 2 gateway hook(s) failed") {
		t.Fatalf("hooks test agent:start: %+v", r)
	}
	data, _ := os.ReadFile(seen)
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil || got["event"] != "agent:start" || got["message"] != "hi there" || got["platform"] != "test" ||
		got["session_id"] != "test-session" || got["chat_type"] != "dm" {
		t.Fatalf("the hook got %s (%v)", data, err)
	}
	if _, err := os.Stat(filepath.Join(home, "other-started")); err == nil {
		t.Fatal("a hook that listens to other events was started")
	}
	var results []struct {
		Hook, Pattern, Error string
	}
	mustJSON(t, atriumExec(t, home, "", nil, "hooks", "test", "command:new", "--json"), &results)
	if len(results) != 1 || results[0].Hook != "logger" || results[0].Pattern != "command:*" || results[0].Error != "" {
		t.Fatalf("hooks test command:new: %+v", results)
	}
	if r := atriumExec(t, home, "", nil, "hooks", "test", "session:compress"); r.code != 3 || !strings.Contains(r.stderr, "no gateway event hook") {
		t.Fatalf("an event nobody listens to: %+v", r)
	}
}

// writeUnder writes text to rel under root, making its folders.
func writeUnder(t *testing.T, root, rel, text string) {
	t.Helper()
	path := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A gateway whose model's key is not set yet starts all the same: a
// message is answered with why the model was not asked (nothing stored),
// and the key kept with `atrium config set` from another process is the
// next message's, without a restart.
func TestAGatewayTakesTheModelsKeyWhenItIsSet(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var auth []string
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hello from the model"}}]}`))
	}))
	defer model.Close()
	tg := gatewaytest.NewTelegram(t, cliTGToken)
	home := t.TempDir()
	cfg := fmt.Sprintf("model:\n  provider: custom\n  base_url: %s/v1\n  default: m\n  api_key_env: ATRIUM_T_GW_MODEL_KEY\n"+
		"gateway:\n  telegram:\n    token_env: TG_TEST_TOKEN\n    base_url: %s\n    allowed_users: [42]\n    poll_timeout_seconds: 1\n", model.URL, tg.URL)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	gw, logs := gatewayRun(t, home)
	waitFor(t, "the gateway connected", 30*time.Second, func() bool { return strings.Contains(logs.String(), `"state":"connected"`) })
	tg.Push(42, "Ada", 42, "private", "hello")
	waitFor(t, "the first reply", 30*time.Second, func() bool { return len(tg.SentTexts()) == 1 })
	if got := tg.SentTexts()[0]; !strings.HasPrefix(got, "Sorry, that did not work:") || !strings.Contains(got, "$ATRIUM_T_GW_MODEL_KEY is not set") {
		t.Fatalf("the reply without a key: %q", got)
	}
	if r := atrium(t, home, "config", "set", "ATRIUM_T_GW_MODEL_KEY", "sk-gw-later"); r.code != 0 {
		t.Fatalf("config set: %+v", r)
	}
	tg.Push(42, "Ada", 42, "private", "hello again")
	waitFor(t, "the second reply", 30*time.Second, func() bool { return len(tg.SentTexts()) == 2 })
	if got := tg.SentTexts()[1]; got != "hello from the model" {
		t.Fatalf("the reply once the key was set: %q", got)
	}
	mu.Lock()
	if strings.Join(auth, ",") != "Bearer sk-gw-later" {
		t.Fatalf("the model was asked with %q", auth)
	}
	mu.Unlock()
	_ = gw.Process.Signal(syscall.SIGTERM)
	if err := gw.Wait(); err != nil {
		t.Fatalf("the gateway after SIGTERM: %v\n%s", err, logs.String())
	}
	if strings.Contains(logs.String(), "sk-gw-later") {
		t.Fatal("the key reached the log")
	}
}

// /verbose from a chat cycles display.tool_progress (all, verbose, off,
// new, ...) and saves it in config.yaml when display.tool_progress_command
// allows it, as the familiar gateway does; the next turn follows the saved
// mode without a restart. Without the key it says how to allow it.
func TestGatewayVerboseCyclesTheToolProgress(t *testing.T) {
	t.Parallel()
	tg := gatewaytest.NewTelegram(t, cliTGToken)
	home, cfg := telegramHome(t, tg)
	gw, logs := gatewayRun(t, home)
	waitFor(t, "the gateway connected", 30*time.Second, func() bool { return strings.Contains(logs.String(), `"state":"connected"`) })
	sent := sentBy(t, tg)
	tg.Push(42, "Ada", 42, "private", "/verbose")
	if got := sent(1); got != gateway.VerboseOff {
		t.Fatalf("/verbose without the key: %q", got)
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg+"display:\n  tool_progress_command: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tg.Push(42, "Ada", 42, "private", "/verbose")
	if got := sent(2); got != "⚙️ Tool progress: verbose (each tool call with its arguments), for every chat of this profile." {
		t.Fatalf("/verbose from all: %q", got)
	}
	tg.Push(42, "Ada", 42, "private", `use tool echo: {"text": "hi"}`)
	if got := sent(3); got != "⚙️ echo(text)\n{\"text\":\"hi\"}" {
		t.Fatalf("the progress line in verbose: %q", got)
	}
	sent(4) // the reply
	tg.Push(42, "Ada", 42, "private", "/verbose")
	if got := sent(5); !strings.HasPrefix(got, "⚙️ Tool progress: off (") {
		t.Fatalf("/verbose from verbose: %q", got)
	}
	if r := atrium(t, home, "config", "show", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"tool_progress": "off"`) {
		t.Fatalf("config.yaml after /verbose: %+v", r)
	}
	tg.Push(42, "Ada", 42, "private", `use tool echo: {"text": "quiet"}`)
	if got := sent(6); got != "The tool echo returned: quiet" {
		t.Fatalf("with the progress off, the chat got %q", got)
	}
	_ = gw.Process.Signal(syscall.SIGTERM)
	_ = gw.Wait()
}

// display.platforms.<platform>.tool_progress wins over display's own for
// that platform, as in the familiar agent; /verbose there steps the
// platform's own key, which would otherwise hide the change.
func TestGatewayToolProgressPerPlatform(t *testing.T) {
	t.Parallel()
	tg := gatewaytest.NewTelegram(t, cliTGToken)
	home, cfg := telegramHome(t, tg)
	cfg += "display:\n  tool_progress: all\n  tool_progress_command: true\n  platforms:\n    telegram:\n      tool_progress: \"off\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	gw, logs := gatewayRun(t, home)
	waitFor(t, "the gateway connected", 30*time.Second, func() bool { return strings.Contains(logs.String(), `"state":"connected"`) })
	sent := sentBy(t, tg)
	tg.Push(42, "Ada", 42, "private", `use tool echo: {"text": "quiet"}`)
	if got := sent(1); got != "The tool echo returned: quiet" {
		t.Fatalf("telegram's own off: the chat got %q", got)
	}
	tg.Push(42, "Ada", 42, "private", "/verbose")
	if got := sent(2); !strings.HasPrefix(got, "⚙️ Tool progress: new (") {
		t.Fatalf("/verbose from telegram's off: %q", got)
	}
	var shown struct {
		Settings struct {
			Display struct {
				ToolProgress string `json:"tool_progress"`
				Platforms    map[string]struct {
					ToolProgress string `json:"tool_progress"`
				} `json:"platforms"`
			} `json:"display"`
		} `json:"settings"`
		Warnings []string `json:"warnings"`
	}
	mustJSON(t, atrium(t, home, "config", "show", "--json"), &shown)
	if d := shown.Settings.Display; d.ToolProgress != "all" || d.Platforms["telegram"].ToolProgress != "new" || len(shown.Warnings) != 0 {
		t.Fatalf("config.yaml after /verbose: %+v %q", d, shown.Warnings)
	}
	tg.Push(42, "Ada", 42, "private", `use tool echo: {"text": "seen"}`)
	if got := sent(3); got != `⚙️ echo: "seen"` {
		t.Fatalf("telegram's new: the chat got %q", got)
	}
	_ = gw.Process.Signal(syscall.SIGTERM)
	_ = gw.Wait()
}

// Slack as the familiar gateway runs it: Socket Mode with the bot token
// and the app-level token kept in the profile's .env under their familiar
// names, nothing listening on this machine. `atrium gateway run` connects,
// answers a message pushed down the socket, and never logs a token.
func TestGatewayRunSlackSocketMode(t *testing.T) {
	t.Parallel()
	const bot, app = "xoxb-cli-socket-test", "xapp-1-cli-socket-test"
	api := gatewaytest.NewSlackAPI(t, bot)
	api.EnableSocketMode(app)
	home := t.TempDir()
	cfg := fmt.Sprintf("gateway:\n  slack:\n    api_url: %s/api\n    allowed_users: [U1]\n", api.URL)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	familiarEnv(t, home, "SLACK_BOT_TOKEN="+bot+"\nSLACK_APP_TOKEN="+app+"\n")
	cmd, logs := gatewayRun(t, home)
	waitFor(t, "connected over Socket Mode", 30*time.Second, func() bool {
		return strings.Contains(logs.String(), `"state":"connected"`) && strings.Contains(logs.String(), "over Socket Mode")
	})
	api.SocketPush("events_api", gatewaytest.SlackMessage("U1", "D1", "im", "hello from slack"))
	waitFor(t, "the reply", 30*time.Second, func() bool { return len(api.Texts()) == 1 })
	if got := api.Posted()[0]; got["channel"] != "D1" || got["text"] != "offline reply to: hello from slack" {
		t.Fatalf("the reply: %v", got)
	}
	st := atriumExec(t, home, "", nil, "gateway", "status") // a process of its own: the .env's tokens stay out of this one
	if st.code != 0 || !strings.Contains(st.stdout, "over Socket Mode") {
		t.Fatalf("status: %+v", st)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if l := logs.String(); strings.Contains(l, bot) || strings.Contains(l, app) {
		t.Fatal("a token reached the log")
	}
}

// `atrium gateway run` on Discord, its token in the familiar .env: it
// connects to the gateway's WebSocket, answers a DM, and behaves in a
// server as the .env's DISCORD_* and the familiar discord: section say
// (a free-response channel answered inline, without a mention; no
// reactions).
func TestGatewayRunDiscord(t *testing.T) {
	t.Parallel()
	const token = "discord-cli-test-token"
	f := gatewaytest.NewDiscord(t, token)
	f.AddChannel("700", 1, "", "", "")
	f.AddChannel("800", 0, "50", "", "")
	home := t.TempDir()
	cfg := fmt.Sprintf("gateway:\n  discord:\n    api_url: %s\n    allowed_users: [4242]\ndiscord:\n  reactions: false\n", f.APIURL())
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	familiarEnv(t, home, "DISCORD_BOT_TOKEN="+token+"\nDISCORD_FREE_RESPONSE_CHANNELS=800\n")
	cmd, logs := gatewayRun(t, home)
	waitFor(t, "connected to Discord", 30*time.Second, func() bool {
		return strings.Contains(logs.String(), `"state":"connected"`) && strings.Contains(logs.String(), "on Discord's gateway") && f.Live() == 1
	})
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("m1", "700", "", "4242", "ada", "hello from discord"))
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("m2", "800", "50", "4242", "ada", "no mention here"))
	waitFor(t, "both replies", 30*time.Second, func() bool { return len(f.Posted()) == 2 })
	got := map[string]string{}
	for _, p := range f.Posted() {
		got[p.Channel] = p.Content
	}
	if got["700"] != "offline reply to: hello from discord" || got["800"] != "offline reply to: no mention here" {
		t.Fatalf("the replies: %+v", f.Posted())
	}
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, "react") {
			t.Fatalf("a reaction with reactions: false: %q", f.Calls())
		}
	}
	_, cmds := f.Commands()
	var names []string
	for _, c := range cmds {
		names = append(names, c["name"].(string))
	}
	for _, want := range []string{"new", "help", "stop", "approve", "whoami"} {
		if !slices.Contains(names, want) {
			t.Fatalf("/%s is not among the slash commands: %q", want, names)
		}
	}
	st := atriumExec(t, home, "", nil, "gateway", "status")
	if st.code != 0 || !strings.Contains(st.stdout, "@atrium-bot on Discord's gateway") {
		t.Fatalf("status: %+v", st)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if strings.Contains(logs.String(), token) {
		t.Fatal("the token reached the log")
	}
}

// A home brought from the familiar agent, its platforms in .env alone:
// `gateway status` lists Telegram with the users TELEGRAM_ALLOWED_USERS
// lets in, and says what Atrium does not honour; with no token at all it
// says both ways to configure one.
func TestGatewayStatusOfTheFamiliarEnv(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	familiarEnv(t, home, "TELEGRAM_BOT_TOKEN=123456:familiar-env-token\nTELEGRAM_ALLOWED_USERS=42,43\nGATEWAY_ALLOW_ALL_USERS=true\nTELEGRAM_HOME_CHANNEL=-1001234567890\n")
	// Processes of their own: the .env's token stays out of this one.
	st := atriumExec(t, home, "", nil, "gateway", "status", "--json")
	var rep struct {
		Adapters []struct {
			Platform     string   `json:"platform"`
			AllowedUsers []string `json:"allowed_users"`
			SecretEnv    []string `json:"secret_env"`
			MissingEnv   []string `json:"missing_env"`
		} `json:"adapters"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &rep); err != nil || st.code != 0 {
		t.Fatalf("status: %v %+v", err, st)
	}
	if len(rep.Adapters) != 1 || rep.Adapters[0].Platform != "telegram" || strings.Join(rep.Adapters[0].AllowedUsers, ",") != "42,43" ||
		strings.Join(rep.Adapters[0].SecretEnv, ",") != "TELEGRAM_BOT_TOKEN" || len(rep.Adapters[0].MissingEnv) != 0 {
		t.Fatalf("adapters: %+v", rep.Adapters)
	}
	if len(rep.Notes) != 1 || !strings.HasPrefix(rep.Notes[0], "GATEWAY_ALLOW_ALL_USERS is not honoured") {
		t.Fatalf("notes: %q", rep.Notes)
	}
	if plain := atriumExec(t, home, "", nil, "gateway", "status"); !strings.Contains(plain.stdout, "note: GATEWAY_ALLOW_ALL_USERS is not honoured") ||
		!strings.Contains(plain.stdout, "home channel on telegram: -1001234567890 (config)") || strings.Contains(plain.stdout, "familiar-env-token") {
		t.Fatalf("plain status: %+v", plain)
	}
	empty := t.TempDir()
	if st := atrium(t, empty, "gateway", "status"); !strings.Contains(st.stdout, "or keep the familiar agent's TELEGRAM_BOT_TOKEN") {
		t.Fatalf("nothing configured: %+v", st)
	}
}

// familiarEnv writes home's .env, holding the familiar agent's names for a
// platform's credentials, which only child processes may read: it is
// removed before the in-process stop of home's plugin host at cleanup
// (which would load it into this process, where every parallel test's
// in-process command would find a platform to run).
func familiarEnv(t *testing.T, home, text string) {
	t.Helper()
	stopHostAtCleanup(t, home) // its cleanup runs after the one below
	path := filepath.Join(home, ".env")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(path) })
}

// `atrium gateway run` with files both ways: a photo a person sends is
// saved in the profile's cache/gateway folder, looked at by
// auxiliary.vision's model and the agent told what it shows and where it
// is, in the familiar gateway's words;
// gateway.max_file_mb bounds what is fetched; the reply's MEDIA: tag sends
// a file, and one naming the profile's .env or a system file is refused in
// the text.
func TestGatewayRunFiles(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var asked []string
	var looked []visionCall
	home, work := t.TempDir(), t.TempDir()
	chart := filepath.Join(work, "chart.png")
	if err := os.WriteFile(chart, []byte("PNG-chart"), 0o600); err != nil {
		t.Fatal(err)
	}
	photo := tinyPNG(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/vision/") {
			call := readVisionCall(t, r)
			mu.Lock()
			looked = append(looked, call)
			mu.Unlock()
			writeAnswer(w, map[string]any{"role": "assistant", "content": "A red square on white."})
			return
		}
		req := readChat(r)
		mu.Lock()
		asked = append(asked, req.Messages[len(req.Messages)-1].Content)
		mu.Unlock()
		writeAnswer(w, map[string]any{"role": "assistant", "content": "Here.\nMEDIA:" + filepath.Join(home, ".env") + "\nMEDIA:/etc/passwd\nMEDIA:" + chart})
	}))
	defer srv.Close()
	tg := gatewaytest.NewTelegram(t, cliTGToken)
	cfg := fmt.Sprintf("model:\n  provider: custom\n  base_url: %s/v1\n  default: m\n  api_key_env: ATRIUM_T_FILES_KEY\n"+
		"auxiliary:\n  vision:\n    base_url: %s/vision/v1\n    model: eyes\n    api_key_env: ATRIUM_T_FILES_KEY\n"+
		"gateway:\n  max_file_mb: 0.001\n  telegram:\n    token_env: TG_TEST_TOKEN\n    base_url: %s\n    allowed_users: [42]\n    poll_timeout_seconds: 1\n", srv.URL, srv.URL, tg.URL)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".env"), []byte("ATRIUM_T_FILES_KEY=sk-files\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, logs := gatewayRun(t, home)
	waitFor(t, "the gateway connected", 30*time.Second, func() bool { return strings.Contains(logs.String(), `"state":"connected"`) })

	tg.PushFile(42, "Ada", 42, "private", "what is this?", "photo", nil, photo)
	tg.PushFile(42, "Ada", 42, "private", "", "document", map[string]any{"file_name": "big.bin"}, bytes.Repeat([]byte("b"), 2048))
	waitFor(t, "both replies and their files", 30*time.Second, func() bool { return len(tg.SentTexts()) == 2 && len(tg.Uploads()) == 2 })
	if got := tg.SentTexts()[0]; got != "Here.\n\n⚠️ Could not send .env: it holds the profile's configuration or secrets\n⚠️ Could not send passwd: files are never sent from /etc" {
		t.Fatalf("reply %q", got)
	}
	if u := tg.Uploads()[0]; u.Method != "sendPhoto" || string(u.Data) != "PNG-chart" {
		t.Fatalf("upload %+v", u)
	}
	mu.Lock()
	defer mu.Unlock()
	dir := filepath.Join(home, "cache", "gateway", "telegram")
	prefix := "[The user sent an image~ Here's what I can see:\nA red square on white.]\n[If you need a closer look, use vision_analyze with image_url: "
	if len(asked) != 2 || !strings.HasPrefix(asked[0], prefix+dir+string(filepath.Separator)) || !strings.HasSuffix(asked[0], " ~]\n\nwhat is this?") {
		t.Fatalf("the model was asked %q", asked)
	}
	saved := strings.TrimSuffix(strings.TrimPrefix(asked[0], prefix), " ~]\n\nwhat is this?")
	if b, err := os.ReadFile(saved); err != nil || !bytes.Equal(b, photo) {
		t.Fatalf("the saved photo %q: %q %v", saved, b, err)
	}
	if len(looked) != 1 {
		t.Fatalf("the vision model was asked %d times", len(looked))
	}
	want := visionCall{Path: "/vision/v1/chat/completions", Auth: "Bearer sk-files", Model: "eyes", Temperature: 0.1, Prompt: gateway.DescribeImagePrompt,
		Image: "data:image/png;base64," + base64.StdEncoding.EncodeToString(photo)}
	if looked[0] != want {
		t.Fatalf("the vision model was asked\n%+v\nwant\n%+v", looked[0], want)
	}
	if !strings.HasPrefix(asked[1], "[The user sent a file: 'big.bin' (2 KB). It was not saved: the gateway takes files up to 1 KB.]") {
		t.Fatalf("the large file's note %q", asked[1])
	}
	if tg.Downloads() != 1 || strings.Contains(logs.String(), cliTGToken) {
		t.Fatalf("%d downloads (want 1); or the token was logged", tg.Downloads())
	}
}
