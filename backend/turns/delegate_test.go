package turns_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// subagentModel is the offline model that keeps every request it is sent
// and may hold a subagent's requests (those whose system prompt is a
// subagent's) with childWait first.
type subagentModel struct {
	llm.OfflineProvider
	mu        sync.Mutex
	reqs      []llm.Request
	childWait func(ctx context.Context, req llm.Request) error
}

func (m *subagentModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	if isSubagentRequest(req) && m.childWait != nil {
		if err := m.childWait(ctx, req); err != nil {
			return llm.Response{}, err
		}
	}
	return m.OfflineProvider.Complete(ctx, req)
}

func isSubagentRequest(req llm.Request) bool {
	return len(req.Messages) > 0 && req.Messages[0].Role == "system" && strings.HasPrefix(req.Messages[0].Content, "You are a subagent")
}

// toolsOf is the tools each request of the subagents (or of the parent)
// offered, less the loop's test tools.
func (m *subagentModel) toolsOf(subagent bool) [][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out [][]string
	for _, r := range m.reqs {
		if isSubagentRequest(r) != subagent || len(r.Tools) == 0 {
			continue
		}
		var names []string
		for _, t := range r.Tools {
			if _, test := turns.BuiltinTools()[t.Name]; !test {
				names = append(names, t.Name)
			}
		}
		out = append(out, names)
	}
	return out
}

type delegateResult struct {
	Results []struct {
		TaskIndex  int      `json:"task_index"`
		Status     string   `json:"status"`
		Summary    *string  `json:"summary"`
		APICalls   int      `json:"api_calls"`
		Duration   *float64 `json:"duration_seconds"`
		Model      string   `json:"model"`
		ExitReason string   `json:"exit_reason"`
		Tokens     *struct {
			Input  int `json:"input"`
			Output int `json:"output"`
		} `json:"tokens"`
		ToolTrace []struct {
			Tool        string `json:"tool"`
			ArgsBytes   int    `json:"args_bytes"`
			ResultBytes int    `json:"result_bytes"`
			Status      string `json:"status"`
		} `json:"tool_trace"`
		Error string `json:"error"`
	} `json:"results"`
	Total *float64 `json:"total_duration_seconds"`
	Error string   `json:"error"`
}

// delegate asks the parent's model to call delegate_task with args in
// session id, and reads what the tool answered.
func (m machineEnv) delegate(t *testing.T, ctx context.Context, id string, args map[string]any) (turns.Turn, delegateResult, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	turn, err := m.loop.Send(ctx, id, "use tool delegate_task: "+string(b), hooks.LocalContext("cli", id))
	var out delegateResult
	msgs, merr := m.Sessions.Messages(context.Background(), id, false)
	if merr != nil {
		t.Fatal(merr)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "tool" && msgs[i].ToolName == tools.DelegateTool {
			if jerr := json.Unmarshal([]byte(msgs[i].Content), &out); jerr != nil {
				t.Fatalf("delegate_task's result is no JSON object: %q", msgs[i].Content)
			}
			break
		}
	}
	return turn, out, err
}

