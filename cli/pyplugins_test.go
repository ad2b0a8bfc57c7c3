package cli_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func writePlugin(t *testing.T, dir, name, hooks, code string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := "name: " + name + "\nruntime: python\nversion: 0.0.1\nhooks: " + hooks + "\n"
	if err := os.WriteFile(filepath.Join(p, "plugin.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "__init__.py"), []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
}

// withPlugin makes a home with one Python plugin installed and enabled,
// each step through its own atrium process.
func withPlugin(t *testing.T, name, hooks, code string) string {
	t.Helper()
	home, src := t.TempDir(), t.TempDir()
	writePlugin(t, src, name, hooks, code)
	if r := atriumExec(t, home, "", nil, "plugins", "install", filepath.Join(src, name)); r.code != 0 {
		t.Fatalf("install %s: %+v", name, r)
	}
	if r := atriumExec(t, home, "", nil, "plugins", "enable", name); r.code != 0 {
		t.Fatalf("enable %s: %+v", name, r)
	}
	return home
}

// The three example plugins of the plugin API, written as for the familiar
// Python plugin API of AI agents, installed and driven through the atrium
// command line, each command its own process.

// 1. Flag in post_compaction, re-inject at the next pre_llm_call (one
// process: chat, with /compress typed in the conversation).
func TestExampleMemoryPluginReinjectsRulesAfterACompaction(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := withPlugin(t, "pymemory", "[post_compaction, pre_llm_call]", `
flagged = set()

def register(ctx):
    def on_compaction(session_id, kind, **kwargs):
        if kind in ("summarize", "micro_summarize"):
            flagged.add(session_id)
    def pre_llm_call(session_id, **kwargs):
        if session_id in flagged:
            flagged.discard(session_id)
            return {"context": "RULES: the API lives at /v2/users"}
        return None
    ctx.register_hook("post_compaction", on_compaction)
    ctx.register_hook("pre_llm_call", pre_llm_call)
`)
	id := create(t, home, "--title", "py")
	lines := strings.Repeat("we decided the service owner is Grace and the deploy window is Friday evening after the review; "+
		strings.Repeat("the team went over the staging checklist once more and found nothing new to add. ", 3)+"\n", 6) +
		"/compress\nwhat is the endpoint?\nand again?\n"
	r := atriumExec(t, home, lines, nil, "chat", id)
	if r.code != 0 {
		t.Fatalf("chat: %+v", r)
	}
	replies := strings.Split(strings.TrimSpace(r.stdout), "\n")
	seen := 0
	for _, l := range replies {
		if strings.Contains(l, "(context seen)") {
			seen++
		}
	}
	if seen == 0 || !strings.Contains(r.stdout, "continues in") {
		t.Fatalf("the rules never reached the model after the compaction:\n%s", r.stdout)
	}
	var msgs []struct {
		Content     string  `json:"content"`
		SentContent *string `json:"sent_content"`
	}
	tip := ""
	for _, l := range replies {
		if i := strings.Index(l, "continues in session "); i >= 0 {
			tip = strings.TrimSuffix(l[i+len("continues in session "):], ")")
		}
	}
	mustJSON(t, atrium(t, home, "messages", "list", tip, "--json"), &msgs)
	injected := 0
	for _, m := range msgs {
		if m.SentContent != nil && strings.Contains(*m.SentContent, "RULES:") {
			injected++
			if strings.Contains(m.Content, "RULES:") {
				t.Fatal("the stored clean content carries the injected rules")
			}
		}
	}
	if injected != 1 {
		t.Fatalf("rules injected %d times after one compaction, want exactly 1", injected)
	}
}

// 2. on_session_delete drops the plugin's per-session files, deleted_ids or
// [session_id]; `sessions delete` delivers before its process exits.
func TestExampleSidecarPluginDropsTheFilesOfEveryDeletedRow(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := withPlugin(t, "pysidecars", "[on_session_delete]", `
import os

def register(ctx):
    def on_delete(session_id, deleted_ids=None, **kwargs):
        for sid in deleted_ids or [session_id]:
            path = os.path.join(ctx.work_dir, sid + ".idx")
            if os.path.exists(path):
                os.remove(path)
    ctx.register_hook("on_session_delete", on_delete)
`)
	a, b, keep := create(t, home), create(t, home), create(t, home)
	child := create(t, home, "--parent", a, "--relation", "delegate")
	work := filepath.Join(home, "plugins-data", "pysidecars")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{a, b, keep, child} {
		if err := os.WriteFile(filepath.Join(work, s+".idx"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := atriumExec(t, home, "", nil, "sessions", "delete", a, b); r.code != 0 {
		t.Fatalf("delete: %+v", r)
	}
	for s, want := range map[string]bool{a: false, b: false, child: false, keep: true} {
		if _, err := os.Stat(filepath.Join(work, s+".idx")); (err == nil) != want {
			t.Fatalf("sidecar of %s: exists=%v, want %v", s, err == nil, want)
		}
	}
	// The plugin runs in the profile's background host, which the first
	// delete started: the next delete reaches the same instance.
	if r := atriumExec(t, home, "", nil, "sessions", "delete", keep); r.code != 0 {
		t.Fatalf("second delete: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(work, keep+".idx")); err == nil {
		t.Fatal("the launched plugin missed the second delete")
	}
	var rows []struct {
		Name       string   `json:"name"`
		State      string   `json:"state"`
		Hooks      []string `json:"hooks"`
		Registered bool     `json:"registered"`
		Process    string   `json:"process"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "plugins", "list", "--json"), &rows)
	for _, p := range rows {
		if p.Name == "pysidecars" && (p.State != "running" || p.Process != "a background host" || !p.Registered ||
			len(p.Hooks) != 1 || p.Hooks[0] != "on_session_delete") {
			t.Fatalf("after the commands ended: %+v", p)
		}
	}
	// Once the host stops, the plugin is stopped, with what it registered.
	if r := atriumExec(t, home, "", nil, "plugins", "host", "stop"); r.code != 0 {
		t.Fatalf("host stop: %+v", r)
	}
	mustJSON(t, atriumExec(t, home, "", nil, "plugins", "list", "--json"), &rows)
	for _, p := range rows {
		if p.Name == "pysidecars" && (p.State != "stopped" || !p.Registered || len(p.Hooks) != 1) {
			t.Fatalf("after the host stopped: %+v", p)
		}
	}
}

// 3. A command that knows its session; with no source (the command line)
// it reports the local user.
func TestExampleWhoamiCommandKnowsItsSession(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := withPlugin(t, "pywho", "[]\ncommands: [pywho]", `
def register(ctx):
    def whoami(raw_args, source=None, session_id=None, platform=None):
        who = source.user_id if source is not None else "local user"
        return f"{who} on {platform} in {session_id}"
    ctx.register_command("pywho", handler=whoami, description="who am I")
`)
	keep := create(t, home)
	if r := atriumExec(t, home, "", nil, "send", keep, "/pywho"); r.code != 0 || !strings.Contains(r.stdout, "local user on cli in "+keep) {
		t.Fatalf("/pywho: %+v", r)
	}
}

// ATRIUM_BUNDLED_PLUGINS replaces the embedded bundled plugins.
func TestBundledPluginsFolderFromTheEnvironment(t *testing.T) {
	t.Parallel()
	home, bundled := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(bundled, "only-mine"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bundled, "only-mine", "plugin.yaml"), []byte("name: only-mine\nruntime: command\ncommand: [./run]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Name   string `json:"name"`
		Source string `json:"source"`
	}
	mustJSON(t, atriumExec(t, home, "", []string{"ATRIUM_BUNDLED_PLUGINS=" + bundled}, "plugins", "list", "--json"), &rows)
	if len(rows) != 1 || rows[0].Name != "only-mine" || rows[0].Source != "bundled" {
		t.Fatalf("plugins with ATRIUM_BUNDLED_PLUGINS: %+v", rows)
	}
}

// Atrium's own pre_turn_end, from a Python plugin: {"action": "continue",
// "message"} keeps the turn going with that instruction; the plugin sees
// how many times it already did (continues) and lets the turn end.
func TestAPythonPluginKeepsTheTurnGoing(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := withPlugin(t, "pyverify", "[pre_turn_end]", `
def register(ctx):
    # Written as for the familiar pre_verify: its argument names and its
    # Claude-shaped directive.
    def verify(session_id, attempt, final_response, coding, changed_paths, **kwargs):
        if attempt == 0 and "verified" not in final_response and not coding and changed_paths == []:
            return {"decision": "block", "reason": "Verify the numbers before you stop.", "note": "asked to verify"}
        return None
    ctx.register_hook("pre_turn_end", verify)
`)
	id := create(t, home, "--title", "verify")
	r := atriumExec(t, home, "", nil, "send", id, "sum the invoices")
	if r.code != 0 || !strings.Contains(r.stdout, "the agent was told:)\nVerify the numbers before you stop.") ||
		!strings.Contains(r.stdout, "offline reply to: Verify the numbers") || !strings.Contains(r.stdout, "(asked to verify)") {
		t.Fatalf("send: %+v", r)
	}
	var msgs []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	mustJSON(t, atrium(t, home, "messages", "list", id, "--json"), &msgs)
	if len(msgs) != 4 || msgs[2].Role != "user" || msgs[2].Content != "Verify the numbers before you stop." || msgs[3].Role != "assistant" {
		t.Fatalf("stored: %+v", msgs)
	}
}

// A Python plugin answers pre_approval_decision in the place of whoever
// would approve a call (a scheduled run that approves, here): its deny
// blocks the call with its message, its allow rewrites the arguments. The
// rule_key of pre_tool_call's approve names the rule (pattern_key).
func TestAPythonPluginAnswersAnApproval(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := withPlugin(t, "pypolicy", "[pre_tool_call, pre_approval_decision]", `
def register(ctx):
    def guard(tool_name, args, **kwargs):
        if tool_name == "echo":
            return {"action": "approve", "message": "echo needs a yes", "rule_key": " echo:text "}
    def policy(tool_name, args, surface, pattern_key, **kwargs):
        if "secret" in args.get("text", ""):
            return {"action": "deny", "message": "secrets stay home (" + surface + ", " + pattern_key + ")"}
        return {"action": "allow", "args": {"text": args["text"] + "!"}}
    ctx.register_hook("pre_tool_call", guard)
    ctx.register_hook("pre_approval_decision", policy)
`)
	path := filepath.Join(home, "config.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, "approvals:\n  cron_mode: approve\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, text, reply string }{
		{"leak", "the secret", `The tool echo returned: {"error":"secrets stay home (cron, plugin_rule:echo:text)"}`},
		{"greet", "hello", "The tool echo returned: hello!"},
	} {
		if reply := cronOnce(t, home, c.name, "use tool echo: "+c.text); !strings.HasPrefix(reply, c.reply) {
			t.Fatalf("%s: reply %q, want %q", c.name, reply, c.reply)
		}
	}
}

// Two conversations call one plugin's tool at once, each from its own
// atrium send; Ctrl+C stops the first. Its call is cancelled in the plugin
// (the tool sees tools.interrupt and says why), the second call goes on and
// its turn ends well, and the plugin process is the same one throughout:
// a stop no longer restarts the plugin under every other conversation.
func TestStoppingOneTurnLeavesTheOtherConversationsPluginCall(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := withPlugin(t, "pyhold", "[]", `
import os, time
from tools.interrupt import is_interrupted, get_interrupt_reason

def hold(args, **kw):
    d, me = args["dir"], args["me"]
    open(os.path.join(d, me + ".started"), "w").close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if is_interrupted():
            with open(os.path.join(d, me + ".interrupted"), "w") as f:
                f.write(get_interrupt_reason() or "")
            return "stopped"
        until = args.get("until")
        if until and os.path.exists(os.path.join(d, until)):
            return "%s went on" % me
        time.sleep(0.02)
    return "%s ran out" % me

def register(ctx):
    ctx.register_tool(name="hold", toolset="t", handler=hold,
                      schema={"name": "hold", "description": "holds", "parameters": {"type": "object"}})
`)
	stopHostAtCleanup(t, home)
	dir := t.TempDir()
	a, b := create(t, home, "--title", "a"), create(t, home, "--title", "b")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	send := func(id, args string) (*exec.Cmd, *lockedBuf) {
		cmd := exec.Command(exe, "send", id, "use tool hold: "+args, "--home", home)
		cmd.Env = append(os.Environ(), "ATRIUM_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
		var out lockedBuf
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	ca, outA := send(a, fmt.Sprintf(`{"dir": %q, "me": "a"}`, dir))
	waitFor(t, "a's call", 60*time.Second, func() bool { return exists("a.started") })
	pidOf := func() (int, int) {
		var rows []struct {
			Name     string `json:"name"`
			PID      int    `json:"pid"`
			Restarts int    `json:"restarts"`
		}
		mustJSON(t, atriumExec(t, home, "", nil, "plugins", "list", "--json"), &rows)
		for _, p := range rows {
			if p.Name == "pyhold" {
				return p.PID, p.Restarts
			}
		}
		t.Fatal("pyhold is not listed")
		return 0, 0
	}
	pid, _ := pidOf()
	cb, outB := send(b, fmt.Sprintf(`{"dir": %q, "me": "b", "until": "a.interrupted"}`, dir))
	waitFor(t, "b's call beside a's", 60*time.Second, func() bool { return exists("b.started") })
	if err := ca.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := ca.Wait(); err == nil || !strings.Contains(outA.String(), "stopped (Ctrl+C)") {
		t.Fatalf("a: %v\n%s", err, outA.String())
	}
	if err := cb.Wait(); err != nil {
		t.Fatalf("b: %v\n%s", err, outB.String())
	}
	why, err := os.ReadFile(filepath.Join(dir, "a.interrupted"))
	if err != nil || !strings.Contains(string(why), "user_stop") {
		t.Fatalf("a's call was not told it was stopped: %q %v", why, err)
	}
	if msgs, ok := toolResultSays(t, home, b, "b went on"); !ok {
		t.Fatalf("b's transcript: %+v", msgs)
	}
	if now, restarts := pidOf(); now != pid || restarts != 0 {
		t.Fatalf("the plugin was restarted: pid %d -> %d, %d restarts", pid, now, restarts)
	}
}

// echoNeedsAYes is a plugin that wants every call of echo approved.
const echoNeedsAYes = `
def register(ctx):
    def guard(tool_name, args, **kwargs):
        if tool_name == "echo":
            return {"action": "approve", "message": "echo needs a yes"}
    ctx.register_hook("pre_tool_call", guard)
`

// On a terminal, a chat asks the person before a call a plugin wants
// approved: "y" runs it; Ctrl+C at the question stops the turn at once
// (it no longer waits for Enter), the call is answered as stopped, and the
// chat goes on; "s" runs it and the plugin's later asks about the tool in
// this session run without asking.
func TestCtrlCAtAnApprovalQuestionStopsTheTurn(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := withPlugin(t, "pyasks", "[pre_tool_call]", echoNeedsAYes)
	stopHostAtCleanup(t, home)
	id := create(t, home, "--title", "asks")
	cmd, in, out := chatOnATerminal(t, id, home)
	asked := func(n int) func() bool {
		return func() bool { return strings.Count(out.String(), "Run it? [y/N") >= n }
	}
	_, _ = io.WriteString(in, "use tool echo: first\n")
	waitFor(t, "the first question", 60*time.Second, asked(1))
	_, _ = io.WriteString(in, "y\n")
	waitFor(t, "the first reply", 30*time.Second, func() bool { return strings.Contains(out.String(), "returned: first") })
	_, _ = io.WriteString(in, "use tool echo: second\n")
	waitFor(t, "the second question", 30*time.Second, asked(2))
	_, _ = io.WriteString(in, "\x03") // Ctrl+C, no Enter
	waitFor(t, "the stopped turn", 30*time.Second, func() bool { return strings.Contains(out.String(), "(stopped") })
	_, _ = io.WriteString(in, "use tool echo: third\n")
	waitFor(t, "the third question", 30*time.Second, asked(3))
	_, _ = io.WriteString(in, "s\n")
	waitFor(t, "the third reply", 30*time.Second, func() bool { return strings.Contains(out.String(), "returned: third") })
	_, _ = io.WriteString(in, "use tool echo: fourth\n")
	waitFor(t, "the fourth reply", 30*time.Second, func() bool { return strings.Contains(out.String(), "returned: fourth") })
	if n := strings.Count(out.String(), "Run it? [y/N"); n != 3 {
		t.Fatalf("asked %d times:\n%s", n, out.String())
	}
	_, _ = io.WriteString(in, "/exit\n")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chat: %v\n%s", err, out.String())
	}
	if msgs, ok := toolResultSays(t, home, id, "the turn was stopped while echo waited for approval"); !ok {
		t.Fatalf("stored: %+v", msgs)
	}
	var evs []struct {
		Payload struct {
			Reason string `json:"reason"`
			Choice string `json:"choice"`
		} `json:"payload"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "events", "list", "--json", "--hook", "agent_loop_stopped"), &evs)
	if len(evs) != 1 || evs[0].Payload.Reason != "user_stop" {
		t.Fatalf("agent_loop_stopped: %+v", evs)
	}
	mustJSON(t, atriumExec(t, home, "", nil, "events", "list", "--json", "--hook", "post_approval_response"), &evs)
	if len(evs) != 3 || evs[0].Payload.Choice != "once" || evs[1].Payload.Choice != "deny" || evs[2].Payload.Choice != "session" {
		t.Fatalf("post_approval_response: %+v", evs)
	}
}

// "a" at a terminal's question allows the rule the plugin named from now
// on: it is in config.yaml's command_allowlist (`approvals list`), and a
// scheduled run, which has nobody to ask, runs the call; revoked, it is
// blocked there again; `approvals allow` allows it by hand.
func TestAnAlwaysAtATerminalStandsForScheduledRuns(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := withPlugin(t, "pyrule", "[pre_tool_call]", `
def register(ctx):
    def guard(tool_name, args, **kwargs):
        if tool_name == "echo":
            return {"action": "approve", "message": "echo needs a yes", "rule_key": "echo-safe"}
    ctx.register_hook("pre_tool_call", guard)
`)
	stopHostAtCleanup(t, home)
	id := create(t, home, "--title", "always")
	cmd, in, out := chatOnATerminal(t, id, home)
	_, _ = io.WriteString(in, "use tool echo: first\n")
	waitFor(t, "the question", 60*time.Second, func() bool { return strings.Contains(out.String(), "a: and from now on (plugin_rule:echo-safe)]") })
	_, _ = io.WriteString(in, "a\n")
	waitFor(t, "the reply", 30*time.Second, func() bool { return strings.Contains(out.String(), "returned: first") })
	_, _ = io.WriteString(in, "/exit\n")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chat: %v\n%s", err, out.String())
	}
	var list struct {
		Rules []string `json:"rules"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "approvals", "list", "--json"), &list)
	if fmt.Sprint(list.Rules) != "[plugin_rule:echo-safe]" {
		t.Fatalf("approvals list: %+v", list)
	}
	if reply := cronOnce(t, home, "standing", "use tool echo: scheduled"); !strings.HasPrefix(reply, "The tool echo returned: scheduled") {
		t.Fatalf("a scheduled run with the rule allowed: %q", reply)
	}
	if r := atriumExec(t, home, "", nil, "approvals", "revoke", "plugin_rule:echo-safe"); r.code != 0 || !strings.Contains(r.stdout, "revoked plugin_rule:echo-safe") {
		t.Fatalf("revoke: %+v", r)
	}
	if r := atriumExec(t, home, "", nil, "approvals", "revoke", "plugin_rule:echo-safe"); r.code == 0 || !strings.Contains(r.stderr, "is not a standing approval") {
		t.Fatalf("a second revoke: %+v", r)
	}
	if reply := cronOnce(t, home, "revoked", "use tool echo: scheduled"); !strings.Contains(reply, "BLOCKED: plugin approval required for echo") {
		t.Fatalf("a scheduled run after the revoke: %q", reply)
	}
	if r := atriumExec(t, home, "", nil, "approvals", "allow", "plugin_rule:echo-safe"); r.code != 0 {
		t.Fatalf("allow: %+v", r)
	}
	if reply := cronOnce(t, home, "by-hand", "use tool echo: again"); !strings.HasPrefix(reply, "The tool echo returned: again") {
		t.Fatalf("a scheduled run with the rule allowed by hand: %q", reply)
	}
	var evs []struct {
		Payload struct {
			Choice     string `json:"choice"`
			PatternKey string `json:"pattern_key"`
		} `json:"payload"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "events", "list", "--json", "--hook", "post_approval_response"), &evs)
	if len(evs) != 1 || evs[0].Payload.Choice != "always" || evs[0].Payload.PatternKey != "plugin_rule:echo-safe" {
		t.Fatalf("post_approval_response: %+v", evs)
	}

	// A list broken by hand: "a" is refused, saying why, and the question
	// is asked again.
	path := filepath.Join(home, "config.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(b), "command_allowlist:\n  - plugin_rule:echo-safe", "command_allowlist:\n  - {rule: echo-safe}", 1)
	if broken == string(b) {
		t.Fatalf("config.yaml as written:\n%s", b)
	}
	if err := os.WriteFile(path, []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, in, out = chatOnATerminal(t, create(t, home, "--title", "broken list"), home)
	_, _ = io.WriteString(in, "use tool echo: broken\n")
	waitFor(t, "the question", 60*time.Second, func() bool { return strings.Contains(out.String(), "Run it? [y/N") })
	_, _ = io.WriteString(in, "a\n")
	waitFor(t, "the refusal", 30*time.Second, func() bool { return strings.Contains(out.String(), "always cannot be kept now (") })
	_, _ = io.WriteString(in, "y\n")
	waitFor(t, "the reply", 30*time.Second, func() bool { return strings.Contains(out.String(), "returned: broken") })
	_, _ = io.WriteString(in, "/exit\n")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chat: %v\n%s", err, out.String())
	}
}

// The familiar agent's approvals block works as it says, without a
// warning: approvals.timeout bounds a terminal's question (silence is a
// no), and approvals.mode: off, set by `atrium approvals mode off` from
// another process, runs the open chat's next ask and a scheduled run's
// unasked; bad values are refused.
func TestTheFamiliarApprovalsBlock(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := withPlugin(t, "pyask", "[pre_tool_call]", echoNeedsAYes)
	stopHostAtCleanup(t, home)
	path := filepath.Join(home, "config.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, "approvals:\n  mode: manual\n  timeout: 1\n  cron_mode: deny\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := atriumExec(t, home, "", nil, "sessions", "list"); r.code != 0 || strings.Contains(r.stderr, "warning") {
		t.Fatalf("sessions list: %+v", r)
	}
	cmd, in, out := chatOnATerminal(t, create(t, home, "--title", "silent"), home)
	_, _ = io.WriteString(in, "use tool echo: unanswered\n")
	waitFor(t, "the timeout", 60*time.Second, func() bool { return strings.Contains(out.String(), "no answer within 1s: echo was not run") })
	waitFor(t, "the reply", 30*time.Second, func() bool { return strings.Contains(out.String(), "(no answer in time)") })
	if reply := cronOnce(t, home, "manual", "use tool echo: scheduled"); !strings.Contains(reply, "BLOCKED: plugin approval required for echo") {
		t.Fatalf("a scheduled run, manual: %q", reply)
	}
	// Set from another process, the mode reaches the open chat at its
	// next ask, and the next scheduled run.
	if r := atriumExec(t, home, "", nil, "approvals", "mode", "off"); r.code != 0 || !strings.Contains(r.stdout, "mode: off") || !strings.Contains(r.stdout, "timeout: 1s") {
		t.Fatalf("approvals mode off: %+v", r)
	}
	_, _ = io.WriteString(in, "use tool echo: live\n")
	waitFor(t, "the unasked call", 30*time.Second, func() bool { return strings.Contains(out.String(), "The tool echo returned: live") })
	if n := strings.Count(out.String(), "Run it?"); n != 1 {
		t.Fatalf("asked %d times:\n%s", n, out.String())
	}
	_, _ = io.WriteString(in, "/exit\n")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chat: %v\n%s", err, out.String())
	}
	if reply := cronOnce(t, home, "off", "use tool echo: scheduled"); !strings.HasPrefix(reply, "The tool echo returned: scheduled") {
		t.Fatalf("a scheduled run, off: %q", reply)
	}
	for _, bad := range [][]string{{"mode", "sometimes"}, {"timeout", "3601"}, {"timeout", "NaN"}} {
		if r := atriumExec(t, home, "", nil, append([]string{"approvals"}, bad...)...); r.code == 0 || !strings.Contains(r.stderr, "not") {
			t.Fatalf("approvals %v: %+v", bad, r)
		}
	}
	var policy struct {
		Mode    string  `json:"mode"`
		Timeout float64 `json:"timeout_seconds"`
	}
	if r := atriumExec(t, home, "", nil, "approvals", "timeout", "0"); r.code != 0 || !strings.Contains(r.stdout, "timeout: default") {
		t.Fatalf("approvals timeout 0: %+v", r)
	}
	mustJSON(t, atriumExec(t, home, "", nil, "approvals", "mode", "--json"), &policy)
	if policy.Mode != "off" || policy.Timeout != 0 {
		t.Fatalf("approvals mode --json: %+v", policy)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "approvals:\n  mode: \"off\"\n  cron_mode: deny\n") && !strings.Contains(string(b), "approvals:\n  mode: off\n  cron_mode: deny\n") {
		t.Fatalf("config.yaml:\n%s", b)
	}
}

// A turn stopped while a plugin's tool_execution middleware wraps its call:
// the middleware's next_call raises (its callback unwinds, as in the
// familiar API when a call is interrupted) instead of waiting in the
// plugin for ever, and the plugin lives on.
func TestAStoppedCallUnwindsItsExecutionMiddleware(t *testing.T) {
	needPython(t)
	t.Parallel()
	dir := t.TempDir()
	home := withPlugin(t, "pywrap", "[]", fmt.Sprintf(`
import os, time
from tools.interrupt import is_interrupted

DIR = %q

def note(name, text=""):
    with open(os.path.join(DIR, name), "w") as f:
        f.write(text)

def hold(args, **kw):
    note("held")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not is_interrupted():
        time.sleep(0.02)
    return "held"

def timing(tool_name, args, next_call, **kw):
    try:
        return next_call(args)
    except Exception as exc:
        note("unwound", "%%s: %%s" %% (type(exc).__name__, exc))
        raise

def register(ctx):
    ctx.register_tool(name="hold", toolset="t", handler=hold,
                      schema={"name": "hold", "description": "holds", "parameters": {"type": "object"}})
    ctx.register_middleware("tool_execution", timing)
`, dir))
	stopHostAtCleanup(t, home)
	id := create(t, home, "--title", "wrapped")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "send", id, "use tool hold: {}", "--home", home)
	cmd.Env = append(os.Environ(), "ATRIUM_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
	var out lockedBuf
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the call under way", 60*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "held")); return err == nil })
	// (Written down for other processes once it has run a tenth of a second.)
	waitFor(t, "the stop", 30*time.Second, func() bool { return atriumExec(t, home, "", nil, "sessions", "stop", id).code == 0 })
	if err := cmd.Wait(); err == nil {
		t.Fatalf("send: %s", out.String())
	}
	var why []byte
	waitFor(t, "the middleware to unwind", 20*time.Second, func() bool {
		why, err = os.ReadFile(filepath.Join(dir, "unwound"))
		return err == nil
	})
	if !strings.Contains(string(why), "the turn was stopped: user_stop") {
		t.Fatalf("the middleware's next_call raised %q", why)
	}
	// The plugin was not restarted for it.
	var rows []struct {
		Name     string `json:"name"`
		Restarts int    `json:"restarts"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "plugins", "list", "--json"), &rows)
	for _, p := range rows {
		if p.Name == "pywrap" && p.Restarts != 0 {
			t.Fatalf("restarted %d times", p.Restarts)
		}
	}
}

type storedMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// toolResultSays reads session id's messages (atrium messages list) and
// says whether a tool result among them contains text.
func toolResultSays(t *testing.T, home, id, text string) ([]storedMessage, bool) {
	t.Helper()
	var msgs []storedMessage
	mustJSON(t, atriumExec(t, home, "", nil, "messages", "list", id, "--json"), &msgs)
	return msgs, slices.ContainsFunc(msgs, func(m storedMessage) bool { return m.Role == "tool" && strings.Contains(m.Content, text) })
}
