package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atrium/backend/hooks"
)

// shellHome is a profile whose config.yaml has hooks: (the scripts under
// hooks/ are written by the test).
func shellHome(t *testing.T, config string, scripts map[string]string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(home, "hooks", name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// lines reads a file a hook appended JSON lines to.
func jsonLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %q: %v", path, l, err)
		}
		out = append(out, m)
	}
	return out
}

// The familiar agent's shell hooks, end to end through the real binary
// and its background plugin host: nothing runs before consent; once
// approved, a pre_tool_call hook blocks in line, a pre_llm_call hook adds
// context, an on_session_delete hook gets every deletion once (none for a
// delete that fails); a revocation stops a hook without a restart.
func TestShellHooksOfTheFamiliarAgent(t *testing.T) {
	t.Parallel()
	home := shellHome(t, `
hooks:
  pre_tool_call:
    - command: ./hooks/guard.sh
      matcher: "echo|big_.*"
      timeout: 20
  pre_llm_call:
    - command: ./hooks/recall.sh
  on_session_delete:
    - command: "./hooks/log.sh deletes.jsonl"
  pre_tool_cal:
    - command: ./hooks/guard.sh
`, map[string]string{
		"guard.sh":  `in=$(cat); case "$in" in *secret*) echo '{"action": "block", "message": "the guard keeps secrets"}';; esac`,
		"recall.sh": `cat > /dev/null; echo '{"context": "[[context]] the deploy window is Friday"}'`,
		"log.sh":    `cat >> "$ATRIUM_HOME/$1"; echo >> "$ATRIUM_HOME/$1"`,
	})
	id := create(t, home, "--title", "guarded")
	r := atriumExec(t, home, "", nil, "send", id, `use tool echo: the secret plan`)
	if r.code != 0 || !strings.Contains(r.stdout, "The tool echo returned: the secret plan") ||
		!strings.Contains(r.stderr, "shell hook pre_tool_call → ./hooks/guard.sh is not approved, so it does not run") ||
		!strings.Contains(r.stderr, `unknown hook event "pre_tool_cal" in hooks: (did you mean "pre_tool_call"?)`) {
		t.Fatalf("before consent: %+v", r)
	}
	if r := atriumExec(t, home, "", nil, "hooks", "approve"); r.code != 0 || !strings.Contains(r.stdout, "approved 3 shell hook(s)") {
		t.Fatalf("approve: %+v", r)
	}
	r = atriumExec(t, home, "", nil, "send", id, `use tool echo: the secret plan`)
	if r.code != 0 || !strings.Contains(r.stdout, "the guard keeps secrets") || strings.Contains(r.stdout, "returned: the secret plan") ||
		strings.Contains(r.stderr, "not approved") {
		t.Fatalf("after consent: %+v", r)
	}
	if out := mustSend(t, home, id, "use tool echo: harmless"); !strings.Contains(out, "returned: harmless") {
		t.Fatalf("a call the guard lets through: %q", out)
	}
	if n, _ := sentWith(t, home, id, "the deploy window is Friday"); n != 2 {
		t.Fatalf("%d user turns carried the hook's context, want 2 (the approved turns)", n)
	}
	var list struct {
		Shell []struct {
			Name         string   `json:"name"`
			Approved     bool     `json:"approved"`
			RegisteredIn []string `json:"registered_in"`
		} `json:"shell"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "hooks", "list", "--json"), &list)
	rows := list.Shell
	if len(rows) != 3 {
		t.Fatalf("hooks list: %+v", rows)
	}
	for _, row := range rows {
		if !row.Approved || len(row.RegisteredIn) != 1 || !strings.Contains(row.RegisteredIn[0], "background host") {
			t.Fatalf("hooks list: %+v", rows)
		}
	}
	// Deletions: one line per deletion, with every removed id; a delete
	// that fails (the session is in the trash already) fires nothing.
	child := create(t, home, "--parent", id, "--relation", "delegate", "--title", "child")
	if r := atriumExec(t, home, "", nil, "sessions", "delete", id); r.code != 0 {
		t.Fatalf("delete: %+v", r)
	}
	if r := atriumExec(t, home, "", nil, "sessions", "delete", id); r.code != 0 || !strings.Contains(r.stdout, "already in the trash") {
		t.Fatalf("second delete: %+v", r)
	}
	other := create(t, home, "--title", "other")
	if r := atriumExec(t, home, "", nil, "sessions", "delete", other, "--now", "--yes"); r.code != 0 {
		t.Fatalf("delete --now: %+v", r)
	}
	got := jsonLines(t, filepath.Join(home, "deletes.jsonl"))
	if len(got) != 2 {
		t.Fatalf("%d deletion lines, want 2: %+v", len(got), got)
	}
	first, _ := got[0]["extra"].(map[string]any)
	if got[0]["hook_event_name"] != "on_session_delete" || got[0]["session_id"] != id || got[0]["profile"] != "default" ||
		got[0]["cwd"] != home || first["reason"] != "delete" || first["restorable"] != true {
		t.Fatalf("first deletion: %+v", got[0])
	}
	if ids, _ := first["deleted_ids"].([]any); len(ids) != 2 || ids[0] != id || ids[1] != child {
		t.Fatalf("deleted_ids %v, want [%s %s]", first["deleted_ids"], id, child)
	}
	if x, _ := got[1]["extra"].(map[string]any); got[1]["session_id"] != other || x["restorable"] != false {
		t.Fatalf("second deletion: %+v", got[1])
	}
	// Revoked: the running host lets go of it at its next look.
	if r := atriumExec(t, home, "", nil, "hooks", "revoke", "./hooks/guard.sh"); r.code != 0 {
		t.Fatalf("revoke: %+v", r)
	}
	if r := atriumExec(t, home, "", nil, "hooks", "revoke", "./hooks/guard.sh"); r.code != 3 {
		t.Fatalf("revoke twice: %+v", r)
	}
	id2 := create(t, home, "--title", "unguarded")
	if r := atriumExec(t, home, "", nil, "send", id2, `use tool echo: the secret plan`); !strings.Contains(r.stdout, "returned: the secret plan") {
		t.Fatalf("after revoke: %+v", r)
	}
	// doctor names the unknown event and the hook waiting for consent.
	r = atriumExec(t, home, "", nil, "hooks", "doctor")
	if r.code != 5 || !strings.Contains(r.stdout, `unknown hook event "pre_tool_cal"`) ||
		!strings.Contains(r.stdout, "pre_tool_call → ./hooks/guard.sh: not approved") || strings.Contains(r.stdout, "log.sh deletes.jsonl: ") {
		t.Fatalf("doctor: %+v", r)
	}
}

// A hook that hangs, crashes or is missing never takes a turn down: it
// fails open, unless it is a fail_closed pre_tool_call hook, which blocks.
func TestShellHooksThatFail(t *testing.T) {
	t.Parallel()
	home := shellHome(t, `
hooks_auto_accept: true
hooks:
  pre_tool_call:
    - command: ./hooks/hang.sh
      timeout: 1
      matcher: echo
    - command: ./hooks/missing.sh
      matcher: echo
    - command: ./hooks/crash.sh
      matcher: big_output
      fail_closed: true
  post_tool_call:
    - command: ./hooks/crash.sh
`, map[string]string{
		"hang.sh":  "sleep 60 & sleep 60\n",
		"crash.sh": "echo 'Traceback (most recent call last):'; exit 1\n",
	})
	id := create(t, home, "--title", "failing hooks")
	r := atriumExec(t, home, "", nil, "send", id, "use tool echo: still runs")
	if r.code != 0 || !strings.Contains(r.stdout, "returned: still runs") {
		t.Fatalf("fail open: %+v", r)
	}
	r = atriumExec(t, home, "", nil, "send", id, `use tool big_output: {"bytes": 10}`)
	if r.code != 0 || !strings.Contains(r.stdout, "hook ./hooks/crash.sh failed closed: unparseable stdout") {
		t.Fatalf("fail closed: %+v", r)
	}
	// Safe mode runs no configured code: not even a fail_closed guard.
	r = atriumExec(t, home, "", []string{"ATRIUM_SAFE_MODE=1"}, "send", id, `use tool big_output: {"bytes": 10}`)
	if r.code != 0 || strings.Contains(r.stdout, "failed closed") || !strings.Contains(r.stdout, "The tool big_output returned") {
		t.Fatalf("safe mode: %+v", r)
	}
	r = atriumExec(t, home, "", nil, "hooks", "test", "pre_tool_call", "--tool", "echo")
	if r.code != 5 || !strings.Contains(r.stdout, "timed out after") || !strings.Contains(r.stdout, "could not run: command not found") {
		t.Fatalf("hooks test: %+v", r)
	}
}

// Claude Code's settings shape: its event names mapped onto Atrium's hooks,
// its stdin fields (transcript_path a JSONL export of the session), exit 2
// and permissionDecision blocking a tool, plain stdout as a prompt's
// context, commands run by the shell.
func TestShellHooksInClaudeCodesShape(t *testing.T) {
	t.Parallel()
	home := shellHome(t, `
compaction:
  rotate: false
hooks:
  PreToolUse:
    - matcher: "echo"
      hooks:
        - type: command
          command: "in=$(cat); case \"$in\" in *'rm -rf'*) echo 'never rm -rf' >&2; exit 2;; esac"
    - matcher: "big_output"
      hooks:
        - type: command
          command: "cat >/dev/null; echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"no big output\"}}'"
  UserPromptSubmit:
    - hooks:
        - {type: command, command: "in=$(cat); case \"$in\" in *password*) echo 'no passwords in prompts' >&2; exit 2;; esac; echo '[[context]] from a Claude hook'"}
  SessionStart:
    - matcher: startup
      hooks: [{type: command, command: "cat >/dev/null; echo 'project notes: deploys go through staging'"}]
    - matcher: compact
      hooks: [{type: command, command: "cat >/dev/null; echo 'after a summary: the rollback owner is Ann'"}]
  PreCompact:
    - hooks: [{type: command, command: "$CLAUDE_PROJECT_DIR/hooks/keep.sh pre"}]
  PostCompact:
    - hooks: [{type: command, command: "./hooks/keep.sh post"}]
  SessionEnd:
    - hooks: [{type: command, command: "./hooks/keep.sh end"}]
`, map[string]string{
		"keep.sh": `in=$(cat); echo "$in" >> "$CLAUDE_PROJECT_DIR/$1.jsonl"
path=$(echo "$in" | sed -n 's/.*"transcript_path":"\([^"]*\)".*/\1/p')
[ -n "$path" ] && wc -l < "$path" | tr -d ' ' >> "$CLAUDE_PROJECT_DIR/$1.lines"; exit 0`,
	})
	env := []string{"ATRIUM_ACCEPT_HOOKS=1"}
	id := create(t, home, "--title", "claude")
	r := atriumExec(t, home, "", env, "send", id, "use tool echo: rm -rf /")
	if r.code != 0 || !strings.Contains(r.stdout, "never rm -rf") {
		t.Fatalf("exit 2: %+v", r)
	}
	r = atriumExec(t, home, "", env, "send", id, `use tool big_output: {"bytes": 10}`)
	if r.code != 0 || !strings.Contains(r.stdout, "no big output") {
		t.Fatalf("deny: %+v", r)
	}
	// exit 2 of UserPromptSubmit: the prompt is neither sent nor kept.
	r = atriumExec(t, home, "", env, "send", id, "my password is hunter2")
	if r.code != 5 || !strings.Contains(r.stderr, "a hook blocked the message, which was neither sent nor kept: no passwords in prompts") {
		t.Fatalf("blocked prompt: %+v", r)
	}
	if r := atrium(t, home, "messages", "list", id, "--json"); strings.Contains(r.stdout, "hunter2") {
		t.Fatalf("the blocked prompt was stored: %s", r.stdout)
	}
	out := mustSendEnv(t, home, env, id, "tell me about the deploy")
	if !strings.Contains(out, "offline reply") {
		t.Fatalf("plain reply: %q", out)
	}
	if n, _ := sentWith(t, home, id, "from a Claude hook"); n != 3 {
		t.Fatalf("%d user turns carried the UserPromptSubmit output, want 3", n)
	}
	// SessionStart's output is context at the session's first turn only.
	if n, _ := sentWith(t, home, id, "project notes: deploys go through staging"); n != 1 {
		t.Fatalf("%d user turns carried the SessionStart output, want 1", n)
	}
	for _, text := range []string{"one", "two", "three", "four"} {
		mustSendEnv(t, home, env, id, "step "+text+": "+strings.Repeat("the plan, the owners and the rollback steps. ", 3))
	}
	_, stored := sentWith(t, home, id, "")
	var res struct {
		Changed bool `json:"changed"`
	}
	mustJSON(t, atriumExec(t, home, "", env, "compact", id, "--focus", "the rollback", "--json"), &res)
	if !res.Changed {
		t.Fatal("compact changed nothing")
	}
	pre, post := jsonLines(t, filepath.Join(home, "pre.jsonl")), jsonLines(t, filepath.Join(home, "post.jsonl"))
	if len(pre) != 1 || len(post) != 1 {
		t.Fatalf("PreCompact %d, PostCompact %d, want 1 each", len(pre), len(post))
	}
	if pre[0]["hook_event_name"] != "PreCompact" || pre[0]["trigger"] != "manual" || pre[0]["session_id"] != id || pre[0]["custom_instructions"] != "the rollback" ||
		pre[0]["cwd"] != home || pre[0]["transcript_path"] != filepath.Join(home, "sessions", id+".jsonl") {
		t.Fatalf("PreCompact stdin: %+v", pre[0])
	}
	if post[0]["hook_event_name"] != "PostCompact" || post[0]["trigger"] != "manual" {
		t.Fatalf("PostCompact stdin: %+v", post[0])
	}
	// At PreCompact the transcript still had every message.
	if b, _ := os.ReadFile(filepath.Join(home, "pre.lines")); strings.TrimSpace(string(b)) != fmt.Sprint(stored) {
		t.Fatalf("transcript lines at PreCompact: %q, want %d", b, stored)
	}
	var line map[string]any
	b, _ := os.ReadFile(filepath.Join(home, "sessions", id+".jsonl"))
	if err := json.Unmarshal([]byte(strings.SplitN(string(b), "\n", 2)[0]), &line); err != nil {
		t.Fatal(err)
	}
	// PostCompact's export: the compacted transcript, its summary first.
	if msg, _ := line["message"].(map[string]any); line["type"] != "system" || line["sessionId"] != id || msg["role"] != "system" ||
		!strings.Contains(msg["content"].(string), "Summary of") || line["timestamp"] == "" {
		t.Fatalf("transcript line: %+v", line)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "post.lines")); strings.TrimSpace(string(b)) == fmt.Sprint(stored) {
		t.Fatalf("transcript lines at PostCompact: %q, the same as before", b)
	}
	// SessionStart "compact": its output is context at the first turn
	// after the summary, and only there.
	if n, _ := sentWith(t, home, id, "after a summary"); n != 0 {
		t.Fatalf("%d turns carried the compact SessionStart output before any compaction", n)
	}
	mustSendEnv(t, home, env, id, "who owns the rollback?")
	mustSendEnv(t, home, env, id, "and the deploy?")
	if n, _ := sentWith(t, home, id, "after a summary: the rollback owner is Ann"); n != 1 {
		t.Fatalf("%d user turns carried the compact SessionStart output, want 1", n)
	}
	if r := atriumExec(t, home, "", env, "sessions", "end", id); r.code != 0 {
		t.Fatalf("end: %+v", r)
	}
	if end := jsonLines(t, filepath.Join(home, "end.jsonl")); len(end) != 1 || end[0]["hook_event_name"] != "SessionEnd" || end[0]["reason"] != "other" {
		t.Fatalf("SessionEnd: %+v", end)
	}
	// The export is a sidecar: deleting the session removes it.
	if r := atriumExec(t, home, "", env, "sessions", "delete", id, "--now", "--yes"); r.code != 0 {
		t.Fatalf("delete: %+v", r)
	}
	waitFor(t, "the transcript export removed with its session", 20*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(home, "sessions", id+".jsonl"))
		return os.IsNotExist(err)
	})
}

// A Claude Code Stop hook keeps the agent going as in Claude Code: exit 2
// (stderr) or {"decision": "block", "reason"} is the next instruction, and
// the next Stop of the turn has stop_hook_active; its systemMessage is
// shown. The hook reads transcript_path as Claude Code's own transcripts
// are read (the assistant's text in content blocks), and it does not run
// for a delegate child's turn (Claude Code's Stop is the main agent's).
func TestAClaudeStopHookKeepsTheAgentGoing(t *testing.T) {
	t.Parallel()
	home := shellHome(t, `
hooks:
  Stop:
    - hooks:
        - {type: command, command: "python3 \"$CLAUDE_PROJECT_DIR/hooks/stop.py\""}
`, map[string]string{
		// Line 1 ("#!/bin/sh") is a comment to Python.
		"stop.py": `import json, os, sys
d = json.load(sys.stdin)
home = os.environ["CLAUDE_PROJECT_DIR"]
log = os.path.join(home, "stop.jsonl")
with open(log, "a") as f:
    f.write(json.dumps(d) + "\n")
last = None
for line in open(d["transcript_path"]):
    e = json.loads(line)
    if e["type"] == "assistant":
        last = "\n".join(b["text"] for b in e["message"]["content"] if b["type"] == "text")
if last != d["last_assistant_message"]:
    open(os.path.join(home, "mismatch"), "w").write(repr((last, d["last_assistant_message"])))
n = sum(1 for _ in open(log))
if n == 1:
    print("tests fail: run them again", file=sys.stderr)
    sys.exit(2)
if n == 2:
    print(json.dumps({"decision": "block", "reason": "one more pass", "systemMessage": "iteration 3"}))
else:
    print(json.dumps({"systemMessage": "all checks pass"}))
`,
	})
	env := []string{"ATRIUM_ACCEPT_HOOKS=1"}
	id := create(t, home, "--title", "ralph")
	out := mustSendEnv(t, home, env, id, "make the tests pass")
	cmd := `[python3 "$CLAUDE_PROJECT_DIR/hooks/stop.py"]: `
	for _, want := range []string{"offline reply to: make the tests pass", "(a hook did not let the turn end; the agent was told:)\nStop hook feedback:\n" + cmd + "tests fail: run them again",
		"Stop hook feedback:\n" + cmd + "one more pass", "(iteration 3)", "(all checks pass)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("send printed no %q:\n%s", want, out)
		}
	}
	stops := jsonLines(t, filepath.Join(home, "stop.jsonl"))
	var active []any
	for _, s := range stops {
		if s["hook_event_name"] != "Stop" || s["session_id"] != id || s["last_assistant_message"] == "" {
			t.Fatalf("Stop stdin: %+v", s)
		}
		active = append(active, s["stop_hook_active"])
	}
	if fmt.Sprint(active) != "[false true true]" {
		t.Fatalf("stop_hook_active of the turn's Stops: %v", active)
	}
	if b, err := os.ReadFile(filepath.Join(home, "mismatch")); err == nil {
		t.Fatalf("the transcript's last assistant text is not last_assistant_message: %s", b)
	}
	var msgs []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "messages", "list", id, "--json"), &msgs)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if fmt.Sprint(roles) != "[user assistant user assistant user assistant]" || msgs[2].Content != "Stop hook feedback:\n"+cmd+"tests fail: run them again" {
		t.Fatalf("stored: %+v", msgs)
	}
	// A delegate child's turn: no Stop.
	child := create(t, home, "--parent", id, "--relation", "delegate", "--title", "child")
	mustSendEnv(t, home, env, child, "look something up")
	if n := len(jsonLines(t, filepath.Join(home, "stop.jsonl"))); n != 3 {
		t.Fatalf("Stop ran %d times, want 3 (none for the delegate child's turn)", n)
	}
}

// Claude Code's PostToolUse runs for a tool call that succeeded, and
// PostToolUseFailure (with the error) for one that failed: here a plugin
// tool that raises.
func TestClaudePostToolUseAndPostToolUseFailure(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := withPlugin(t, "flaky", "[]", `
def register(ctx):
    schema = {"name": "flaky", "description": "fails on demand",
              "parameters": {"type": "object", "properties": {"fail": {"type": "boolean"}}}}
    def flaky(args, **kwargs):
        if args.get("fail"):
            raise RuntimeError("the disk is full")
        return "done"
    ctx.register_tool(name="flaky", toolset="flaky", schema=schema, handler=flaky)
`)
	log := `"cat >> \"$CLAUDE_PROJECT_DIR/%s.jsonl\"; echo >> \"$CLAUDE_PROJECT_DIR/%s.jsonl\""`
	cfg, err := os.ReadFile(filepath.Join(home, "config.yaml")) // the plugin's enablement
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), append(cfg, fmt.Sprintf(`
hooks:
  PostToolUse:
    - matcher: flaky
      hooks: [{type: command, command: %s}]
  PostToolUseFailure:
    - matcher: flaky
      hooks: [{type: command, command: %s}]
`, fmt.Sprintf(log, "ok", "ok"), fmt.Sprintf(log, "failed", "failed"))...), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"ATRIUM_ACCEPT_HOOKS=1"}
	id := create(t, home, "--title", "tools")
	mustSendEnv(t, home, env, id, `use tool flaky: {"fail": false}`)
	mustSendEnv(t, home, env, id, `use tool flaky: {"fail": true}`)
	if r := atriumExec(t, home, "", env, "sessions", "end", id); r.code != 0 { // waits for the observers
		t.Fatalf("end: %+v", r)
	}
	ok, failed := jsonLines(t, filepath.Join(home, "ok.jsonl")), jsonLines(t, filepath.Join(home, "failed.jsonl"))
	if len(ok) != 1 || ok[0]["hook_event_name"] != "PostToolUse" || ok[0]["tool_response"] != "done" {
		t.Fatalf("PostToolUse: %+v", ok)
	}
	if len(failed) != 1 || failed[0]["hook_event_name"] != "PostToolUseFailure" || !strings.Contains(fmt.Sprint(failed[0]["error"]), "the disk is full") ||
		failed[0]["is_interrupt"] != false || fmt.Sprint(failed[0]["tool_input"]) != "map[fail:true]" {
		t.Fatalf("PostToolUseFailure: %+v", failed)
	}
}

// A Claude Code PermissionRequest hook answers in the place of whoever
// would approve a tool call a PreToolUse hook asked about (here a scheduled
// run with approvals.cron_mode: approve): its allow runs the call (with its
// updatedInput), its deny or exit code 2 blocks it with the reason for the
// model, and then the Notification for a waiting approval is not sent; no
// answer leaves the question to the approver.
func TestAClaudePermissionRequestHookAnswersForThePerson(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := shellHome(t, `
approvals:
  cron_mode: approve
hooks_auto_accept: true
hooks:
  PreToolUse:
    - matcher: echo
      hooks: [{type: command, command: "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"ask\", \"permissionDecisionReason\": \"echo needs a yes\"}}'"}]
  PermissionRequest:
    - matcher: "echo|other"
      hooks: [{type: command, command: "python3 \"$CLAUDE_PROJECT_DIR/hooks/permit.py\""}]
  Notification:
    - hooks: [{type: command, command: "cat >> \"$CLAUDE_PROJECT_DIR/notified.jsonl\"; echo >> \"$CLAUDE_PROJECT_DIR/notified.jsonl\""}]
`, map[string]string{
		"permit.py": `import json, os, sys
d = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "permit.jsonl"), "a") as f:
    f.write(json.dumps(d) + "\n")
