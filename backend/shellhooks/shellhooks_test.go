package shellhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/shellhooks"
)

func section(t *testing.T, src string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(src), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseBothShapes(t *testing.T) {
	specs, warns := shellhooks.Parse(section(t, `
event_retention_days: 3
outbound: [{url: "http://x"}]
pre_tool_call:
  - command: ./hooks/guard.py --strict
    timeout: 10
    matcher: "terminal|write_.*"
    fail_closed: true
  - command: "  ./second.sh  "
    failClosed: true
pre_llm_call:
  - command: recall.sh
    matcher: ignored
    fail_closed: true
    timeout: 900
on_session_delete:
  - command: ""
  - "not a mapping"
  - command: ./cleanup.sh
    timeout: 0
pre_tool_cal:
  - command: x
kanban_task_claimed:
  - command: y
PreToolUse:
  - matcher: "Edit|Write"
    hooks:
      - type: command
        command: "$CLAUDE_PROJECT_DIR/.claude/check.sh"
        timeout: 30
      - type: prompt
        prompt: "is this fine?"
  - hooks: [{type: command, command: "echo all"}]
SessionEnd:
  - hooks: [{type: command, command: "notify-send done"}]
`))
	type row struct {
		Event, Name, Command, Matcher string
		Timeout                       time.Duration
		FailClosed                    bool
		Dialect                       shellhooks.Dialect
	}
	var got []row
	for _, s := range specs {
		got = append(got, row{s.Event, s.Name, s.Command, s.Matcher, s.Timeout, s.FailClosed, s.Dialect})
	}
	want := []row{
		{"pre_tool_call", "PreToolUse", "$CLAUDE_PROJECT_DIR/.claude/check.sh", "Edit|Write", 30 * time.Second, false, shellhooks.Claude},
		{"pre_tool_call", "PreToolUse", "echo all", "", time.Minute, false, shellhooks.Claude},
		{"on_session_finalize", "SessionEnd", "notify-send done", "", time.Minute, false, shellhooks.Claude},
		{"on_session_delete", "on_session_delete", "./cleanup.sh", "", time.Minute, false, shellhooks.Hermes},
		{"pre_llm_call", "pre_llm_call", "recall.sh", "", 5 * time.Minute, false, shellhooks.Hermes},
		{"pre_tool_call", "pre_tool_call", "./hooks/guard.py --strict", "terminal|write_.*", 10 * time.Second, true, shellhooks.Hermes},
		{"pre_tool_call", "pre_tool_call", "./second.sh", "", time.Minute, true, shellhooks.Hermes},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("specs:\n got %+v\nwant %+v", got, want)
	}
	joined := strings.Join(warns, "\n")
	for _, w := range []string{
		`type "prompt" is not run by Atrium`,
		`hooks.on_session_delete[0] is missing a non-empty 'command' field`,
		`hooks.on_session_delete[1] must be a mapping with a 'command' key; got a string`,
		`hooks.on_session_delete[2].timeout must be at least 1 second`,
		`unknown hook event "pre_tool_cal" in hooks: (did you mean "pre_tool_call"?)`,
		`hooks.kanban_task_claimed: Atrium has no kanban_task_claimed moment`,
		`hooks.pre_llm_call[0].matcher "ignored" is ignored`,
		`hooks.pre_llm_call[0].fail_closed is ignored`,
		`hooks.pre_llm_call[0].timeout 900s is above the most, 300 s`,
	} {
		if !strings.Contains(joined, w) {
			t.Errorf("no warning %q in:\n%s", w, joined)
		}
	}
	if len(warns) != 9 {
		t.Errorf("%d warnings, want 9:\n%s", len(warns), joined)
	}
}

func TestMatchers(t *testing.T) {
	specs, _ := shellhooks.Parse(section(t, `
pre_tool_call:
  - {command: a, matcher: "write_.*"}
  - {command: b, matcher: "(broken"}
PreToolUse:
  - {matcher: "Edit|Write", hooks: [{type: command, command: c}]}
  - {matcher: "mcp__.*__read", hooks: [{type: command, command: d}]}
  - {matcher: "*", hooks: [{type: command, command: e}]}
`))
	byCmd := map[string]shellhooks.Spec{}
	for _, s := range specs {
		byCmd[s.Command] = s
	}
	cases := []struct {
		cmd, tool string
		want      bool
	}{
		{"a", "write_file", true}, {"a", "overwrite_file", false}, {"a", "write_", true},
		{"b", "(broken", true}, {"b", "broken", false},
		{"c", "Edit", true}, {"c", "Write", true}, {"c", "MultiEdit", false},
		{"d", "mcp__fs__read", true}, {"d", "x_mcp__fs__read_all", true},
		{"e", "anything", true},
	}
	for _, c := range cases {
		if got := byCmd[c.cmd].Matches(c.tool); got != c.want {
			t.Errorf("%s matches %q = %v, want %v", c.cmd, c.tool, got, c.want)
		}
	}
}

func spec(t *testing.T, src string) shellhooks.Spec {
	t.Helper()
	specs, warns := shellhooks.Parse(section(t, src))
	if len(specs) != 1 || len(warns) != 0 {
		t.Fatalf("specs %+v, warnings %v", specs, warns)
	}
	return specs[0]
}

func TestAnswers(t *testing.T) {
	pre := spec(t, "pre_tool_call: [{command: x}]")
	closed := spec(t, "pre_tool_call: [{command: x, fail_closed: true}]")
	llm := spec(t, "pre_llm_call: [{command: x}]")
	cpre := spec(t, "PreToolUse: [{hooks: [{type: command, command: x}]}]")
	cprompt := spec(t, "UserPromptSubmit: [{hooks: [{type: command, command: x}]}]")
	obs := spec(t, "post_tool_call: [{command: x}]")
	cstop := spec(t, "Stop: [{hooks: [{type: command, command: ./check.sh}]}]")
	end := spec(t, "pre_turn_end: [{command: x}]")
	cperm := spec(t, "PermissionRequest: [{hooks: [{type: command, command: x}]}]")
	decide := spec(t, "pre_approval_decision: [{command: x}]")
	ok := func(stdout string) shellhooks.Outcome { return shellhooks.Outcome{Stdout: stdout} }
	cases := []struct {
		name string
		s    shellhooks.Spec
		o    shellhooks.Outcome
		want map[string]any
	}{
		{"hermes block", pre, ok(`{"action": "block", "message": "no"}`), map[string]any{"action": "block", "message": "no"}},
		{"hermes block with reason", pre, ok(`{"action": "block", "reason": "why"}`), map[string]any{"action": "block", "message": "why"}},
		{"hermes block, no message", pre, ok(`{"action": "block"}`), map[string]any{"action": "block", "message": "Blocked by shell hook."}},
		{"claude decision block", pre, ok(`{"decision": "block", "reason": "r"}`), map[string]any{"action": "block", "message": "r"}},
		{"hermes modify", pre, ok(`{"action": "modify", "args": {"a": 1}}`), map[string]any{"action": "modify", "args": map[string]any{"a": 1.0}}},
		{"claude modify", pre, ok(`{"decision": "modify", "tool_input": {"a": 2}}`), map[string]any{"action": "modify", "args": map[string]any{"a": 2.0}}},
		{"claude deny", cpre, ok(`{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "nope"}}`),
			map[string]any{"action": "block", "message": "nope"}},
		{"claude ask", cpre, ok(`{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "sure?"}}`),
			map[string]any{"action": "approve", "message": "sure?"}},
		{"claude allow", cpre, ok(`{"hookSpecificOutput": {"permissionDecision": "allow"}}`), nil},
		{"claude updatedInput", cpre, ok(`{"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"q": "x"}}}`),
			map[string]any{"action": "modify", "args": map[string]any{"q": "x"}}},
		{"exit 2 blocks with stderr", pre, shellhooks.Outcome{ExitCode: 2, Stderr: "  dangerous\n"}, map[string]any{"action": "block", "message": "dangerous"}},
		{"exit 2, json block wins", pre, shellhooks.Outcome{ExitCode: 2, Stdout: `{"action":"block","message":"m"}`, Stderr: "e"},
			map[string]any{"action": "block", "message": "m"}},
		{"exit 2 claude", cpre, shellhooks.Outcome{ExitCode: 2, Stderr: "rm -rf refused"}, map[string]any{"action": "block", "message": "rm -rf refused"}},
		{"exit 1 still parsed", pre, shellhooks.Outcome{ExitCode: 1, Stdout: `{"action":"block","message":"m"}`}, map[string]any{"action": "block", "message": "m"}},
		{"claude exit 1 not parsed", cpre, shellhooks.Outcome{ExitCode: 1, Stdout: `{"decision":"block"}`}, nil},
		{"not found fails open", pre, shellhooks.Outcome{ExitCode: -1, Err: "command not found: x"}, nil},
		{"not found fails closed", closed, shellhooks.Outcome{ExitCode: -1, Err: "command not found: x"},
			map[string]any{"action": "block", "message": "hook x failed closed: command not found: x"}},
		{"timeout fails closed", closed, shellhooks.Outcome{ExitCode: -1, TimedOut: true},
			map[string]any{"action": "block", "message": "hook x failed closed: timed out after 1m0s"}},
		{"garbage fails closed", closed, ok("Traceback (most recent call last):"),
			map[string]any{"action": "block", "message": "hook x failed closed: unparseable stdout (expected a JSON object)"}},
		{"garbage fails open", pre, ok("Traceback"), nil},
		{"empty allows", closed, ok(""), nil},
		{"context", llm, ok(`{"context": "remember X"}`), map[string]any{"context": "remember X"}},
		{"blank context", llm, ok(`{"context": "  "}`), nil},
		{"claude additionalContext", cprompt, ok(`{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ctx"}}`),
			map[string]any{"context": "ctx"}},
		{"claude plain text", cprompt, ok("plain words\n"), map[string]any{"context": "plain words"}},
		{"claude prompt exit 2 blocks it", cprompt, shellhooks.Outcome{ExitCode: 2, Stderr: "no secrets, please\n"},
			map[string]any{"action": "block_prompt", "message": "no secrets, please"}},
		{"claude prompt decision block", cprompt, ok(`{"decision": "block", "reason": "looks like a key"}`),
			map[string]any{"action": "block_prompt", "message": "looks like a key"}},
		{"claude prompt continue false", cprompt, ok(`{"continue": false, "stopReason": "quiet hours"}`),
			map[string]any{"action": "block_prompt", "message": "quiet hours"}},
		{"claude prompt block wins over context", cprompt, ok(`{"decision": "block", "hookSpecificOutput": {"additionalContext": "ctx"}}`),
			map[string]any{"action": "block_prompt", "message": "Blocked by shell hook."}},
		{"hermes pre_llm_call cannot block", llm, ok(`{"decision": "block", "reason": "r"}`), nil},
		{"hermes pre_llm_call exit 2 is a failure", llm, shellhooks.Outcome{ExitCode: 2, Stderr: "x"}, nil},
		{"hermes plain text is nothing", llm, ok("plain words"), nil},
		{"claude stop exit 2 goes on", cstop, shellhooks.Outcome{ExitCode: 2, Stderr: "tests fail:\n  TestX\n"},
			map[string]any{"action": "continue", "message": "Stop hook feedback:\n[./check.sh]: tests fail:\n  TestX"}},
		{"claude stop decision block", cstop, ok(`{"decision": "block", "reason": "run the linter", "systemMessage": "iteration 2"}`),
			map[string]any{"action": "continue", "message": "Stop hook feedback:\n[./check.sh]: run the linter", "note": "iteration 2"}},
		{"claude stop continue false wins", cstop, ok(`{"continue": false, "stopReason": "budget spent", "decision": "block", "reason": "r"}`),
			map[string]any{"action": "stop", "message": "budget spent"}},
		{"claude stop approve lets it end", cstop, ok(`{"decision": "approve"}`), nil},
		{"claude stop systemMessage only", cstop, ok(`{"systemMessage": "done in 3 iterations"}`), map[string]any{"note": "done in 3 iterations"}},
		{"claude stop exit 1 lets it end", cstop, shellhooks.Outcome{ExitCode: 1, Stderr: "crash", Stdout: `{"decision": "block"}`}, nil},
		{"claude stop plain text is nothing", cstop, ok("all good"), nil},
		{"hermes turn end continue", end, ok(`{"action": "continue", "message": "one more check"}`),
			map[string]any{"action": "continue", "message": "one more check"}},
		{"hermes turn end exit 2", end, shellhooks.Outcome{ExitCode: 2, Stderr: "not yet\n"}, map[string]any{"action": "continue", "message": "not yet"}},
		{"claude permission allow", cperm, ok(`{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}`),
			map[string]any{"action": "allow"}},
		{"claude permission allow with updatedInput", cperm, ok(`{"hookSpecificOutput": {"decision": {"behavior": "allow", "updatedInput": {"command": "ls"}}}}`),
			map[string]any{"action": "allow", "args": map[string]any{"command": "ls"}}},
		// updatedPermissions' allow rules last the conversation (Atrium
		// writes no settings files); other updates are not grants.
		{"claude permission allow with an allow rule", cperm, ok(`{"hookSpecificOutput": {"decision": {"behavior": "allow", "updatedPermissions": [` +
			`{"type": "addRules", "rules": [{"toolName": "echo"}, {"toolName": "Bash", "ruleContent": "ls:*"}], "behavior": "allow", "destination": "localSettings"}]}}}`),
			map[string]any{"action": "allow", "scope": "session", "tools": []any{"echo", "Bash"}}},
		{"claude permission allow with a mode change only", cperm, ok(`{"hookSpecificOutput": {"decision": {"behavior": "allow", "updatedPermissions": [` +
			`{"type": "setMode", "mode": "acceptEdits", "destination": "session"}, {"type": "addRules", "rules": [{"toolName": "echo"}], "behavior": "deny"}]}}}`),
			map[string]any{"action": "allow"}},
		{"claude permission deny", cperm, ok(`{"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "not in prod"}}}`),
			map[string]any{"action": "deny", "message": "not in prod", "interrupt": false}},
		{"claude permission deny and interrupt", cperm, ok(`{"hookSpecificOutput": {"decision": {"behavior": "deny", "interrupt": true}}}`),
			map[string]any{"action": "deny", "message": "Permission denied by shell hook.", "interrupt": true}},
		{"claude permission exit 2 denies", cperm, shellhooks.Outcome{ExitCode: 2, Stderr: "refused\n"}, map[string]any{"action": "deny", "message": "refused"}},
		{"claude permission exit 1 asks the person", cperm, shellhooks.Outcome{ExitCode: 1, Stdout: `{"hookSpecificOutput": {"decision": {"behavior": "allow"}}}`}, nil},
		{"claude permission no decision", cperm, ok(`{"hookSpecificOutput": {"hookEventName": "PermissionRequest"}}`), nil},
		{"claude permission unknown behavior", cperm, ok(`{"hookSpecificOutput": {"decision": {"behavior": "ask"}}}`), nil},
		{"claude permission timeout asks the person", cperm, shellhooks.Outcome{ExitCode: -1, TimedOut: true}, nil},
		{"hermes decision allow", decide, ok(`{"action": "allow", "args": {"a": 1}}`), map[string]any{"action": "allow", "args": map[string]any{"a": 1.0}}},
		{"hermes decision deny", decide, ok(`{"action": "deny", "message": "no"}`), map[string]any{"action": "deny", "message": "no", "interrupt": false}},
		{"hermes decision exit 2", decide, shellhooks.Outcome{ExitCode: 2}, map[string]any{"action": "deny", "message": "Permission denied by shell hook."}},
		{"observer answer ignored", obs, ok(`{"action": "block", "message": "no"}`), nil},
	}
	for _, c := range cases {
		got, _ := shellhooks.Answer(c.s, c.o)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, got, c.want)
		}
	}
}