// A task handed to delegate_task runs as a subagent does in the familiar
// agent: a fresh conversation in a delegate child session, told its task
// and context in its system prompt and its goal as its first message,
// with the parent's tools but never delegate_task, clarify or memory; the
// parent reads only its summary, in the familiar result's shape. The
// store and the hooks know it as a subagent: subagent_start as it is
// created, subagent_stop with its summary when it ends, both naming the
// parent's turn.
func TestDelegateTaskHandsATaskToASubagent(t *testing.T) {
	t.Parallel()
	model := &subagentModel{OfflineProvider: llm.OfflineProvider{Window: 100000}}
	// A plugin's send_message: the parent's, never a subagent's.
	sendMessage := func(bus *hooks.Bus) {
		spec := map[string]any{"name": "send_message", "schema": map[string]any{"name": "send_message", "parameters": map[string]any{"type": "object"}}}
		if err := bus.Plugin("messenger").RegisterCapability(hooks.CapTool, "send_message", spec, func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"result": "{}"}`), nil
		}); err != nil {
			panic(err)
		}
	}
	m := newMachineEnvWith(t, func(o *turns.Options) { o.Provider, o.Model = model, "lead-model" }, nil, nil, sendMessage)
	s := m.MustCreate(t, sessions.CreateParams{Title: "lead"})
	goal := `use tool terminal: {"command":"echo from the subagent"}`
	turn, res, err := m.delegate(t, ctx, s.ID, map[string]any{"goal": goal, "context": "The folder is the test's own."})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 1 || res.Total == nil || res.Error != "" {
		t.Fatalf("result: %+v", res)
	}
	r := res.Results[0]
	if r.TaskIndex != 0 || r.Status != "completed" || r.ExitReason != "completed" || r.Summary == nil ||
		!strings.HasPrefix(*r.Summary, "The tool terminal returned:") || !strings.Contains(*r.Summary, "from the subagent") ||
		r.APICalls != 2 || r.Model != "lead-model" || r.Duration == nil || r.Tokens == nil || r.Tokens.Input == 0 || r.Error != "" {
		t.Fatalf("the task's entry: %+v", r)
	}
	if len(r.ToolTrace) != 1 || r.ToolTrace[0].Tool != "terminal" || r.ToolTrace[0].ArgsBytes != len(`{"command":"echo from the subagent"}`) ||
		r.ToolTrace[0].ResultBytes == 0 || r.ToolTrace[0].Status != "ok" {
		t.Fatalf("tool_trace: %+v", r.ToolTrace)
	}
	if !strings.HasPrefix(turn.Reply, "The tool delegate_task returned:") {
		t.Fatalf("the parent's reply: %q", turn.Reply)
	}

	starts := decodeAll[hooks.SubagentStartPayload](t, m.env, hooks.SubagentStart)
	stops := decodeAll[hooks.SubagentStopPayload](t, m.env, hooks.SubagentStop)
	calls := m.toolResults(t)
	if len(starts) != 1 || len(stops) != 1 || len(calls) != 2 {
		t.Fatalf("subagent_start %+v, subagent_stop %+v, post_tool_call %+v", starts, stops, calls)
	}
	child := starts[0].ChildSessionID
	lead := calls[1] // the subagent's terminal call ends first
	if calls[0].SessionID != child || calls[0].ToolName != "terminal" || lead.SessionID != s.ID || lead.ToolName != tools.DelegateTool {
		t.Fatalf("post_tool_call: %+v", calls)
	}
	st := starts[0]
	if st.ParentSessionID != s.ID || st.ParentTurnID == nil || *st.ParentTurnID != lead.TurnID || st.ChildGoal != goal ||
		st.ChildSubagentID != child || st.Profile != "default" {
		t.Fatalf("subagent_start: %+v (the parent's turn %s)", st, lead.TurnID)
	}
	sp := stops[0]
	if sp.ParentSessionID != s.ID || sp.ParentTurnID == nil || *sp.ParentTurnID != lead.TurnID || sp.ChildSessionID != child ||
		sp.ChildGoal != goal || sp.ChildStatus != "completed" || sp.Reason != "completed" || sp.ChildSummary == nil || *sp.ChildSummary != *r.Summary {
		t.Fatalf("subagent_stop: %+v", sp)
	}
	m.Rec.Expect(t, m.Bus, map[string]int{hooks.SubagentStart: 1, hooks.SubagentStop: 1, hooks.OnSessionStart: 2, hooks.PostToolCall: 2,
		hooks.PostLLMCall: 2, hooks.OnSessionEnd: 2, hooks.OnSessionFinalize: 1})

	cs, err := m.Sessions.Get(ctx, child)
	if err != nil || cs.Relation != sessions.RelationDelegate || cs.ParentSessionID == nil || *cs.ParentSessionID != s.ID ||
		!cs.Ended() || cs.EndReason != "completed" || cs.Title != goal {
		t.Fatalf("the subagent's session: %+v %v", cs, err)
	}
	msgs, err := m.Sessions.Messages(ctx, child, false)
	if err != nil || len(msgs) != 5 || msgs[0].Role != "system" || msgs[1].Role != "user" || msgs[1].Content != goal {
		t.Fatalf("the subagent's conversation: %+v %v", msgs, err)
	}
	if p := msgs[0].Content; !strings.Contains(p, "YOUR TASK:\n"+goal) || !strings.Contains(p, "CONTEXT:\nThe folder is the test's own.") {
		t.Fatalf("the subagent's system prompt: %q", p)
	}
	for _, names := range model.toolsOf(true) {
		for _, blocked := range []string{tools.DelegateTool, tools.ClarifyTool, tools.MemoryTool, "send_message"} {
			if slices.Contains(names, blocked) {
				t.Fatalf("a subagent was offered %s: %v", blocked, names)
			}
		}
		if !slices.Contains(names, "terminal") {
			t.Fatalf("the subagent's tools: %v", names)
		}
	}
	if lead := model.toolsOf(false); len(lead) == 0 || !slices.Contains(lead[0], tools.DelegateTool) || !slices.Contains(lead[0], "send_message") {
		t.Fatalf("the parent's tools: %v", lead)
	}
}

// Several tasks run at the same time, each in a subagent of its own, and
// come back in the order given. A call the familiar agent refuses is
// refused in its words, and starts nobody.
func TestDelegateTaskRunsABatchTogetherAndRefusesWhatItShould(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	arrived, all := 0, make(chan struct{})
	model := &subagentModel{OfflineProvider: llm.OfflineProvider{Window: 100000},
		childWait: func(ctx context.Context, req llm.Request) error {
			if len(req.Messages) != 2 { // only each subagent's first call waits for the others
				return nil
			}
			mu.Lock()
			if arrived++; arrived == 3 {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
				return nil
			case <-time.After(20 * time.Second):
				return errors.New("the other subagents never started: they did not run together")
			case <-ctx.Done():
				return ctx.Err()
			}
		}}
	m := newMachineEnvWith(t, func(o *turns.Options) { o.Provider = model }, nil, nil)
	s := m.MustCreate(t, sessions.CreateParams{Title: "lead"})
	tasks := []any{
		map[string]any{"goal": "find the first thing"},
		map[string]any{"goal": "find the second thing", "context": "it is blue"},
		map[string]any{"goal": "find the third thing", "toolsets": []string{"file"}},
	}
	_, res, err := m.delegate(t, ctx, s.ID, map[string]any{"tasks": tasks})
	if err != nil || len(res.Results) != 3 {
		t.Fatalf("batch: %+v %v", res, err)
	}
	for i, r := range res.Results {
		want := fmt.Sprintf("offline reply to: find the %s thing", []string{"first", "second", "third"}[i])
		if r.TaskIndex != i || r.Status != "completed" || r.Summary == nil || *r.Summary != want {
			t.Fatalf("task %d: %+v", i, r)
		}
	}
	m.Rec.Expect(t, m.Bus, map[string]int{hooks.SubagentStart: 3, hooks.SubagentStop: 3, hooks.OnSessionStart: 4, hooks.PostToolCall: 1,
		hooks.PostLLMCall: 4, hooks.OnSessionEnd: 4, hooks.OnSessionFinalize: 3})
	// Their sessions start in the tasks' order (a list by start shows them
	// so), though they run together.
	var titles []string
	if err := m.DB.Read.Raw(`SELECT title FROM sessions WHERE parent_session_id = ? ORDER BY started_at, id`, s.ID).Scan(&titles).Error; err != nil ||
		fmt.Sprint(titles) != "[find the first thing find the second thing find the third thing]" {
		t.Fatalf("the subagents' sessions by start: %q %v", titles, err)
	}

	// The same tasks given as JSON text, as a model sometimes sends them,
	// and a batch's empty list beside a goal, which is one task.
	m.Rec.Reset()
	text, _ := json.Marshal(tasks[:1])
	if _, res, err := m.delegate(t, ctx, s.ID, map[string]any{"tasks": string(text)}); err != nil || len(res.Results) != 1 || res.Results[0].Status != "completed" {
		t.Fatalf("tasks as text: %+v %v", res, err)
	}
	if _, res, err := m.delegate(t, ctx, s.ID, map[string]any{"tasks": []any{}, "goal": "alone"}); err != nil || len(res.Results) != 1 ||
		*res.Results[0].Summary != "offline reply to: alone" {
		t.Fatalf("an empty batch beside a goal: %+v %v", res, err)
	}

	m.Rec.Reset()
	s = m.MustCreate(t, sessions.CreateParams{Title: "refused"})
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"tasks": append(tasks, map[string]any{"goal": "one too many"})},
			"Too many tasks: 4 provided, but max_concurrent_children is 3. Either reduce the task count, split into multiple delegate_task calls, or increase delegation.max_concurrent_children in config.yaml."},
		{map[string]any{"tasks": []any{map[string]any{"goal": "fine"}, map[string]any{"context": "no goal"}}}, "Task 1 is missing a 'goal'."},
		{map[string]any{"context": "only context"}, "Provide either 'goal' (single task) or 'tasks' (batch)."},
		{map[string]any{"goal": "   "}, "Provide either 'goal' (single task) or 'tasks' (batch)."},
		{map[string]any{"tasks": "[not json"}, "tasks must be a JSON array of task objects; received a string that could not be parsed as JSON."},
		{map[string]any{"goal": "x", "toolsets": 3}, "toolsets must be a list of toolset names."},
	} {
		if _, res, err := m.delegate(t, ctx, s.ID, c.args); err != nil || res.Error != c.want || res.Results != nil {
			t.Fatalf("%v: %+v %v, want the error %q", c.args, res, err, c.want)
		}
	}
	// Refused calls start nobody: only the parent's own turns fired.
	// (The first refusal, over 200 characters, is pruned from the parent's
	// context once two turns have passed it: post_compaction.)
	m.Rec.Expect(t, m.Bus, map[string]int{hooks.OnSessionStart: 1, hooks.PostToolCall: 6, hooks.PostLLMCall: 6, hooks.OnSessionEnd: 6,
		hooks.PostCompaction: 1})
}

// A subagent's toolsets are taken among its parent's: it never gains a
// tool the parent's platform leaves out.
func TestASubagentsToolsetsAreAmongItsParents(t *testing.T) {
	t.Parallel()
	model := &subagentModel{OfflineProvider: llm.OfflineProvider{Window: 100000}}
	m := newMachineEnvWith(t, func(o *turns.Options) { o.Provider = model },
		func(s *tools.Settings) {
			s.PlatformToolsets = map[string][]string{"cli": {"file", "todo", "delegation"}}
		}, nil)
	s := m.MustCreate(t, sessions.CreateParams{Title: "lead"})
	if _, res, err := m.delegate(t, ctx, s.ID, map[string]any{"goal": "read the notes", "toolsets": []string{"terminal", "file"}}); err != nil ||
		len(res.Results) != 1 || res.Results[0].Status != "completed" {
		t.Fatalf("delegate: %+v %v", res, err)
	}
	got := model.toolsOf(true)
	if len(got) != 1 || !slices.Equal(got[0], []string{"read_file", "write_file", "patch", "search_files"}) {
		t.Fatalf("the subagent's tools: %v", got)
	}
	// Without toolsets it has all of its parent's, less delegation.
	model.reqs = nil
	if _, _, err := m.delegate(t, ctx, s.ID, map[string]any{"goal": "anything"}); err != nil {
		t.Fatal(err)
	}
	if got := model.toolsOf(true); len(got) != 1 || !slices.Equal(got[0], []string{"read_file", "write_file", "patch", "search_files", tools.TodoTool}) {
		t.Fatalf("the subagent's tools: %v", got)
	}
}

// A subagent that uses every round it may, or its time, or whose parent
// is stopped, ends so, says so in its entry and in subagent_stop, and its
// session is ended; the parent turn goes on (or, stopped, stops).
func TestASubagentsLimitsEndIt(t *testing.T) {
	t.Parallel()
	t.Run("max_iterations", func(t *testing.T) {
		t.Parallel()
		busy := &busyModel{}
		m := newMachineEnvWith(t, func(o *turns.Options) {
			o.Provider = delegatingModel{busy}
		}, nil, nil)
		s := m.MustCreate(t, sessions.CreateParams{Title: "lead"})
		_, res, err := m.delegate(t, ctx, s.ID, map[string]any{"goal": "tidy up", "max_iterations": 2})
		if err != nil || len(res.Results) != 1 {
			t.Fatalf("%+v %v", res, err)
		}
		r := res.Results[0]
		if r.Status != "failed" || r.ExitReason != "max_iterations" || r.Summary == nil || *r.Summary != "I listed the folder three times; nothing else is left." ||
			len(r.ToolTrace) != 2 || !strings.Contains(r.Error, "2 rounds") {
			t.Fatalf("entry: %+v", r)
		}
		if last := busy.last.Messages[len(busy.last.Messages)-1]; !strings.Contains(last.Content, "(max_iterations)") {
			t.Fatalf("the subagent's last ask: %+v", last)
		}
		stops := decodeAll[hooks.SubagentStopPayload](t, m.env, hooks.SubagentStop)
		if len(stops) != 1 || stops[0].ChildStatus != "failed" || stops[0].Reason != "failed" {
			t.Fatalf("subagent_stop: %+v", stops)
		}
	})
	t.Run("child_timeout_seconds", func(t *testing.T) {
		t.Parallel()
		model := &subagentModel{OfflineProvider: llm.OfflineProvider{Window: 100000},
			childWait: func(ctx context.Context, _ llm.Request) error { <-ctx.Done(); return ctx.Err() }}
		m := newMachineEnvWith(t, func(o *turns.Options) {
			o.Provider = model
			o.Delegation = func() turns.Delegation {
				d := turns.DefaultDelegation()
				d.ChildTimeout = time.Second
				return d
			}
		}, nil, nil)
		s := m.MustCreate(t, sessions.CreateParams{Title: "lead"})
		turn, res, err := m.delegate(t, ctx, s.ID, map[string]any{"goal": "think forever"})
		if err != nil || len(res.Results) != 1 || !strings.HasPrefix(turn.Reply, "The tool delegate_task returned:") {
			t.Fatalf("%+v %+v %v", turn, res, err)
		}
		r := res.Results[0]
		if r.Status != "timeout" || r.ExitReason != "timeout" || *r.Summary != "" ||
			r.Error != "Subagent timed out after 1s. Increase delegation.child_timeout_seconds in config.yaml if tasks consistently need more time." {
			t.Fatalf("entry: %+v", r)
		}
		stops := decodeAll[hooks.SubagentStopPayload](t, m.env, hooks.SubagentStop)
		if len(stops) != 1 || stops[0].ChildStatus != "timeout" {
			t.Fatalf("subagent_stop: %+v", stops)
		}
		if cs, err := m.Sessions.Get(ctx, stops[0].ChildSessionID); err != nil || !cs.Ended() || cs.EndReason != "timeout" {
			t.Fatalf("the subagent's session: %+v %v", cs, err)
		}
	})
	t.Run("the parent stopped", func(t *testing.T) {
		t.Parallel()
		started := make(chan struct{}, 2)
		model := &subagentModel{OfflineProvider: llm.OfflineProvider{Window: 100000},
			childWait: func(ctx context.Context, _ llm.Request) error {
				started <- struct{}{}
				<-ctx.Done()
				return ctx.Err()
			}}
		m := newMachineEnvWith(t, func(o *turns.Options) { o.Provider = model }, nil, nil)
		s := m.MustCreate(t, sessions.CreateParams{Title: "lead"})
		tctx, stop := context.WithCancelCause(ctx)
		go func() {
			<-started
			<-started // both are running
			stop(&turns.Stop{Reason: "user"})
		}()
		_, res, err := m.delegate(t, tctx, s.ID, map[string]any{"tasks": []any{map[string]any{"goal": "one long task"}, map[string]any{"goal": "another long task"}}})
		if err == nil {
			t.Fatal("the stopped parent turn ended normally")
		}
		if len(res.Results) != 2 || res.Results[0].Status != "interrupted" || res.Results[1].Status != "interrupted" {
			t.Fatalf("the stopped call's result: %+v", res)
		}
		stops := decodeAll[hooks.SubagentStopPayload](t, m.env, hooks.SubagentStop)
		if len(stops) != 2 || stops[0].ChildStatus != "interrupted" || stops[1].ChildStatus != "interrupted" {
			t.Fatalf("subagent_stop: %+v", stops)
		}
		for _, sp := range stops {
			if cs, err := m.Sessions.Get(ctx, sp.ChildSessionID); err != nil || !cs.Ended() || cs.EndReason != "interrupted" {
				t.Fatalf("the subagent's session: %+v %v", cs, err)
			}
		}
	})
}

// delegatingModel asks the parent to delegate and answers a subagent with
// the busy model, which never stops calling tools.
type delegatingModel struct{ busy *busyModel }

func (delegatingModel) Name() string       { return "delegating" }
func (delegatingModel) ContextWindow() int { return 100000 }
func (d delegatingModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if isSubagentRequest(req) {
		return d.busy.Complete(ctx, req)
	}
	return llm.OfflineProvider{Window: 100000}.Complete(ctx, req)
}

// Subagents ask a person as their parent would (here, before a recursive
// delete), one at a time (a chat platform waits for one answer per
// conversation), and the person's time is neither theirs nor their
// parent turn's: answered long after both budgets, they finish.
func TestSubagentsAskAPersonOneAtATime(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	asking, most, asked := 0, 0, 0
	const budget = time.Second
	m := newMachineEnvWith(t, func(o *turns.Options) {
		o.Approve = func(ctx context.Context, a turns.Approval) (turns.Answer, error) {
			if !strings.HasPrefix(a.Message, "A subagent asks (its task: use tool terminal: ") || !strings.Contains(a.Message, "could destroy data") {
				return turns.AnswerDeny, fmt.Errorf("the person is not told who asks: %q", a.Message)
			}
			mu.Lock()
			asking, asked = asking+1, asked+1
			most = max(most, asking)
			mu.Unlock()
			defer func() { mu.Lock(); asking--; mu.Unlock() }()
			select { // the person comes back after three budgets
			case <-time.After(3 * budget):
				return turns.AnswerOnce, nil
			case <-ctx.Done():
				return turns.AnswerDeny, ctx.Err()
			}
		}
		o.Delegation = func() turns.Delegation {
			d := turns.DefaultDelegation()
			d.ChildTimeout = budget
			return d
		}
	}, nil, nil)
	for _, dir := range []string{"junk1", "junk2"} {
		if err := os.MkdirAll(filepath.Join(m.dir, dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := m.MustCreate(t, sessions.CreateParams{Title: "lead"})
	tctx, cancel := turns.WithBudget(ctx, budget)
	defer cancel()
	_, res, err := m.delegate(t, tctx, s.ID, map[string]any{"tasks": []any{
		map[string]any{"goal": `use tool terminal: {"command":"rm -rf junk1"}`},
		map[string]any{"goal": `use tool terminal: {"command":"rm -rf junk2"}`},
	}})
	if err != nil || len(res.Results) != 2 || res.Results[0].Status != "completed" || res.Results[1].Status != "completed" {
		t.Fatalf("%+v %v", res, err)
	}
	if asked != 2 || most != 1 {
		t.Fatalf("asked %d times, %d at once", asked, most)
	}
	for _, dir := range []string{"junk1", "junk2"} {
		if _, err := os.Stat(filepath.Join(m.dir, dir)); !os.IsNotExist(err) {
			t.Fatalf("%s is still there: %v", dir, err)
		}
	}
}

// A subagent whose turn panics (a provider's bug, a tool's) is an error
// entry, its session ended with error; the parent turn and the process go
// on.
func TestASubagentThatPanicsIsAnErrorEntry(t *testing.T) {
	t.Parallel()
	model := &subagentModel{OfflineProvider: llm.OfflineProvider{Window: 100000},
		childWait: func(context.Context, llm.Request) error { panic("the provider's bug") }}
	m := newMachineEnvWith(t, func(o *turns.Options) { o.Provider = model }, nil, nil)
	s := m.MustCreate(t, sessions.CreateParams{Title: "lead"})
	turn, res, err := m.delegate(t, ctx, s.ID, map[string]any{"tasks": []any{map[string]any{"goal": "one"}, map[string]any{"goal": "two"}}})
	if err != nil || !strings.HasPrefix(turn.Reply, "The tool delegate_task returned:") || len(res.Results) != 2 {
		t.Fatalf("%+v %+v %v", turn, res, err)
	}
	for _, r := range res.Results {
		if r.Status != "error" || r.Error != "the subagent failed: the provider's bug" {
			t.Fatalf("entry: %+v", r)
		}
	}
	stops := decodeAll[hooks.SubagentStopPayload](t, m.env, hooks.SubagentStop)
	if len(stops) != 2 || stops[0].ChildStatus != "error" || stops[1].ChildStatus != "error" {
		t.Fatalf("subagent_stop: %+v", stops)
	}
}