text = d["tool_input"].get("text", "")
def decide(decision):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}))
if "rm " in text:
    decide({"behavior": "deny", "message": "never remove files"})
elif text.startswith("shout"):
    decide({"behavior": "allow", "updatedInput": {"text": text.upper()}})
elif text == "refuse":
    print("refused by policy", file=sys.stderr)
    sys.exit(2)
`,
	})
	for _, c := range []struct{ name, text, reply string }{
		{"remove", "rm -rf build", `The tool echo returned: {"error":"never remove files"}`},
		{"shout", "shout hello", "The tool echo returned: SHOUT HELLO"},
		{"refuse", "refuse", `The tool echo returned: {"error":"refused by policy"}`},
		{"quiet", "nothing to say", "The tool echo returned: nothing to say"},
	} {
		if reply := cronOnce(t, home, c.name, "use tool echo: "+c.text); !strings.HasPrefix(reply, c.reply) {
			t.Fatalf("%s: reply %q, want %q", c.name, reply, c.reply)
		}
	}
	asked := jsonLines(t, filepath.Join(home, "permit.jsonl"))
	if len(asked) != 4 {
		t.Fatalf("PermissionRequest ran %d times", len(asked))
	}
	for _, a := range asked {
		if a["hook_event_name"] != "PermissionRequest" || a["tool_name"] != "echo" || a["session_id"] == "" ||
			a["permission_mode"] != "default" || fmt.Sprint(a["permission_suggestions"]) != "[]" || a["transcript_path"] == "" {
			t.Fatalf("PermissionRequest stdin: %+v", a)
		}
	}
	// Only the call nobody decided for waited for an approval.
	waitFor(t, "the Notification hook", 20*time.Second, func() bool { return len(jsonLines(t, filepath.Join(home, "notified.jsonl"))) >= 1 })
	if n := jsonLines(t, filepath.Join(home, "notified.jsonl")); len(n) != 1 || !strings.Contains(fmt.Sprint(n[0]["message"]), "echo needs a yes") {
		t.Fatalf("Notification: %+v", n)
	}
}

// cronOnce adds a scheduled job with prompt and runs it now: its reply.
func cronOnce(t *testing.T, home, name, prompt string) string {
	t.Helper()
	if r := atriumExec(t, home, "", nil, "cron", "add", name, "--schedule", "@daily", "--prompt", prompt); r.code != 0 {
		t.Fatalf("cron add: %+v", r)
	}
	var res struct {
		Reply string `json:"reply"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "cron", "run", name, "--json"), &res)
	return res.Reply
}