func TestStdinShapes(t *testing.T) {
	env := shellhooks.Env{Dir: "/p/home", Profile: "work"}
	payload := map[string]any{"tool_name": "echo", "args": map[string]any{"text": "hi"}, "session_id": "s1", "tool_call_id": "c1",
		"result": "hi", "turn_id": "t1"}
	b, err := shellhooks.Stdin(spec(t, "post_tool_call: [{command: x}]"), env, payload, "")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"hook_event_name":"post_tool_call","tool_name":"echo","tool_input":{"text":"hi"},"session_id":"s1","cwd":"/p/home","profile":"work","extra":{"result":"hi","tool_call_id":"c1","turn_id":"t1"}}`
	if string(b) != want {
		t.Fatalf("hermes stdin\n got %s\nwant %s", b, want)
	}
	// A subagent event has no session_id: the parent's stands in.
	b, _ = shellhooks.Stdin(spec(t, "subagent_stop: [{command: x}]"), env, map[string]any{"parent_session_id": "p", "child_session_id": "c"}, "")
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m["session_id"] != "p" || m["tool_input"] != nil || m["tool_name"] != nil {
		t.Fatalf("subagent stdin %s", b)
	}
	b, _ = shellhooks.Stdin(spec(t, "PostToolUse: [{hooks: [{type: command, command: x}]}]"), env, payload, "/p/home/sessions/s1.jsonl")
	m = nil
	_ = json.Unmarshal(b, &m)
	wantC := map[string]any{"session_id": "s1", "transcript_path": "/p/home/sessions/s1.jsonl", "cwd": "/p/home", "hook_event_name": "PostToolUse",
		"permission_mode": "default", "tool_name": "echo", "tool_input": map[string]any{"text": "hi"}, "tool_use_id": "c1", "tool_response": "hi"}
	if !reflect.DeepEqual(m, wantC) {
		t.Fatalf("claude stdin\n got %v\nwant %v", m, wantC)
	}
	for name, p := range map[string]map[string]any{
		"UserPromptSubmit": {"session_id": "s", "user_message": "hello"},
		"SessionEnd":       {"session_id": "s", "reason": "exit"},
		"PreCompact":       {"session_id": "s", "reason": "manual", "focus": "keep the owners"},
		"PostCompact":      {"session_id": "s", "reason": "overflow"},
		"Stop":             {"session_id": "s", "assistant_response": "done", "continues": 1.0},
	} {
		b, _ = shellhooks.Stdin(spec(t, name+": [{hooks: [{type: command, command: x}]}]"), env, p, "")
		m = nil
		_ = json.Unmarshal(b, &m)
		switch name {
		case "UserPromptSubmit":
			if m["prompt"] != "hello" {
				t.Errorf("%s: %s", name, b)
			}
		case "SessionEnd":
			if m["reason"] != "prompt_input_exit" {
				t.Errorf("%s: %s", name, b)
			}
		case "PreCompact":
			if m["trigger"] != "manual" || m["custom_instructions"] != "keep the owners" {
				t.Errorf("%s: %s", name, b)
			}
		case "PostCompact":
			if m["trigger"] != "auto" {
				t.Errorf("%s: %s", name, b)
			}
		case "Stop":
			if m["stop_hook_active"] != true || m["last_assistant_message"] != "done" || m["hook_event_name"] != "Stop" {
				t.Errorf("%s: %s", name, b)
			}
		}
	}
}

func script(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestRunRealCommands(t *testing.T) {
	dir := t.TempDir()
	env := shellhooks.Env{Dir: dir, Profile: "default"}
	script(t, dir, "echo.sh", `cat; echo " $ATRIUM_PROFILE $HERMES_HOME $ATRIUM_HOOK_EVENT $1" >&2; exit 3`)
	script(t, dir, "hang.sh", "sleep 30 & sleep 30\n")
	if err := os.WriteFile(filepath.Join(dir, "plain.sh"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := spec(t, `pre_tool_call: [{command: "./echo.sh 'two words'", timeout: 5}]`)
	o := shellhooks.Run(context.Background(), s, env, []byte(`{"x":1}`))
	if o.ExitCode != 3 || o.Stdout != `{"x":1}` || o.Stderr != " default "+dir+" pre_tool_call two words\n" || o.TimedOut || o.Err != "" {
		t.Fatalf("echo: %+v", o)
	}
	// A hook that hangs is killed with its helpers at its timeout.
	s = spec(t, `pre_tool_call: [{command: ./hang.sh, timeout: 1}]`)
	start := time.Now()
	o = shellhooks.Run(context.Background(), s, env, nil)
	if !o.TimedOut || time.Since(start) > 10*time.Second {
		t.Fatalf("hang: %+v after %s", o, time.Since(start))
	}
	for cmd, want := range map[string]string{
		"./missing.sh":     "command not found",
		"no-such-program9": "command not found",
		"./plain.sh":       "command not executable",
		`"unterminated`:    "cannot be split",
	} {
		s := spec(t, "pre_tool_call: [{command: '"+strings.ReplaceAll(cmd, "'", "''")+"'}]")
		if o := shellhooks.Run(context.Background(), s, env, nil); !strings.Contains(o.Err, want) {
			t.Errorf("%s: %+v, want %q", cmd, o, want)
		}
	}
	// Claude Code's commands are shell command lines.
	s = spec(t, `PreToolUse: [{hooks: [{type: command, command: "cat | tr a-z A-Z; echo $CLAUDE_PROJECT_DIR >&2"}]}]`)
	o = shellhooks.Run(context.Background(), s, env, []byte("abc"))
	if o.Stdout != "ABC" || strings.TrimSpace(o.Stderr) != dir || o.ExitCode != 0 {
		t.Fatalf("claude: %+v", o)
	}
	// Output beyond the bound is dropped, never held in memory whole.
	s = spec(t, `post_tool_call: [{command: "head -c 5000000 /dev/zero"}]`)
	if o := shellhooks.Run(context.Background(), s, env, nil); len(o.Stdout) != 1<<20 || o.ExitCode != 0 {
		t.Fatalf("flood: %d bytes, %+v", len(o.Stdout), o.ExitCode)
	}
}

