package turns_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"atrium/backend/approvals"
	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// machineEnv is a loop that offers the machine's tools, its conversations
// starting in a folder of the test's.
type machineEnv struct {
	env
	dir  string
	home config.Home
}

func newMachineEnv(t *testing.T, settings func(*tools.Settings), approve func(turns.Approval) turns.Answer, register ...func(*hooks.Bus)) machineEnv {
	t.Helper()
	return newMachineEnvWith(t, nil, settings, approve, register...)
}

// newMachineEnvWith is newMachineEnv with the loop's options changed by
// opts (its provider, its limits) before it is built.
func newMachineEnvWith(t *testing.T, opts func(*turns.Options), settings func(*tools.Settings), approve func(turns.Approval) turns.Answer,
	register ...func(*hooks.Bus)) machineEnv {
	t.Helper()
	e := newEnv(t, 100000, nil, register...)
	dir := t.TempDir()
	home := config.Home{Root: t.TempDir(), Profile: "default"}
	home.Dir = home.Root
	if err := os.WriteFile(home.ConfigPath(), []byte("sessions:\n  retention_days: 30\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	procs := tools.NewProcesses()
	t.Cleanup(procs.Close)
	o := turns.Options{Provider: llm.OfflineProvider{Window: 100000}, Standing: approvals.New(home), Processes: procs,
		Machine: func() tools.Settings {
			s := tools.Settings{Cwd: dir, Protected: []string{home.ConfigPath(), home.EnvPath(), home.StatePath()}, Secrets: []string{home.EnvPath()}}
			if settings != nil {
				settings(&s)
			}
			return s
		}}
	if approve != nil {
		var mu sync.Mutex
		o.Approve = func(_ context.Context, a turns.Approval) (turns.Answer, error) {
			mu.Lock()
			defer mu.Unlock()
			return approve(a), nil
		}
	}
	if opts != nil {
		opts(&o)
	}
	loop, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, o)
	if err != nil {
		t.Fatal(err)
	}
	e.loop = loop
	return machineEnv{env: e, dir: dir, home: home}
}

// call asks the offline model to call tool with args in conversation id on
// platform, and returns the turn and the tool's stored result.
func (m machineEnv) call(t *testing.T, platform, id, tool string, args map[string]any) (turns.Turn, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(args)
	turn, err := m.loop.Send(ctx, id, "use tool "+tool+": "+string(b), hooks.LocalContext(platform, id))
	if err != nil {
		t.Fatalf("%s %s: %v", tool, b, err)
	}
	content, found := sessionstest.LastToolResult(t, m.Sessions, id)
	if !found {
		return turn, nil
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(content), &out); err != nil {
		t.Fatalf("%s: the result is no JSON object: %q", tool, content)
	}
	return turn, out
}

func (m machineEnv) toolResults(t *testing.T) []hooks.ToolResultPayload {
	t.Helper()
	return decodeAll[hooks.ToolResultPayload](t, m.env, hooks.PostToolCall)
}

// The agent works in a folder as a person at a terminal does: a cd holds
// for the conversation's next command, files are written and read where
// it stands, another conversation starts afresh in terminal.cwd, and
// post_tool_call tells plugins what ran, as the familiar agent's does.
func TestTheMachinesToolsWorkInTheConversationsFolder(t *testing.T) {
	t.Parallel()
	m := newMachineEnv(t, nil, nil)
	s := m.MustCreate(t, sessions.CreateParams{Title: "work"})
	if _, out := m.call(t, "cli", s.ID, "terminal", map[string]any{"command": "mkdir sub && cd sub && pwd"}); out["exit_code"] != 0.0 ||
		out["output"] != filepath.Join(m.dir, "sub") || out["error"] != nil {
		t.Fatalf("mkdir and cd: %v", out)
	}
	if _, out := m.call(t, "cli", s.ID, "write_file", map[string]any{"path": "notes.txt", "content": "first\nsecond\n"}); out["bytes_written"] != 13.0 {
		t.Fatalf("write_file: %v", out)
	}
	if b, err := os.ReadFile(filepath.Join(m.dir, "sub", "notes.txt")); err != nil || string(b) != "first\nsecond\n" {
		t.Fatalf("the file where the conversation stands: %q %v", b, err)
	}
	if _, out := m.call(t, "cli", s.ID, "read_file", map[string]any{"path": "notes.txt"}); out["content"] != "1|first\n2|second" || out["total_lines"] != 2.0 {
		t.Fatalf("read_file: %v", out)
	}
	if _, out := m.call(t, "cli", s.ID, "patch", map[string]any{"path": "notes.txt", "old_string": "second", "new_string": "2nd"}); out["success"] != true ||
		!strings.Contains(fmt.Sprint(out["diff"]), "-second\n+2nd\n") {
		t.Fatalf("patch: %v", out)
	}
	if _, out := m.call(t, "cli", s.ID, "search_files", map[string]any{"pattern": "2nd"}); fmt.Sprint(out["matches"]) != "[map[content:2nd line:2 path:notes.txt]]" {
		t.Fatalf("search_files: %v", out)
	}
	if _, out := m.call(t, "cli", s.ID, "terminal", map[string]any{"command": "grep -c first notes.txt; exit 3"}); out["exit_code"] != 3.0 || out["output"] != "1" {
		t.Fatalf("a failing command: %v", out)
	}
	other := m.MustCreate(t, sessions.CreateParams{Title: "elsewhere"})
	if _, out := m.call(t, "desktop", other.ID, "terminal", map[string]any{"command": "pwd"}); out["output"] != m.dir {
		t.Fatalf("another conversation starts in terminal.cwd: %v", out)
	}
	res := m.toolResults(t)
	if len(res) != 7 {
		t.Fatalf("post_tool_call: %d events", len(res))
	}
	if p := res[0]; p.ToolName != "terminal" || p.Args["command"] != "mkdir sub && cd sub && pwd" || p.Status != "ok" || p.ErrorType != nil ||
		p.SessionID != s.ID || !strings.Contains(p.Result, `"exit_code":0`) {
		t.Fatalf("post_tool_call of the terminal: %+v", p)
	}
	if p := res[5]; p.Status != "ok" || !strings.Contains(p.Result, `"exit_code":3`) {
		t.Fatalf("a command that exits non-zero is a result, not a failed call: %+v", p)
	}
	// Seven tool results in one conversation: the old ones are pruned
	// proactively, as any tool's are.
	if p := m.posts(t); len(p) != 1 || p[0].Kind != "prune_tool_results" {
		t.Fatalf("post_compaction: %+v", p)
	}
	m.Rec.Expect(t, m.Bus, map[string]int{hooks.PostToolCall: 7, hooks.PostLLMCall: 7, hooks.OnSessionEnd: 7, hooks.OnSessionStart: 2, hooks.PostCompaction: 1})
}

// toolsets and platform_toolsets choose what a turn offers, as the familiar
// agent's do; a tool not offered is not run.
func TestToolsetsChooseWhatATurnOffers(t *testing.T) {
	t.Parallel()
	m := newMachineEnv(t, func(s *tools.Settings) {
		s.Toolsets = []string{"file"}
		s.PlatformToolsets = map[string][]string{"telegram": {"terminal"}}
	}, nil)
	s := m.MustCreate(t, sessions.CreateParams{Title: "sets"})
	turn, _ := m.call(t, "cli", s.ID, "terminal", map[string]any{"command": "touch ran"})
	if len(turn.ToolCalls) != 0 {
		t.Fatalf("the terminal is not offered with toolsets: [file]: %+v", turn)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "ran")); err == nil {
		t.Fatal("the command ran")
	}
	if _, out := m.call(t, "cli", s.ID, "write_file", map[string]any{"path": "a.txt", "content": "x"}); out["bytes_written"] != 1.0 {
		t.Fatalf("the file tools are: %v", out)
	}
	g := m.MustCreate(t, sessions.CreateParams{Title: "chat"})
	if turn, out := m.call(t, "telegram", g.ID, "terminal", map[string]any{"command": "echo hi"}); out["output"] != "hi" || len(turn.ToolCalls) != 1 {
		t.Fatalf("platform_toolsets.telegram: [terminal]: %v", out)
	}
	if turn, _ := m.call(t, "telegram", g.ID, "read_file", map[string]any{"path": "a.txt"}); len(turn.ToolCalls) != 0 {
		t.Fatalf("telegram's own list has no file tools: %+v", turn)
	}
	m.Rec.Expect(t, m.Bus, map[string]int{hooks.PostToolCall: 2, hooks.PostLLMCall: 4, hooks.OnSessionEnd: 4, hooks.OnSessionStart: 2})
}