// sentWith counts the session's user turns sent to the model with text in
// them, and returns how many messages it has.
func sentWith(t *testing.T, home, id, text string) (int, int) {
	t.Helper()
	var msgs []struct {
		Role        string  `json:"role"`
		SentContent *string `json:"sent_content"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "messages", "list", id, "--json"), &msgs)
	n := 0
	for _, m := range msgs {
		if m.Role == "user" && m.SentContent != nil && strings.Contains(*m.SentContent, text) {
			n++
		}
	}
	return n, len(msgs)
}

func mustSendEnv(t *testing.T, home string, env []string, id, text string) string {
	t.Helper()
	r := atriumExec(t, home, "", env, "send", id, text)
	if r.code != 0 {
		t.Fatalf("send %q: %+v", text, r)
	}
	return r.stdout
}

// On a terminal, a command that fires hooks asks once per (event,
// command) pair not approved yet, and records the answers; a pair
// refused is asked again next time, an approved one never.
func TestShellHookConsentOnATerminal(t *testing.T) {
	t.Parallel()
	scriptBin, err := exec.LookPath("script") // util-linux: a terminal for the command
	if err != nil {
		t.Fatalf("this test needs script(1) from util-linux: %v", err)
	}
	home := shellHome(t, `
hooks:
  pre_tool_call:
    - command: ./hooks/guard.sh
  on_session_delete:
    - command: ./hooks/log.sh
`, map[string]string{
		"guard.sh": `cat > /dev/null; echo '{"action": "block", "message": "guarded"}'`,
		"log.sh":   `cat > /dev/null`,
	})
	id := create(t, home, "--title", "asked")
	stopHostAtCleanup(t, home)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	onTerminal := func(answers string) string {
		t.Helper()
		line := fmt.Sprintf("exec '%s' send %s 'use tool echo: hi' --home '%s'", exe, id, home)
		cmd := exec.Command(scriptBin, "-qec", line, "/dev/null")
		cmd.Env = append(os.Environ(), "ATRIUM_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
		cmd.Stdin = strings.NewReader(answers)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("on a terminal: %v\n%s", err, out)
		}
		return string(out)
	}
	// Asked in event order: on_session_delete (refused), pre_tool_call.
	out := onTerminal("n\ny\n")
	if strings.Count(out, "Allow this hook to run? [y/N]") != 2 || !strings.Contains(out, "Command: ./hooks/log.sh") ||
		!strings.Contains(out, "guarded") {
		t.Fatalf("first run:\n%s", out)
	}
	var list struct {
		Shell []struct {
			Name     string `json:"name"`
			Approved bool   `json:"approved"`
		} `json:"shell"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "hooks", "list", "--json"), &list)
	rows := list.Shell
	if len(rows) != 2 || rows[0].Name != "on_session_delete" || rows[0].Approved || rows[1].Name != "pre_tool_call" || !rows[1].Approved {
		t.Fatalf("after the answers: %+v", rows)
	}
	out = onTerminal("n\n")
	if strings.Count(out, "Allow this hook to run?") != 1 || strings.Contains(out, "Command: ./hooks/guard.sh") || !strings.Contains(out, "guarded") {
		t.Fatalf("second run:\n%s", out)
	}
}