func TestAllowlist(t *testing.T) {
	dir := t.TempDir()
	script(t, dir, "a.sh", "")
	a := shellhooks.NewAllowlist(dir)
	specs, _ := shellhooks.Parse(section(t, "pre_tool_call: [{command: ./a.sh}]\non_session_delete: [{command: ./a.sh}, {command: 'b > c & d'}]"))
	ok, waiting, err := a.Split(specs, false, time.Now())
	if err != nil || len(ok) != 0 || len(waiting) != 3 {
		t.Fatalf("fresh: %d approved, %d waiting, %v", len(ok), len(waiting), err)
	}
	if err := a.Approve("pre_tool_call", "./a.sh", time.Now()); err != nil {
		t.Fatal(err)
	}
	ok, waiting, _ = a.Split(specs, false, time.Now())
	if len(ok) != 1 || len(waiting) != 2 {
		t.Fatalf("one approved: %d, %d", len(ok), len(waiting))
	}
	ap, _ := a.Find("pre_tool_call", "./a.sh")
	if ap == nil || ap.ScriptTime == nil {
		t.Fatalf("approval %+v: the script's time is recorded", ap)
	}
	// Two processes approving at once both count.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := a.Approve("on_session_delete", "cmd"+string(rune('a'+i)), time.Now()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	list, _ := a.Load()
	if len(list) != 21 {
		t.Fatalf("%d approvals after 21, want 21", len(list))
	}
	ok, waiting, _ = a.Split(specs, true, time.Now())
	if len(ok) != 3 || len(waiting) != 0 {
		t.Fatalf("accept: %d, %d", len(ok), len(waiting))
	}
	b, _ := os.ReadFile(a.Path())
	if !strings.Contains(string(b), `"command": "b > c & d"`) {
		t.Fatalf("the file keeps commands readable:\n%s", b)
	}
	if n, err := a.Revoke("./a.sh"); n != 2 || err != nil {
		t.Fatalf("revoke: %d, %v", n, err)
	}
	if info, _ := os.Stat(a.Path()); info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", info.Mode())
	}
	if err := os.WriteFile(a.Path(), []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Split(specs, false, time.Now()); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("broken file: %v", err)
	}
}