// A terminal command that could destroy data waits for a person, under the
// familiar agent's rule names: a no blocks it, a yes runs it once, "for
// this session" lets the rule run in this conversation only, a rule in
// command_allowlist runs everywhere without asking, approvals.mode: off
// runs it without asking. The approval hooks fire for each ask, and never
// for a safe command.
func TestADangerousCommandWaitsForAPerson(t *testing.T) {
	t.Parallel()
	var asked []turns.Approval
	answers := []turns.Answer{turns.AnswerDeny, turns.AnswerOnce, turns.AnswerSession}
	m := newMachineEnv(t, nil, func(a turns.Approval) turns.Answer {
		asked = append(asked, a)
		return answers[len(asked)-1]
	})
	s := m.MustCreate(t, sessions.CreateParams{Title: "cleanup"})
	victim := func(name string) string {
		p := filepath.Join(m.dir, name)
		if err := os.MkdirAll(filepath.Join(p, "inner"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := func(p string) bool { _, err := os.Stat(p); return os.IsNotExist(err) }

	one := victim("one")
	turn, out := m.call(t, "desktop", s.ID, "terminal", map[string]any{"command": "rm -r one"})
	if len(turn.Blocked) != 1 || !strings.Contains(fmt.Sprint(out["error"]), "BLOCKED: a person's approval is required for this command (recursive delete)") || gone(one) {
		t.Fatalf("denied: %+v %v", turn, out)
	}
	if a := asked[0]; a.Plugin != "" || a.ToolName != "terminal" || a.PatternKey != "recursive delete" || a.Args["command"] != "rm -r one" ||
		a.Message != "This command could destroy data: recursive delete." || a.KeepAlways == nil || a.Asker() != "the terminal" {
		t.Fatalf("the ask: %+v", a)
	}
	if _, out := m.call(t, "desktop", s.ID, "terminal", map[string]any{"command": "rm -r one"}); out["exit_code"] != 0.0 || !gone(one) {
		t.Fatalf("approved once: %v", out)
	}
	two := victim("two")
	if _, out := m.call(t, "desktop", s.ID, "terminal", map[string]any{"command": "rm -r two"}); out["exit_code"] != 0.0 || !gone(two) {
		t.Fatalf("for the session: %v", out)
	}
	three := victim("three")
	if _, out := m.call(t, "desktop", s.ID, "terminal", map[string]any{"command": "rm -rf three"}); out["exit_code"] != 0.0 || !gone(three) || len(asked) != 3 {
		t.Fatalf("the rule runs in this conversation without asking: %v, %d asks", out, len(asked))
	}
	// A safe command asks nobody.
	if _, out := m.call(t, "desktop", s.ID, "terminal", map[string]any{"command": "ls"}); out["exit_code"] != 0.0 || len(asked) != 3 {
		t.Fatalf("a safe command: %v, %d asks", out, len(asked))
	}
	m.Rec.Expect(t, m.Bus, map[string]int{hooks.PreApprovalRequest: 3, hooks.PostApprovalResp: 3, hooks.PostToolCall: 5,
		hooks.PostLLMCall: 5, hooks.OnSessionEnd: 5, hooks.OnSessionStart: 1})
	var pre hooks.ApprovalPayload
	if err := m.Rec.Events(hooks.PreApprovalRequest)[0].Decode(&pre); err != nil {
		t.Fatal(err)
	}
	if pre.Command != "rm -r one" || pre.PatternKey != "recursive delete" || pre.Description != "This command could destroy data: recursive delete." ||
		pre.ToolName != "terminal" || pre.Surface != "desktop" {
		t.Fatalf("pre_approval_request: %+v", pre)
	}

	// Another conversation is asked again; a rule in command_allowlist
	// (as the familiar agent keeps it) runs there without asking.
	other := m.MustCreate(t, sessions.CreateParams{Title: "other"})
	if err := os.WriteFile(m.home.ConfigPath(), []byte("command_allowlist:\n  - recursive delete\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	four := victim("four")
	if _, out := m.call(t, "desktop", other.ID, "terminal", map[string]any{"command": "rm -r four"}); out["exit_code"] != 0.0 || !gone(four) || len(asked) != 3 {
		t.Fatalf("command_allowlist: %v, %d asks", out, len(asked))
	}
	// approvals.mode: off runs any rule without asking.
	if err := os.WriteFile(m.home.ConfigPath(), []byte("approvals:\n  mode: \"off\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, out := m.call(t, "desktop", other.ID, "terminal", map[string]any{"command": "git reset --hard 2>/dev/null; echo done"}); out["output"] != "done" || len(asked) != 3 {
		t.Fatalf("approvals.mode: off: %v, %d asks", out, len(asked))
	}
}

// A command nobody can undo never runs: not on a yes, not with
// approvals.mode: off, not for a plugin's dispatch_tool; nobody is asked.
func TestACommandNobodyCanUndoNeverRuns(t *testing.T) {
	t.Parallel()
	asks := 0
	m := newMachineEnv(t, nil, func(turns.Approval) turns.Answer { asks++; return turns.AnswerAlways })
	if err := os.WriteFile(m.home.ConfigPath(), []byte("approvals:\n  mode: \"off\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := m.MustCreate(t, sessions.CreateParams{Title: "wipe"})
	for _, command := range []string{"rm -rf /", "sudo rm -rf --no-preserve-root /", "mkfs.ext4 /dev/sda1", "shutdown -h now"} {
		turn, out := m.call(t, "desktop", s.ID, "terminal", map[string]any{"command": command})
		if len(turn.Blocked) != 1 || !strings.Contains(fmt.Sprint(out["error"]), "nobody can undo never runs") {
			t.Fatalf("%s: %+v %v", command, turn, out)
		}
	}
	out, err := m.loop.DispatchTool(ctx, "cli:"+s.ID, "terminal", map[string]any{"command": "rm -rf /"})
	if err != nil || !strings.Contains(out, "BLOCKED: recursive delete of root filesystem") {
		t.Fatalf("dispatch_tool: %s %v", out, err)
	}
	if asks != 0 {
		t.Fatalf("asked %d times", asks)
	}
	res := m.toolResults(t)
	if len(res) != 4 || res[0].Status != "blocked" {
		t.Fatalf("post_tool_call: %+v", res)
	}
	m.Rec.Expect(t, m.Bus, map[string]int{hooks.PostToolCall: 4, hooks.PostLLMCall: 4, hooks.OnSessionEnd: 4, hooks.OnSessionStart: 1})
}

// A guard plugin written for the familiar agent sees the terminal's calls
// as it expects (tool_name "terminal", args["command"]) and blocks them
// before anything runs; the model reads its message.
func TestAPluginGuardsTheTerminalAsInTheFamiliarAgent(t *testing.T) {
	t.Parallel()
	var seen []hooks.ToolCallPayload
	var mu sync.Mutex
	m := newMachineEnv(t, nil, nil, func(bus *hooks.Bus) {
		if _, err := bus.RegisterSync("readonly-guard", hooks.PreToolCall, func(_ context.Context, raw json.RawMessage) (any, error) {
			var p hooks.ToolCallPayload
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
			if command, _ := p.Args["command"].(string); p.ToolName == "terminal" && strings.Contains(command, "touch") {
				return map[string]any{"action": "block", "message": "read-only mode: no writes"}, nil
			}
			if p.ToolName == "write_file" {
				return map[string]any{"action": "block", "message": "read-only mode: no writes"}, nil
			}
			return nil, nil
		}); err != nil {
			panic(err)
		}
	})
	s := m.MustCreate(t, sessions.CreateParams{Title: "guarded"})
	turn, out := m.call(t, "cli", s.ID, "terminal", map[string]any{"command": "touch made"})
	if len(turn.Blocked) != 1 || out["error"] != "read-only mode: no writes" {
		t.Fatalf("blocked: %+v %v", turn, out)
	}
	if _, out := m.call(t, "cli", s.ID, "write_file", map[string]any{"path": "made", "content": "x"}); out["error"] != "read-only mode: no writes" {
		t.Fatalf("write_file: %v", out)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "made")); err == nil {
		t.Fatal("a blocked call wrote")
	}
	if _, out := m.call(t, "cli", s.ID, "terminal", map[string]any{"command": "echo fine"}); out["output"] != "fine" {
		t.Fatalf("allowed: %v", out)
	}
	if len(seen) != 3 || seen[0].ToolName != "terminal" || seen[0].Args["command"] != "touch made" || seen[0].SessionID != s.ID || seen[0].ToolCallID == "" {
		t.Fatalf("pre_tool_call payloads: %+v", seen)
	}
}

// No tool writes the profile's own config.yaml (its standing approvals),
// .env or store; a terminal command that would asks a person first.
func TestTheProfilesOwnFilesAreNotTheAgents(t *testing.T) {
	t.Parallel()
	var asked []string
	m := newMachineEnv(t, nil, func(a turns.Approval) turns.Answer { asked = append(asked, a.PatternKey); return turns.AnswerDeny })
	before, _ := os.ReadFile(m.home.ConfigPath())
	s := m.MustCreate(t, sessions.CreateParams{Title: "escalate"})
	_, out := m.call(t, "cli", s.ID, "write_file", map[string]any{"path": m.home.ConfigPath(), "content": "command_allowlist: [recursive delete]\n"})
	if !strings.Contains(fmt.Sprint(out["error"]), "is the profile's own") {
		t.Fatalf("write_file: %v", out)
	}
	_, out = m.call(t, "cli", s.ID, "patch", map[string]any{"path": m.home.ConfigPath(), "old_string": "30", "new_string": "1"})
	if !strings.Contains(fmt.Sprint(out["error"]), "is the profile's own") {
		t.Fatalf("patch: %v", out)
	}
	_, out = m.call(t, "desktop", s.ID, "terminal", map[string]any{"command": "echo 'approvals: {mode: off}' >> " + m.home.ConfigPath()})
	if !strings.Contains(fmt.Sprint(out["error"]), "BLOCKED") || fmt.Sprint(asked) != "[write to the profile's config.yaml, .env or store]" {
		t.Fatalf("terminal: %v %v", out, asked)
	}
	if after, _ := os.ReadFile(m.home.ConfigPath()); string(after) != string(before) {
		t.Fatalf("config.yaml changed: %q", after)
	}
	// Its keys are not the model's to read, nor to find.
	if err := os.WriteFile(m.home.EnvPath(), []byte("OPENAI_API_KEY=sk-very-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, out = m.call(t, "cli", s.ID, "read_file", map[string]any{"path": m.home.EnvPath()})
	if !strings.Contains(fmt.Sprint(out["error"]), "keys and tokens") {
		t.Fatalf("read_file of .env: %v", out)
	}
	_, out = m.call(t, "cli", s.ID, "search_files", map[string]any{"pattern": "sk-very", "path": m.home.Root})
	if out["total_count"] != 0.0 || strings.Contains(fmt.Sprint(out), "sk-very-secret") {
		t.Fatalf("search_files over the profile: %v", out)
	}
	_, out = m.call(t, "cli", s.ID, "search_files", map[string]any{"pattern": "sk-very", "path": m.home.EnvPath()})
	if !strings.Contains(fmt.Sprint(out["error"]), "keys and tokens") {
		t.Fatalf("search_files of .env: %v", out)
	}
	res := m.toolResults(t)
	if len(res) != 6 || res[0].Status != "error" || res[0].ErrorType == nil || *res[0].ErrorType != "tool_error" {
		t.Fatalf("post_tool_call: %+v", res)
	}
}

// busyModel asks for a tool at every call it is offered tools, and answers
// in words when it is offered none.
type busyModel struct {
	mu       sync.Mutex
	withTool int
	last     llm.Request
}

func (*busyModel) Name() string       { return "busy" }
func (*busyModel) ContextWindow() int { return 100000 }
func (b *busyModel) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = req
	if len(req.Tools) == 0 {
		return llm.Response{Content: "I listed the folder three times; nothing else is left."}, nil
	}
	b.withTool++
	return llm.Response{ToolCalls: []llm.ToolCall{{ID: fmt.Sprint("call_", b.withTool), Name: "terminal", Arguments: `{"command":"ls"}`}}}, nil
}

// A model that never stops calling tools gets agent.max_turns rounds, then
// is asked once, tools withheld, for its answer so far: the turn ends with
// that answer (turn_exit_reason max_iterations_reached), not an error.
func TestATurnThatReachesMaxTurnsAnswersWithWhatItHas(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, nil)
	model := &busyModel{}
	dir := t.TempDir()
	loop, err := turns.New(e.DB, e.Sessions, e.eng, e.Bus, turns.Options{Provider: model, MaxRounds: func() int { return 3 },
		Machine: func() tools.Settings { return tools.Settings{Cwd: dir} }})
	if err != nil {
		t.Fatal(err)
	}
	s := e.MustCreate(t, sessions.CreateParams{Title: "busy"})
	turn, err := loop.Send(ctx, s.ID, "tidy up", hooks.LocalContext("cli", s.ID))
	if err != nil || turn.Reply != "I listed the folder three times; nothing else is left." || len(turn.ToolCalls) != 3 {
		t.Fatalf("turn: %+v %v", turn, err)
	}
	if last := model.last.Messages[len(model.last.Messages)-1]; model.withTool != 3 || last.Role != "user" || !strings.Contains(last.Content, "agent.max_turns") {
		t.Fatalf("the last ask: %d rounds, %+v", model.withTool, last)
	}
	e.Rec.Expect(t, e.Bus, map[string]int{hooks.PostToolCall: 3, hooks.PostLLMCall: 1, hooks.OnSessionEnd: 1, hooks.OnSessionStart: 1})
	var end hooks.SessionEnd
	if err := e.Rec.Events(hooks.OnSessionEnd)[0].Decode(&end); err != nil || end.TurnExitReason != turns.ExitMaxRounds || !end.Completed {
		t.Fatalf("on_session_end: %+v %v", end, err)
	}
	// The note to the model is not kept in the conversation.
	msgs, _ := e.Sessions.Messages(ctx, s.ID, false)
	for _, m := range msgs {
		if strings.Contains(m.Content, "agent.max_turns") {
			t.Fatalf("stored: %+v", m)
		}
	}
}

// transform_terminal_output is called as the familiar agent calls it
// (command, output, returncode, task_id, env_type): the first string
// answered replaces what the model reads, an empty one too; None leaves it.
func TestTransformTerminalOutputAsTheFamiliarAgentCallsIt(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []map[string]any
	m := newMachineEnv(t, nil, nil, func(bus *hooks.Bus) {
		if _, err := bus.RegisterSync("observer", hooks.TransformTermOut, func(_ context.Context, raw json.RawMessage) (any, error) {
			var p map[string]any
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
			return nil, nil // leaves it
		}); err != nil {
			panic(err)
		}
		if _, err := bus.RegisterSync("squash", hooks.TransformTermOut, func(_ context.Context, raw json.RawMessage) (any, error) {
			var p hooks.TerminalOutput
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			switch {
			case strings.Contains(p.Command, "silence"):
				return "", nil
			case strings.Contains(p.Command, "flood"):
				return strings.Repeat("x", 3*tools.MaxOutput), nil
			case strings.Contains(p.Output, "\r"):
				lines := strings.Split(p.Output, "\r")
				return lines[len(lines)-1], nil // progress frames collapsed
			}
			return nil, nil
		}); err != nil {
			panic(err)
		}
	})
	s := m.MustCreate(t, sessions.CreateParams{Title: "progress"})
	if _, out := m.call(t, "cli", s.ID, "terminal", map[string]any{"command": `printf '10%%\r50%%\rdone'; exit 2`}); out["output"] != "done" || out["exit_code"] != 2.0 {
		t.Fatalf("squashed: %v", out)
	}
	if _, out := m.call(t, "cli", s.ID, "terminal", map[string]any{"command": "echo plain"}); out["output"] != "plain" {
		t.Fatalf("left as it was: %v", out)
	}
	if _, out := m.call(t, "cli", s.ID, "terminal", map[string]any{"command": "echo silence"}); out["output"] != "" {
		t.Fatalf("an empty string replaces: %v", out)
	}
	if _, out := m.call(t, "cli", s.ID, "terminal", map[string]any{"command": "echo flood"}); len(out["output"].(string)) > tools.MaxOutput+200 {
		t.Fatalf("a replacement is bounded as the output is: %d bytes", len(out["output"].(string)))
	}
	if len(seen) != 4 {
		t.Fatalf("calls: %d", len(seen))
	}
	if p := seen[0]; p["command"] != `printf '10%%\r50%%\rdone'; exit 2` || p["output"] != "10%\r50%\rdone" || p["returncode"] != 2.0 ||
		p["env_type"] != "local" || p["task_id"] != s.ID || p["session_id"] != s.ID || p["tool_call_id"] == "" {
		t.Fatalf("payload: %q", p)
	}
	// Not for the other tools.
	m.call(t, "cli", s.ID, "write_file", map[string]any{"path": "x.txt", "content": "x"})
	if len(seen) != 4 {
		t.Fatalf("called for write_file: %d", len(seen))
	}
}

// pre_verify is asked as the familiar agent asks it, only at the end of a
// turn whose tools changed files (coding, changed_paths), and its
// "continue" sends the model back with the message, once per answer.
func TestPreVerifyIsAskedWhenTheTurnChangedFiles(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []hooks.TurnEndPayload
	m := newMachineEnv(t, nil, nil, func(bus *hooks.Bus) {
		if _, err := bus.RegisterSync("verifier", hooks.PreVerify, func(_ context.Context, raw json.RawMessage) (any, error) {
			var p hooks.TurnEndPayload
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			mu.Lock()
			seen = append(seen, p)
			mu.Unlock()
			if p.Attempt == 0 {
				return map[string]any{"action": "continue", "message": "run the tests before you finish"}, nil
			}
			return nil, nil
		}); err != nil {
			panic(err)
		}
	})
	s := m.MustCreate(t, sessions.CreateParams{Title: "edit"})
	if turn, _ := m.call(t, "cli", s.ID, "terminal", map[string]any{"command": "ls"}); len(turn.Continued) != 0 || len(seen) != 0 {
		t.Fatalf("a turn that changed no file: %+v, %d asks", turn, len(seen))
	}
	turn, _ := m.call(t, "cli", s.ID, "write_file", map[string]any{"path": "main.go", "content": "package main\n"})
	if len(turn.Continued) != 1 || turn.Continued[0].Feedback != "run the tests before you finish" || turn.Reply != "offline reply to: run the tests before you finish" {
		t.Fatalf("continued: %+v", turn)
	}
	if len(seen) != 2 || !seen[0].Coding || fmt.Sprint(seen[0].ChangedPaths) != "["+filepath.Join(m.dir, "main.go")+"]" || seen[0].Attempt != 0 ||
		seen[1].Attempt != 1 || seen[0].FinalResponse == "" {
		t.Fatalf("pre_verify payloads: %+v", seen)
	}
	m.Rec.Expect(t, m.Bus, map[string]int{hooks.PostToolCall: 2, hooks.PostLLMCall: 3, hooks.OnSessionEnd: 2, hooks.OnSessionStart: 1})
}

// A scheduled run has nobody to ask: a command that could destroy data is
// blocked there, saying how to let such runs run it; a safe one runs.
func TestAScheduledRunDoesNotRunADangerousCommand(t *testing.T) {
	t.Parallel()
	m := newMachineEnv(t, nil, nil)
	s := m.MustCreate(t, sessions.CreateParams{Title: "nightly"})
	if err := os.MkdirAll(filepath.Join(m.dir, "cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	turn, out := m.call(t, turns.PlatformCron, s.ID, "terminal", map[string]any{"command": "rm -rf cache"})
	if len(turn.Blocked) != 1 || !strings.Contains(fmt.Sprint(out["error"]), "a scheduled run has nobody to ask; approvals.cron_mode: approve") {
		t.Fatalf("cron: %+v %v", turn, out)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "cache")); err != nil {
		t.Fatalf("removed: %v", err)
	}
	if _, out := m.call(t, turns.PlatformCron, s.ID, "terminal", map[string]any{"command": "ls"}); out["output"] != "cache" {
		t.Fatalf("a safe command: %v", out)
	}
	m.Rec.Expect(t, m.Bus, map[string]int{hooks.PostToolCall: 2, hooks.PostLLMCall: 2, hooks.OnSessionEnd: 2, hooks.OnSessionStart: 1})
}

// A background command starts through the turn as the familiar agent's
// does (its danger checked first), and the conversation's process tool
// waits for it; another conversation does not see it.
func TestABackgroundCommandAndTheProcessTool(t *testing.T) {
	t.Parallel()
	var asked []string
	m := newMachineEnv(t, nil, func(a turns.Approval) turns.Answer { asked = append(asked, a.PatternKey); return turns.AnswerDeny })
	s := m.MustCreate(t, sessions.CreateParams{Title: "server"})
	_, out := m.call(t, "desktop", s.ID, "terminal", map[string]any{"command": "echo serving; sleep 0.2; echo done", "background": true})
	id, _ := out["session_id"].(string)
	if !strings.HasPrefix(id, "proc_") {
		t.Fatalf("background start: %v", out)
	}
	if _, out := m.call(t, "desktop", s.ID, "process", map[string]any{"action": "wait", "session_id": id, "timeout": 10}); out["output"] != "serving\ndone" || out["exit_code"] != 0.0 {
		t.Fatalf("wait: %v", out)
	}
	other := m.MustCreate(t, sessions.CreateParams{Title: "other"})
	if _, out := m.call(t, "desktop", other.ID, "process", map[string]any{"action": "poll", "session_id": id}); !strings.Contains(fmt.Sprint(out["error"]), "no background process") {
		t.Fatalf("another conversation: %v", out)
	}
	turn, _ := m.call(t, "desktop", s.ID, "terminal", map[string]any{"command": "rm -rf build && make watch", "background": true})
	if len(turn.Blocked) != 1 || fmt.Sprint(asked) != "[recursive delete]" {
		t.Fatalf("a dangerous background command: %+v %v", turn, asked)
	}
}

// A conversation compacted into a continuation session goes on where it
// stood: its folder and its background processes go with it.
func TestAContinuationKeepsTheFolderAndTheProcesses(t *testing.T) {
	t.Parallel()
	m := newMachineEnv(t, nil, nil)
	s := m.MustCreate(t, sessions.CreateParams{Title: "long"})
	if _, out := m.call(t, "cli", s.ID, "terminal", map[string]any{"command": "mkdir -p deep && cd deep && pwd"}); out["exit_code"] != 0.0 {
		t.Fatalf("cd: %v", out)
	}
	_, out := m.call(t, "cli", s.ID, "terminal", map[string]any{"command": "sleep 30", "background": true})
	id := out["session_id"].(string)
	for _, text := range []string{"first thing", "second thing", "third thing", "fourth thing"} {
		m.send(t, s.ID, text+": "+strings.Repeat("a long explanation of what is to be done, ", 80))
	}
	turn, err := m.loop.Send(ctx, s.ID, "/compress", hooks.LocalContext("cli", s.ID))
	if err != nil || !turn.Rotated || turn.SessionID == s.ID {
		t.Fatalf("/compress did not rotate: %+v %v", turn, err)
	}
	next := turn.SessionID
	if _, out := m.call(t, "cli", next, "terminal", map[string]any{"command": "pwd"}); out["output"] != filepath.Join(m.dir, "deep") {
		t.Fatalf("the continuation's folder: %v", out)
	}
	if _, out := m.call(t, "cli", next, "process", map[string]any{"action": "poll", "session_id": id}); out["status"] != "running" {
		t.Fatalf("the continuation's process: %v", out)
	}
}

// A plugin's own terminal (override=True, a sandbox of its own, say) is
// the terminal: the turn offers it and a plugin's dispatch_tool calls it,
// and Atrium's danger check is the plugin's to do.
func TestAPluginsOwnTerminalReplacesAtriums(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ran []string
	m := newMachineEnv(t, nil, nil, func(bus *hooks.Bus) {
		spec := map[string]any{"name": "terminal", "override": true, "schema": map[string]any{"name": "terminal",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}}}}
		if err := bus.Plugin("sandbox").RegisterCapability(hooks.CapTool, "terminal", spec, func(_ context.Context, method string, raw json.RawMessage) (json.RawMessage, error) {
			var p struct {
				Args map[string]any `json:"args"`
			}
			_ = json.Unmarshal(raw, &p)
			mu.Lock()
			ran = append(ran, fmt.Sprint(p.Args["command"]))
			mu.Unlock()
			return json.RawMessage(`{"result": "{\"output\": \"in the sandbox\", \"exit_code\": 0}"}`), nil
		}); err != nil {
			panic(err)
		}
	})
	s := m.MustCreate(t, sessions.CreateParams{Title: "sandboxed"})
	if _, out := m.call(t, "cli", s.ID, "terminal", map[string]any{"command": "rm -rf build"}); out["output"] != "in the sandbox" {
		t.Fatalf("the turn's terminal: %v", out)
	}
	if out, err := m.loop.DispatchTool(ctx, "cli:"+s.ID, "terminal", map[string]any{"command": "ls"}); err != nil || !strings.Contains(out, "in the sandbox") {
		t.Fatalf("dispatch_tool: %s %v", out, err)
	}
	if fmt.Sprint(ran) != "[rm -rf build ls]" {
		t.Fatalf("the plugin ran %v", ran)
	}
	// Atrium's own file tools stay.
	if _, out := m.call(t, "cli", s.ID, "write_file", map[string]any{"path": "x.txt", "content": "x"}); out["bytes_written"] != 1.0 {
		t.Fatalf("write_file: %v", out)
	}
}

// session_search recalls past conversations as the familiar agent's does:
// discovery with the match in its context and the conversation's bookends,
// scroll around a message, browse the recent ones. The asking conversation
// and deleted ones are never answered; on a chat platform only the asking
// person's conversations there are.
func TestSessionSearchRecallsPastConversations(t *testing.T) {
	t.Parallel()
	m := newMachineEnv(t, nil, nil)
	past := func(title string, p sessions.CreateParams, texts ...string) (sessions.Session, []int64) {
		p.Title = title
		s := m.MustCreate(t, p)
		var ids []int64
		for i, text := range texts {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msg, err := m.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: role, Content: text})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, msg.ID)
		}
		return s, ids
	}
	deploy, ids := past("Release planning", sessions.CreateParams{}, "when do we ship?", "let us decide", "the deploy window is Friday 18:00",
		"noted: Friday 18:00", "who is on call?", "Grace", "thanks", "you are welcome")
	past("Groceries", sessions.CreateParams{}, "milk and eggs", "added")
	gone, _ := past("Old deploy notes", sessions.CreateParams{}, "the deploy window used to be Monday")
	if _, err := m.Sessions.Delete(ctx, []string{gone.ID}, nil); err != nil {
		t.Fatal(err)
	}
	cur := m.MustCreate(t, sessions.CreateParams{Title: "now"})
	_, out := m.call(t, "cli", cur.ID, "session_search", map[string]any{"query": "deploy window"})
	results, _ := out["results"].([]any)
	if out["success"] != true || out["mode"] != "discover" || len(results) != 1 {
		t.Fatalf("discover: %v", out)
	}
	r := results[0].(map[string]any)
	msgs := r["messages"].([]any)
	anchor := msgs[2].(map[string]any)
	if r["session_id"] != deploy.ID || r["title"] != "Release planning" || r["match_message_id"] != float64(ids[2]) || anchor["anchor"] != true ||
		anchor["content"] != "the deploy window is Friday 18:00" || len(msgs) != 8 || len(r["bookend_start"].([]any)) != 0 ||
		len(r["bookend_end"].([]any)) != 0 || !strings.Contains(fmt.Sprint(r["snippet"]), "deploy") {
		t.Fatalf("the hit: %v", r)
	}
	_, out = m.call(t, "cli", cur.ID, "session_search", map[string]any{"session_id": deploy.ID, "around_message_id": ids[6], "window": 1})
	if got := out["messages"].([]any); out["mode"] != "scroll" || len(got) != 3 || got[1].(map[string]any)["content"] != "thanks" || out["messages_before"] != 5.0 {
		t.Fatalf("scroll: %v", out)
	}
	_, out = m.call(t, "cli", cur.ID, "session_search", map[string]any{"session_id": cur.ID, "around_message_id": 1})
	if out["success"] != false || !strings.Contains(fmt.Sprint(out["error"]), "this conversation") {
		t.Fatalf("scroll in the asking conversation: %v", out)
	}
	_, out = m.call(t, "cli", cur.ID, "session_search", map[string]any{})
	var titles []string
	for _, r := range out["results"].([]any) {
		titles = append(titles, r.(map[string]any)["title"].(string))
	}
	if out["mode"] != "browse" || fmt.Sprint(titles) != "[Groceries Release planning]" {
		t.Fatalf("browse: %v", out)
	}
	// A chat platform's person recalls their own conversations there only.
	mine := m.MustCreate(t, sessions.CreateParams{Title: "dm", Source: "gateway", Platform: "telegram", SenderID: "5"})
	if _, err := m.Sessions.AppendMessage(ctx, mine.ID, sessions.NewMessage{Role: "user", Content: "my deploy window is Sunday"}); err != nil {
		t.Fatal(err)
	}
	asking := m.MustCreate(t, sessions.CreateParams{Title: "dm now", Source: "gateway", Platform: "telegram", SenderID: "5"})
	b, _ := json.Marshal(map[string]any{"query": "deploy window"})
	if _, err := m.loop.Send(ctx, asking.ID, "use tool session_search: "+string(b), hooks.GatewayContext("telegram", asking.ID,
		hooks.Source{UserID: "5", ChatID: "5", ChatType: "dm"})); err != nil {
		t.Fatal(err)
	}
	all, _ := m.Sessions.Messages(ctx, asking.ID, false)
	var got map[string]any
	_ = json.Unmarshal([]byte(all[len(all)-2].Content), &got)
	if rs := got["results"].([]any); len(rs) != 1 || rs[0].(map[string]any)["session_id"] != mine.ID {
		t.Fatalf("on a chat platform: %v", got)
	}
}

// A script the agent writes and then runs is read before it runs: its
// dangerous line asks a person, naming the script.
func TestAWrittenScriptIsCheckedBeforeItRuns(t *testing.T) {
	t.Parallel()
	var asked []turns.Approval
	m := newMachineEnv(t, nil, func(a turns.Approval) turns.Answer { asked = append(asked, a); return turns.AnswerDeny })
	s := m.MustCreate(t, sessions.CreateParams{Title: "script"})
	if err := os.MkdirAll(filepath.Join(m.dir, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, out := m.call(t, "cli", s.ID, "write_file", map[string]any{"path": "tidy.sh", "content": "echo tidying\nrm -rf build\n"}); out["bytes_written"] == nil {
		t.Fatalf("write_file: %v", out)
	}
	turn, _ := m.call(t, "desktop", s.ID, "terminal", map[string]any{"command": "sh tidy.sh"})
	if len(turn.Blocked) != 1 || len(asked) != 1 || asked[0].PatternKey != "recursive delete" ||
		asked[0].Message != "This command could destroy data: recursive delete (in "+filepath.Join(m.dir, "tidy.sh")+", which the command runs)." {
		t.Fatalf("the script's run: %+v %+v", turn, asked)
	}
	if _, err := os.Stat(filepath.Join(m.dir, "build")); err != nil {
		t.Fatalf("build removed: %v", err)
	}
}

// systemOf is the system prompt conversation id was started with.
func (m machineEnv) systemOf(t *testing.T, id string) string {
	t.Helper()
	msgs, err := m.Sessions.Messages(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range msgs {
		if msg.Role == "system" {
			return msg.Content
		}
	}
	return ""
}

// The curated memory as the familiar agent keeps it: the memory tool
// writes MEMORY.md and USER.md at once; a conversation's system prompt
// carries them as they were when it started, and keeps them so (a later
// write shows in the next conversation, not this one); post_tool_call
// reports the call as any other. A scheduled run neither sees nor writes
// them, nor a platform whose toolsets leave memory out.
func TestMemoryToolAndItsSnapshot(t *testing.T) {
	t.Parallel()
	var toolsets []string
	var platforms map[string][]string
	var mu sync.Mutex
	m := newMachineEnv(t, func(s *tools.Settings) {
		mu.Lock()
		defer mu.Unlock()
		s.Toolsets, s.PlatformToolsets = toolsets, platforms
		s.Memory = tools.Memory{Dir: filepath.Join(filepath.Dir(s.Protected[0]), "memories")}
	}, nil)
	dir := filepath.Join(m.home.Dir, "memories")
	first := m.MustCreate(t, sessions.CreateParams{Title: "first"})
	_, out := m.call(t, "cli", first.ID, "memory", map[string]any{"action": "add", "target": "user", "content": "Prefers metric units"})
	if out["success"] != true || out["target"] != "user" || out["usage"] != "1% — 20/1,375 chars" {
		t.Fatalf("add: %v", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "USER.md")); err != nil || string(b) != "Prefers metric units" {
		t.Fatalf("USER.md: %q %v", b, err)
	}
	sys := m.systemOf(t, first.ID)
	if sys != "" {
		t.Fatalf("the first conversation's prompt (memory empty at its start): %q", sys)
	}
	second := m.MustCreate(t, sessions.CreateParams{Title: "second"})
	if _, out := m.call(t, "cli", second.ID, "memory", map[string]any{"operations": []any{
		map[string]any{"action": "add", "content": "Build with make test"}}}); out["success"] != true {
		t.Fatalf("batch: %v", out)
	}
	sys2 := m.systemOf(t, second.ID)
	if !strings.Contains(sys2, "USER PROFILE (who the user is) [1% — 20/1,375 chars]") || !strings.Contains(sys2, "Prefers metric units") ||
		strings.Contains(sys2, "Build with make test") {
		t.Fatalf("the second conversation's prompt: %q", sys2)
	}
	// Later turns keep each prompt as it was.
	m.call(t, "cli", first.ID, "memory", map[string]any{"action": "replace", "target": "user", "old_text": "metric", "content": "Prefers imperial units"})
	if m.systemOf(t, first.ID) != "" || m.systemOf(t, second.ID) != sys2 {
		t.Fatal("a stored system prompt changed")
	}
	var memoryCalls int
	for _, p := range m.toolResults(t) {
		if p.ToolName == "memory" {
			memoryCalls++
		}
	}
	if memoryCalls != 3 {
		t.Fatalf("post_tool_call for memory: %d", memoryCalls)
	}
	// A scheduled run: no tool, no snapshot.
	cron := m.MustCreate(t, sessions.CreateParams{Title: "cron"})
	if turn, _ := m.call(t, turns.PlatformCron, cron.ID, "memory", map[string]any{"action": "add", "content": "from cron"}); len(turn.ToolCalls) != 0 {
		t.Fatalf("cron called memory: %+v", turn)
	}
	if sys := m.systemOf(t, cron.ID); strings.Contains(sys, "imperial") || strings.Contains(sys, "MEMORY") {
		t.Fatalf("cron's prompt: %q", sys)
	}
	// A platform whose list leaves memory out (a chat platform kept from
	// what is known about the owner): neither the tool nor the snapshot;
	// another platform keeps both.
	mu.Lock()
	toolsets = []string{"file", "memory"}
	platforms = map[string][]string{"telegram": {"file"}}
	mu.Unlock()
	third := m.MustCreate(t, sessions.CreateParams{Title: "third"})
	if turn, _ := m.call(t, "telegram", third.ID, "memory", map[string]any{"action": "add", "content": "x"}); len(turn.ToolCalls) != 0 {
		t.Fatalf("memory offered without its toolset: %+v", turn)
	}
	if sys := m.systemOf(t, third.ID); strings.Contains(sys, "Prefers imperial units") || !strings.HasPrefix(sys, "You are on Telegram.") {
		t.Fatalf("the telegram conversation's prompt: %q", sys)
	}
	fourth := m.MustCreate(t, sessions.CreateParams{Title: "fourth"})
	if _, err := m.loop.Send(ctx, fourth.ID, "hello", hooks.LocalContext("cli", fourth.ID)); err != nil {
		t.Fatal(err)
	}
	if sys := m.systemOf(t, fourth.ID); !strings.Contains(sys, "Prefers imperial units") || !strings.Contains(sys, "Build with make test") {
		t.Fatalf("the cli conversation's prompt: %q", sys)
	}
	if entries, _ := (tools.Memory{Dir: dir}).Entries(tools.TargetMemory); fmt.Sprint(entries) != "[Build with make test]" {
		t.Fatalf("MEMORY.md: %v", entries)
	}
}

// The task list of a conversation (the todo tool) is kept beside its
// session (<id>.todo.json in the sessions folder, a sidecar that goes with
// it), so a later turn, in any process, reads what an earlier one wrote; a
// conversation compaction continued goes on with its list and is reminded
// once, at its next turn, of what is left to do; toolsets without todo
// offer neither.
func TestTodoListFollowsTheConversation(t *testing.T) {
	t.Parallel()
	var toolsets []string
	var mu sync.Mutex
	m := newMachineEnv(t, func(s *tools.Settings) {
		mu.Lock()
		defer mu.Unlock()
		s.Toolsets = toolsets
	}, nil)
	s := m.MustCreate(t, sessions.CreateParams{Title: "plan"})
	_, out := m.call(t, "cli", s.ID, "todo", map[string]any{"todos": []any{
		map[string]any{"id": "1", "content": "reproduce the bug", "status": "completed"},
		map[string]any{"id": "2", "content": "write the fix", "status": "in_progress"},
		map[string]any{"id": "3", "content": "run the suite", "status": "pending"}}})
	if out["revision"] != 1.0 || fmt.Sprint(out["summary"]) != "map[cancelled:0 completed:1 in_progress:1 pending:1 total:3]" {
		t.Fatalf("write: %v", out)
	}
	path := filepath.Join(m.SessionsDir, s.ID+".todo.json")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the list beside its session: %v", err)
	}
	// Another process (another loop on the same store) reads it.
	other, err := turns.New(m.DB, m.Sessions, m.eng, m.Bus, turns.Options{Provider: llm.OfflineProvider{Window: 100000},
		Machine: func() tools.Settings { return tools.Settings{} }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Send(ctx, s.ID, `use tool todo: {"merge": true, "todos": [{"id": "2", "status": "completed"}]}`, hooks.LocalContext("cli", s.ID)); err != nil {
		t.Fatal(err)
	}
	if _, out := m.call(t, "cli", s.ID, "todo", map[string]any{}); out["revision"] != 2.0 ||
		!strings.Contains(fmt.Sprint(out["todos"]), "id:2 status:completed") {
		t.Fatalf("read back: %v", out)
	}
	// Compaction continues the conversation in another session: the list
	// goes with it, and the next turn is told what is left, once.
	for i := range 4 {
		if _, err := m.loop.Send(ctx, s.ID, fmt.Sprintf("step %d %s", i, strings.Repeat("the reviewers asked for more detail. ", 6)), hooks.LocalContext("cli", s.ID)); err != nil {
			t.Fatal(err)
		}
	}
	turn, err := m.loop.Send(ctx, s.ID, "/compress", hooks.LocalContext("cli", s.ID))
	if err != nil || !turn.Rotated {
		t.Fatalf("/compress: %+v %v", turn, err)
	}
	cont := turn.SessionID
	first, err := m.loop.Send(ctx, cont, "what is left?", hooks.LocalContext("cli", cont))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first.SentText, "- [ ] 3. run the suite (pending)") || strings.Contains(first.SentText, "reproduce the bug") {
		t.Fatalf("the reminder: %q", first.SentText)
	}
	second, err := m.loop.Send(ctx, cont, "and now?", hooks.LocalContext("cli", cont))
	if err != nil || strings.Contains(second.SentText, "run the suite") {
		t.Fatalf("reminded twice: %q %v", second.SentText, err)
	}
	if _, out := m.call(t, "cli", cont, "todo", map[string]any{}); out["revision"] != 2.0 || len(out["todos"].([]any)) != 3 {
		t.Fatalf("the continued conversation's list: %v", out)
	}
	// Deleted for good, the conversation's lists go with it.
	if _, err := m.Sessions.Purge(ctx, []string{s.ID, cont}, nil); err != nil {
		t.Fatal(err)
	}
	m.SidecarsBecome(t, nil) // removed in the background, shortly after the commit
	// toolsets without todo: no tool.
	mu.Lock()
	toolsets = []string{"file"}
	mu.Unlock()
	other2 := m.MustCreate(t, sessions.CreateParams{Title: "other"})
	if turn, _ := m.call(t, "cli", other2.ID, "todo", map[string]any{}); len(turn.ToolCalls) != 0 {
		t.Fatalf("todo offered without its toolset: %+v", turn)
	}
}

// A tool run in a turn knows whose turn it is (SessionOf): send_message
// mirrors a message into the chat's conversation, never into the session
// that sent it.
func TestAToolKnowsTheSessionOfItsTurn(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	m := newMachineEnv(t, func(s *tools.Settings) {
		s.Messaging = tools.Messaging{Platforms: []string{"telegram"}, Send: func(ctx context.Context, _, _ string) (map[string]any, error) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, turns.SessionOf(ctx))
			return map[string]any{"success": true}, nil
		}}
	}, nil)
	s := m.MustCreate(t, sessions.CreateParams{Title: "ops"})
	if _, out := m.call(t, "cli", s.ID, tools.SendMessageTool, map[string]any{"target": "telegram", "message": "hi"}); out["success"] != true {
		t.Fatalf("%v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != s.ID || turns.SessionOf(context.Background()) != "" {
		t.Fatalf("the tool saw %q, want %q", seen, s.ID)
	}
}