// doctor reads the live registry, not only the config: a host that
// registers every approved hook but lacks one, or still holds one no
// longer configured, is a problem.
func TestShellHooksDoctorChecksTheLiveRegistry(t *testing.T) {
	t.Parallel()
	home := shellHome(t, `
hooks_auto_accept: true
hooks:
  pre_tool_call:
    - command: ./hooks/guard.sh
  post_tool_call:
    - command: ./hooks/gone.sh
`, map[string]string{"guard.sh": "cat > /dev/null\n"})
	// A live process's record (this test's own), as a host that read an
	// older config writes it.
	record := map[string]any{"pid": os.Getpid(), "start": hooks.ProcessStart(os.Getpid()), "process": "atrium serve",
		"updated_at": time.Now().UTC(), "plugins": []any{}, "shell_all": true,
		"shell_hooks": []any{map[string]any{"event": "on_session_delete", "name": "on_session_delete", "command": "./hooks/old.sh",
			"subscriber": "shell:./hooks/old.sh"}}}
	b, _ := json.Marshal(record)
	dir := filepath.Join(home, "run", "plugins")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprint(os.Getpid())+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	r := atriumExec(t, home, "", nil, "hooks", "doctor")
	for _, want := range []string{
		fmt.Sprintf("live registry: atrium serve (pid %d)", os.Getpid()),
		"pre_tool_call → ./hooks/guard.sh: approved, but not registered in the running atrium serve",
		"post_tool_call → ./hooks/gone.sh: ./hooks/gone.sh not found (looked for " + filepath.Join(home, "hooks", "gone.sh") + ")",
		"on_session_delete → ./hooks/old.sh: registered in atrium serve (pid " + fmt.Sprint(os.Getpid()) + ") but no longer configured",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.code != 5 {
		t.Fatalf("doctor exit %d: %+v", r.code, r)
	}
}

// ATRIUM_ACCEPT_HOOKS approves what the command that has it can fire; the
// plugin host that command starts outlives it and approves nothing more:
// a hook configured later waits for its own consent.
func TestAcceptHooksDoesNotOutliveItsCommand(t *testing.T) {
	t.Parallel()
	home := shellHome(t, `
hooks:
  pre_llm_call:
    - command: ./hooks/quiet.sh
`, map[string]string{
		"quiet.sh": "cat > /dev/null\n",
		"guard.sh": `cat > /dev/null; echo '{"action": "block", "message": "late guard"}'`,
	})
	id := create(t, home, "--title", "accept")
	if r := atriumExec(t, home, "", []string{"ATRIUM_ACCEPT_HOOKS=1"}, "send", id, "hello"); r.code != 0 || strings.Contains(r.stderr, "not approved") {
		t.Fatalf("with the switch: %+v", r)
	}
	cfg := filepath.Join(home, "config.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, "  pre_tool_call:\n    - command: ./hooks/guard.sh\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	r := atriumExec(t, home, "", nil, "send", id, "use tool echo: still mine")
	if r.code != 0 || strings.Contains(r.stdout, "late guard") || !strings.Contains(r.stderr, "pre_tool_call → ./hooks/guard.sh is not approved") {
		t.Fatalf("a hook added later: %+v", r)
	}
	if a, _ := os.ReadFile(filepath.Join(home, "shell-hooks-allowlist.json")); strings.Contains(string(a), "guard.sh") {
		t.Fatalf("the host approved a hook on its own:\n%s", a)
	}
}

// On a terminal chat, Ctrl+C stops the turn under way (here a model call
// that takes its time) and the chat goes on: agent_loop_stopped fires with
// the person's reason; the message stays.
func TestCtrlCStopsTheTurnInATerminalChat(t *testing.T) {
	t.Parallel()
	srvURL, asked := slowModel(t)
	home := t.TempDir()
	id := create(t, home, "--title", "slow")
	stopHostAtCleanup(t, home)
	cmd, in, out := chatOnATerminal(t, id, home, "--provider", "openai", "--base-url", srvURL+"/v1", "--model", "slow")
	_, _ = io.WriteString(in, "a long question\n")
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatalf("the model was never asked:\n%s", out.String())
	}
	_, _ = io.WriteString(in, "\x03") // Ctrl+C
	waitFor(t, "the stopped turn", 30*time.Second, func() bool { return strings.Contains(out.String(), "(stopped") })
	_, _ = io.WriteString(in, "/exit\n")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chat: %v\n%s", err, out.String())
	}
	var events []struct {
		Payload struct {
			Reason   string `json:"reason"`
			Platform string `json:"platform"`
		} `json:"payload"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "events", "list", "--json", "--hook", "agent_loop_stopped"), &events)
	if len(events) != 1 || events[0].Payload.Reason != "user_stop" || events[0].Payload.Platform != "cli" {
		t.Fatalf("agent_loop_stopped: %+v", events)
	}
	var msgs []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "messages", "list", id, "--json"), &msgs)
	if len(msgs) == 0 || msgs[0].Content != "a long question" {
		t.Fatalf("stored: %+v", msgs)
	}
}

// chatOnATerminal starts `atrium chat SESSION --home HOME args...` on a
// terminal (script(1) from util-linux), its keys written to in.
func chatOnATerminal(t *testing.T, id, home string, args ...string) (*exec.Cmd, io.WriteCloser, *lockedBuf) {
	t.Helper()
	return onATerminal(t, home, append([]string{"chat", id}, args...)...)
}

// onATerminal starts `atrium ARGS... --home HOME` on a terminal (script(1)
// from util-linux), its keys written to in.
func onATerminal(t *testing.T, home string, args ...string) (*exec.Cmd, io.WriteCloser, *lockedBuf) {
	t.Helper()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("this test needs script(1) from util-linux: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// exec: atrium, not script's $SHELL, is what the terminal runs, as
	// when a person types it (dash left in between dies of the Ctrl+C).
	line := fmt.Sprintf("exec '%s'", exe)
	for _, a := range args {
		line += " '" + a + "'"
	}
	line += fmt.Sprintf(" --home '%s'", home)
	cmd := exec.Command(scriptBin, "-qec", line, "/dev/null")
	cmd.Env = append(os.Environ(), "ATRIUM_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &lockedBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, in, out
}

// Ctrl+C on `atrium send` stops the turn, which records how it ended
// (on_session_end interrupted, agent_loop_stopped) before send exits
// with the reason; killed outright it recorded nothing.
func TestCtrlCStopsSend(t *testing.T) {
	t.Parallel()
	srvURL, asked := slowModel(t)
	home := t.TempDir()
	id := create(t, home, "--title", "slow send")
	stopHostAtCleanup(t, home)
	cmd, out := slowSend(t, home, id, srvURL, asked)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(out.String(), "stopped (Ctrl+C)") {
		t.Fatalf("send: %v\n%s", err, out.String())
	}
	for hook, want := range map[string]string{"agent_loop_stopped": "user_stop", "on_session_end": ""} {
		var evs []struct {
			Payload struct {
				Reason      string `json:"reason"`
				Interrupted bool   `json:"interrupted"`
			} `json:"payload"`
		}
		mustJSON(t, atriumExec(t, home, "", nil, "events", "list", "--json", "--hook", hook), &evs)
		if len(evs) != 1 || evs[0].Payload.Reason != want || (hook == "on_session_end" && !evs[0].Payload.Interrupted) {
			t.Fatalf("%s: %+v", hook, evs)
		}
	}
}

// slowSend starts `atrium send ID "a long question"` on the slow model at
// srvURL and returns once the model was asked.
func slowSend(t *testing.T, home, id, srvURL string, asked chan struct{}) (*exec.Cmd, *lockedBuf) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "send", id, "a long question", "--home", home, "--provider", "openai", "--base-url", srvURL+"/v1", "--model", "slow")
	cmd.Env = append(os.Environ(), "ATRIUM_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
	out := &lockedBuf{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatalf("the model was never asked:\n%s", out.String())
	}
	return cmd, out
}

// slowModel is a loopback OpenAI-compatible API whose answers take their
// time (until the caller goes): its base URL, and a channel told of each
// request.
func slowModel(t *testing.T) (string, chan struct{}) {
	t.Helper()
	asked := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so the server notices when the caller goes
		asked <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, asked
}

// A turn is stopped from another process of the profile: `sessions
// running` lists the send under way (where, which process), `sessions stop`
// in another terminal stops it, and the send says so; agent_loop_stopped
// says user_stop, as for the window's Stop.
func TestSessionsStopStopsATurnOfAnotherProcess(t *testing.T) {
	t.Parallel()
	srvURL, asked := slowModel(t)
	home := t.TempDir()
	id := create(t, home, "--title", "slow elsewhere")
	stopHostAtCleanup(t, home)
	if r := atriumExec(t, home, "", nil, "sessions", "stop", id); r.code == 0 || !strings.Contains(r.stderr, "no turn is running") {
		t.Fatalf("stop with nothing running: %+v", r)
	}
	cmd, out := slowSend(t, home, id, srvURL, asked)
	var running []struct {
		SessionID string `json:"session_id"`
		Platform  string `json:"platform"`
		PID       int    `json:"pid"`
	}
	// A turn is written down once it has run a tenth of a second.
	waitFor(t, "the turn written down", 30*time.Second, func() bool {
		mustJSON(t, atriumExec(t, home, "", nil, "sessions", "running", "--json"), &running)
		return len(running) > 0
	})
	if len(running) != 1 || running[0].SessionID != id || running[0].Platform != "cli" || running[0].PID != cmd.Process.Pid {
		t.Fatalf("running: %+v (send is pid %d)", running, cmd.Process.Pid)
	}
	if r := atriumExec(t, home, "", nil, "sessions", "stop", id); r.code != 0 || !strings.Contains(r.stdout, "asked 1 turn(s) to stop") {
		t.Fatalf("stop: %+v", r)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(out.String(), "stopped by a person") {
		t.Fatalf("send: %v\n%s", err, out.String())
	}
	var evs []struct {
		Payload struct {
			Reason string `json:"reason"`
		} `json:"payload"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "events", "list", "--json", "--hook", "agent_loop_stopped"), &evs)
	if len(evs) != 1 || evs[0].Payload.Reason != "user_stop" {
		t.Fatalf("agent_loop_stopped: %+v", evs)
	}
	mustJSON(t, atriumExec(t, home, "", nil, "sessions", "running", "--json"), &running)
	if len(running) != 0 {
		t.Fatalf("still running: %+v", running)
	}
}