// Registered on a real bus over a real store: a pre_tool_call hook answers
// in line, an observer hook gets each committed event once, in order, and
// nothing for a rollback.
func TestRegistryOnTheBus(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	d, bus := busOn(t, dir)
	script(t, dir, "guard.sh", `grep -q '"rm"' && echo '{"action":"block","message":"not rm"}'; exit 0`)
	script(t, dir, "log.sh", `cat >> "$ATRIUM_HOME/seen.log"; echo >> "$ATRIUM_HOME/seen.log"`)
	specs, _ := shellhooks.Parse(section(t, `
pre_tool_call: [{command: ./guard.sh, matcher: "shell|rm"}]
on_session_delete: [{command: ./log.sh}]
post_compaction: [{command: ./log.sh}]
`))
	reg := shellhooks.NewRegistry(shellhooks.Options{Bus: bus, Env: shellhooks.Env{Dir: dir, Profile: "default"}})
	names, err := reg.Apply(specs)
	if err != nil || !reflect.DeepEqual(names, []string{"shell:./log.sh", "shell:./guard.sh"}) {
		t.Fatalf("apply: %v, %v", names, err)
	}
	if err := bus.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	decide := func(tool string) hooks.ToolDecision {
		res, err := bus.CallSync(ctx, hooks.PreToolCall, hooks.ToolCallPayload{ToolName: tool, Args: map[string]any{}, SessionID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		return hooks.DecideToolCall(res, nil)
	}
	if d := decide("rm"); d.Action != "block" || d.Message != "not rm" || d.Plugin != "shell:./guard.sh" {
		t.Fatalf("rm: %+v", d)
	}
	if d := decide("echo"); d.Action != "" {
		t.Fatalf("echo (matcher leaves it out): %+v", d)
	}
	enqueue := func(hook string, payload any, rollback bool) int64 {
		var seq int64
		errRollback := context.Canceled
		err := d.InTx(ctx, func(tx *db.Tx) error {
			ev, err := bus.EnqueueTx(ctx, tx, hook, payload)
			seq = ev.Seq
			if err == nil && rollback {
				return errRollback
			}
			return err
		})
		if err != nil && !rollback {
			t.Fatal(err)
		}
		return seq
	}
	enqueue(hooks.OnSessionDelete, hooks.SessionDelete{SessionID: "a", Reason: "delete", DeletedIDs: []string{"a"}}, false)
	enqueue(hooks.OnSessionDelete, hooks.SessionDelete{SessionID: "gone", Reason: "delete", DeletedIDs: []string{"gone"}}, true)
	last := enqueue(hooks.PostCompaction, hooks.PostCompactionPayload{SessionID: "b", Kind: "summarize", Reason: "manual"}, false)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := bus.WaitDelivered(wctx, last); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "seen.log"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"hook_event_name":"on_session_delete","tool_name":null,"tool_input":null,"session_id":"a"`) ||
		!strings.Contains(lines[1], `"hook_event_name":"post_compaction"`) || strings.Contains(string(b), "gone") {
		t.Fatalf("observer saw:\n%s", b)
	}
	// Applying the same specs keeps the registration; none unregisters.
	if _, err := reg.Apply(specs); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Apply(nil); err != nil {
		t.Fatal(err)
	}
	if d := decide("rm"); d.Action != "" {
		t.Fatalf("after unregistering: %+v", d)
	}
}

// Claude Code's SessionStart runs in line at a turn that begins a
// session's context anew (session_start: startup, clear, compact), its
// matcher the source; Atrium has no "resume", and a hook only for it is
// not registered.
func TestSessionStartRunsWhereTheContextBeginsAnew(t *testing.T) {
	specs, warns := shellhooks.Parse(section(t, `
SessionStart:
  - hooks: [{type: command, command: any}]
  - {matcher: "startup", hooks: [{type: command, command: startup}]}
  - {matcher: "startup|resume", hooks: [{type: command, command: either}]}
  - {matcher: "compact", hooks: [{type: command, command: compact}]}
  - {matcher: "resume", hooks: [{type: command, command: resume}]}
`))
	var cmds []string
	for _, s := range specs {
		if s.Event != hooks.PreLLMCall {
			t.Errorf("spec %+v", s)
		}
		cmds = append(cmds, s.Command+"="+s.Matcher)
	}
	if strings.Join(cmds, " ") != "any= startup=startup either=startup|resume compact=compact" || len(warns) != 1 ||
		!strings.Contains(warns[0], `hooks.SessionStart[4].matcher "resume": Atrium starts a session's context only as Claude Code's "startup", "clear" or "compact"`) {
		t.Fatalf("specs %v, warnings %q", cmds, warns)
	}
	// On a real bus: each answers where its source begins the context,
	// and is not run at other turns.
	dir := t.TempDir()
	log := filepath.Join(dir, "ran")
	ctx := context.Background()
	_, bus := busOn(t, dir)
	reg := shellhooks.NewRegistry(shellhooks.Options{Bus: bus, Env: shellhooks.Env{Dir: dir}})
	defer reg.Close()
	all := spec(t, `SessionStart: [{hooks: [{type: command, command: "cat >> `+log+`; echo; echo 'notes: staging first'"}]}]`)
	compact := spec(t, `SessionStart: [{matcher: compact, hooks: [{type: command, command: "cat >/dev/null; echo 'after the summary: the rules again'"}]}]`)
	if _, err := reg.Apply([]shellhooks.Spec{all, compact}); err != nil {
		t.Fatal(err)
	}
	if err := bus.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	for _, c := range []struct{ start, want string }{
		{"startup", "[notes: staging first]"},
		{"", "[]"},
		{"compact", "[after the summary: the rules again notes: staging first]"},
		{"clear", "[notes: staging first]"},
	} {
		res, err := bus.CallSync(ctx, hooks.PreLLMCall, hooks.LLMCall{SessionID: "s1", UserMessage: "hi", IsFirstTurn: c.start == "startup", SessionStart: c.start})
		if err != nil {
			t.Fatal(err)
		}
		got := hooks.ContextTexts(res)
		sort.Strings(got)
		if fmt.Sprint(got) != c.want {
			t.Errorf("session_start %q: context %q, want %s", c.start, got, c.want)
		}
	}
	b, _ := os.ReadFile(log)
	if n := strings.Count(string(b), `"hook_event_name":"SessionStart"`); n != 3 || !strings.Contains(string(b), `"source":"startup"`) ||
		!strings.Contains(string(b), `"source":"compact"`) || !strings.Contains(string(b), `"source":"clear"`) {
		t.Fatalf("ran %d times; stdin %s", n, b)
	}
}

// busOn is a real store in dir, closed with the test, and a hook bus on it
// (not started).
func busOn(t *testing.T, dir string) (*db.DB, *hooks.Bus) {
	t.Helper()
	d, err := db.Open(context.Background(), filepath.Join(dir, "state.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, hooks.NewBus(d, hooks.Options{Timeout: 10 * time.Second})
}

// Claude Code's PostToolUse is for a tool call that succeeded and
// PostToolUseFailure for one that failed (with the error on stdin); a
// blocked call ran neither. Its events Atrium has no moment for are said so
// when parsed, not called unknown.
func TestClaudeToolOutcomesAndForeignEvents(t *testing.T) {
	specs, warns := shellhooks.Parse(section(t, `
PostToolUse: [{matcher: echo, hooks: [{type: command, command: ok}]}]
PostToolUseFailure: [{matcher: "echo|big_output", hooks: [{type: command, command: failed}]}]
Notification:
  - hooks: [{type: command, command: notify-send}]
  - {matcher: "permission_prompt|idle_prompt", hooks: [{type: command, command: permission}]}
  - {matcher: idle_prompt, hooks: [{type: command, command: idle}]}
TaskCreated: [{hooks: [{type: command, command: x}]}]
`))
	if len(specs) != 4 || len(warns) != 2 ||
		!strings.Contains(warns[0], `hooks.Notification[2].matcher "idle_prompt": Atrium's only notification is "permission_prompt"`) ||
		!strings.Contains(warns[1], "hooks.TaskCreated: Claude Code's TaskCreated has no moment in Atrium") {
		t.Fatalf("specs %+v, warnings %q", specs, warns)
	}
	for _, s := range specs {
		if s.Name == "Notification" {
			if ok, why := shellhooks.Applies(s, map[string]any{"tool_name": "echo"}); !ok || s.Event != hooks.PreApprovalRequest {
				t.Errorf("%s: runs %v (%s), event %s", s.Command, ok, why, s.Event)
			}
		}
	}
	b, _ := shellhooks.Stdin(specs[1], shellhooks.Env{Dir: "/h"}, map[string]any{"session_id": "s", "tool_name": "write_file",
		"description": "writes outside the project"}, "")
	var n map[string]any
	_ = json.Unmarshal(b, &n)
	if n["hook_event_name"] != "Notification" || n["notification_type"] != "permission_prompt" ||
		n["message"] != "Atrium needs your permission to use write_file: writes outside the project" {
		t.Fatalf("Notification stdin: %s", b)
	}
	byName := map[string]shellhooks.Spec{}
	for _, s := range specs {
		byName[s.Name] = s
	}
	run := func(name, tool, status string) bool {
		ok, _ := shellhooks.Applies(byName[name], map[string]any{"tool_name": tool, "status": status})
		return ok
	}
	for _, c := range []struct {
		name, tool, status string
		want               bool
	}{
		{"PostToolUse", "echo", "ok", true}, {"PostToolUse", "echo", "error", false}, {"PostToolUse", "echo", "blocked", false},
		{"PostToolUse", "big_output", "ok", false},
		{"PostToolUseFailure", "echo", "error", true}, {"PostToolUseFailure", "big_output", "error", true},
		{"PostToolUseFailure", "echo", "ok", false}, {"PostToolUseFailure", "echo", "blocked", false},
		{"PostToolUseFailure", "other", "error", false},
	} {
		if got := run(c.name, c.tool, c.status); got != c.want {
			t.Errorf("%s for %s with status %s: runs %v, want %v", c.name, c.tool, c.status, got, c.want)
		}
	}
	b, _ = shellhooks.Stdin(byName["PostToolUseFailure"], shellhooks.Env{Dir: "/h"}, map[string]any{"session_id": "s", "tool_name": "echo",
		"args": map[string]any{"text": "x"}, "tool_call_id": "c1", "status": "error", "error_message": "boom"}, "")
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m["hook_event_name"] != "PostToolUseFailure" || m["error"] != "boom" || m["is_interrupt"] != false || m["tool_use_id"] != "c1" ||
		m["tool_response"] != nil {
		t.Fatalf("PostToolUseFailure stdin: %s", b)
	}
}

// A tool call a stop cut short is a PostToolUseFailure with is_interrupt,
// as Claude Code reports an interrupted call.
func TestClaudeInterruptedToolCall(t *testing.T) {
	specs, _ := shellhooks.Parse(section(t, "PostToolUseFailure: [{hooks: [{type: command, command: x}]}]"))
	for _, c := range []struct {
		errType string
		want    bool
	}{{"interrupted", true}, {"tool_error", false}} {
		b, _ := shellhooks.Stdin(specs[0], shellhooks.Env{Dir: "/h"}, map[string]any{"session_id": "s", "tool_name": "echo",
			"status": "error", "error_type": c.errType, "error_message": "not finished"}, "")
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if m["is_interrupt"] != c.want || m["error"] != "not finished" {
			t.Fatalf("%s: stdin %s", c.errType, b)
		}
	}
}
