package turns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/tools"
)

// toolSource says who runs a tool.
type toolSource int

const (
	srcBuiltin  toolSource = iota
	srcPlugin              // a plugin's register_tool
	srcMemory              // the memory provider's get_tool_schemas
	srcEngine              // the context engine's get_tool_schemas
	srcMachine             // the machine's own: the terminal, the file tools
	srcRecall              // session_search: the store's recall of past conversations
	srcNotes               // memory: the curated memory (MEMORY.md, USER.md)
	srcTodo                // todo: the conversation's task list
	srcClarify             // clarify: a question to the person
	srcDelegate            // delegate_task: subagents
)

type toolEntry struct {
	spec   llm.ToolSpec
	source toolSource
	run    func(ctx context.Context, args string) (string, error) // built-in
	plugin string                                                 // plugin or memory provider capability
	name   string                                                 // its name in the capability
	tool   tools.Tool                                             // the machine's
}

// toolTable is the tools of one turn: the built-in ones, the machine's
// (as toolsets has them), the plugins' (override rules applied, check_fn
// and requires_env honoured), the memory provider's and the context
// engine's.
type toolTable struct {
	byName map[string]toolEntry
	order  []string
}

func (tt *toolTable) specs() []llm.ToolSpec {
	out := make([]llm.ToolSpec, 0, len(tt.order))
	for _, n := range tt.order {
		out = append(out, tt.byName[n].spec)
	}
	return out
}

// toolInfo is a plugin tool's description as its plugin registered it.
type toolInfo struct {
	Name            string          `json:"name"`
	Schema          json.RawMessage `json:"schema"`
	Description     string          `json:"description"`
	Override        bool            `json:"override"`
	OverrideAllowed bool            `json:"override_allowed"`
	RequiresEnv     []string        `json:"requires_env"`
	HasCheck        bool            `json:"has_check"`
}

var warnedShadow sync.Map // "plugin/tool" (or "toolsets/<warning>") -> true: warned once per process

// readMachine reads config.yaml's keys for the machine's tools for a turn
// (tc.machine, tc.offered), and says once per process what in its
// toolsets names nothing.
func (l *Loop) readMachine(tc *turnCtx) {
	if l.opts.Machine == nil {
		return
	}
	tc.machine = l.opts.Machine()
	var warnings []string
	tc.offered, warnings = tc.machine.Enabled(tc.platform)
	for _, w := range warnings {
		if _, done := warnedShadow.LoadOrStore("toolsets/"+w, true); !done {
			slog.Warn("config.yaml: " + w)
		}
	}
}

// toolTable builds the tools offered this turn.
func (l *Loop) toolTable(ctx context.Context, tc *turnCtx) *toolTable {
	tt := &toolTable{byName: map[string]toolEntry{}}
	names := make([]string, 0, len(l.opts.Tools))
	for n := range l.opts.Tools {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		tool := l.opts.Tools[n]
		tt.add(toolEntry{spec: tool.Spec, source: srcBuiltin, run: tool.Run, name: n})
	}
	if on := tc.offered; on != nil {
		for _, t := range tools.All() {
			if on[t.Name] {
				tt.add(toolEntry{spec: llm.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Parameters},
					source: srcMachine, name: t.Name, tool: t})
			}
		}
		if on[tools.SessionSearch] {
			tt.add(toolEntry{spec: recallSpec, source: srcRecall, name: tools.SessionSearch})
		}
		if on[tools.MemoryTool] && l.notes(tc) != nil {
			tt.add(toolEntry{spec: notesSpec, source: srcNotes, name: tools.MemoryTool})
		}
		if on[tools.TodoTool] {
			tt.add(toolEntry{spec: todoSpec, source: srcTodo, name: tools.TodoTool})
		}
		if on[tools.ClarifyTool] && l.asks(tc) {
			tt.add(toolEntry{spec: clarifySpec, source: srcClarify, name: tools.ClarifyTool})
		}
		if on[tools.DelegateTool] && tc.agentCtx != "subagent" {
			tt.add(toolEntry{spec: delegateSpec, source: srcDelegate, name: tools.DelegateTool})
		}
	}
	for _, c := range l.bus.Capabilities(hooks.CapTool) {
		var ti toolInfo
		if err := json.Unmarshal(c.Spec, &ti); err != nil || ti.Name == "" {
			continue
		}
		if prev, taken := tt.byName[ti.Name]; taken {
			if !ti.Override || (prev.source == srcPlugin && !ti.OverrideAllowed) {
				if _, done := warnedShadow.LoadOrStore(c.Plugin+"/"+ti.Name, true); !done {
					slog.Warn("plugin tool shadows an existing tool without override=True (and allow_tool_override); not offered",
						"plugin", c.Plugin, "tool", ti.Name)
				}
				continue
			}
		}
		if !l.toolAvailable(ctx, c, ti) {
			continue
		}
		tt.add(toolEntry{spec: specOf(ti.Name, ti.Description, ti.Schema), source: srcPlugin, plugin: c.Plugin, name: ti.Name})
	}
	if tc.mem != nil {
		var schemas []json.RawMessage
		if a := l.callMemory(ctx, tc, "get_tool_schemas", nil, nil); a.Available {
			_ = json.Unmarshal(a.Value, &schemas)
		}
		tt.addSchemas(schemas, srcMemory, tc.mem.cap)
	}
	if tc.engine != nil {
		// As the familiar API does: after every other tool, a name already
		// taken is skipped, and a schema without a name is never offered
		// (a provider would refuse the whole request).
		var schemas []json.RawMessage
		if raw, err := l.bus.CallEngine(ctx, *tc.engine, "get_tool_schemas", l.engineCall(tc, tc.sessionID, nil, nil)); err != nil {
			slog.Warn("context engine tools could not be listed", "engine", tc.engine.Name, "error", err)
		} else if err := json.Unmarshal(raw, &schemas); err != nil && string(raw) != "null" {
			slog.Warn("context engine tools: get_tool_schemas did not return a list", "engine", tc.engine.Name)
		}
		tt.addSchemas(schemas, srcEngine, *tc.engine)
	}
	if tc.sub != nil {
		// Whoever offers them (a plugin's send_message, a memory
		// provider's memory tool), a subagent has none of these.
		for _, n := range tools.BlockedForSubagents {
			if _, ok := tt.byName[n]; ok {
				delete(tt.byName, n)
				tt.order = slices.DeleteFunc(tt.order, func(o string) bool { return o == n })
			}
		}
	}
	return tt
}

// addSchemas offers the tools of a memory provider or a context engine:
// OpenAI function schemas, bare or wrapped in {"type": "function"}.
func (tt *toolTable) addSchemas(schemas []json.RawMessage, src toolSource, c hooks.Capability) {
	for _, raw := range schemas {
		var s struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		}
		if json.Unmarshal(normalizeSchema(raw), &s) != nil || s.Name == "" {
			slog.Warn("a tool schema without a name was not offered", "plugin", c.Plugin, "from", c.Kind)
			continue
		}
		if _, taken := tt.byName[s.Name]; taken {
			continue
		}
		tt.add(toolEntry{spec: specOf(s.Name, s.Description, raw), source: src, plugin: c.Plugin, name: s.Name})
	}
}

func (tt *toolTable) add(e toolEntry) {
	if _, ok := tt.byName[e.spec.Name]; !ok {
		tt.order = append(tt.order, e.spec.Name)
	}
	tt.byName[e.spec.Name] = e
}

// toolAvailable applies a plugin tool's requires_env (set in this process)
// and check_fn (asked of the plugin).
func (l *Loop) toolAvailable(ctx context.Context, c hooks.Capability, ti toolInfo) bool {
	for _, e := range ti.RequiresEnv {
		if os.Getenv(e) == "" {
			return false
		}
	}
	if !ti.HasCheck && len(ti.RequiresEnv) == 0 {
		return true
	}
	raw, err := l.bus.CallCapability(ctx, c.Plugin, hooks.CapTool, ti.Name, "check", map[string]any{})
	if err != nil {
		slog.Warn("plugin tool availability check failed; not offered", "plugin", c.Plugin, "tool", ti.Name, "error", err)
		return false
	}
	var out struct {
		Available bool `json:"available"`
	}
	return json.Unmarshal(raw, &out) == nil && out.Available
}

// normalizeSchema accepts {"type": "function", "function": {...}} too.
func normalizeSchema(raw json.RawMessage) json.RawMessage {
	var wrapped struct {
		Type     string          `json:"type"`
		Function json.RawMessage `json:"function"`
	}
	if json.Unmarshal(raw, &wrapped) == nil && wrapped.Type == "function" && len(wrapped.Function) > 0 {
		return wrapped.Function
	}
	return raw
}

// specOf turns an OpenAI function schema into the tool spec a provider is
// offered.
func specOf(name, description string, schema json.RawMessage) llm.ToolSpec {
	var s struct {
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	_ = json.Unmarshal(normalizeSchema(schema), &s)
	if description == "" {
		description = s.Description
	}
	params := string(s.Parameters)
	if params == "" || params == "null" {
		params = `{"type":"object","properties":{}}`
	}
	return llm.ToolSpec{Name: name, Description: description, Parameters: params}
}

// parseArgs reads a tool call's arguments as an object ({} when they are
// empty or not an object).
func parseArgs(text string) map[string]any {
	var args map[string]any
	if err := json.Unmarshal([]byte(text), &args); err != nil || args == nil {
		return map[string]any{}
	}
	return args
}

// runTool runs one tool call the model asked for: the assistant's request
// is stored, tool_request middleware and pre_tool_call may rewrite or block
// it (failing closed), the tool runs, transform_tool_result may replace its
// result, and the result is stored as a tool message with post_tool_call.
func (l *Loop) runTool(ctx context.Context, t *Turn, tc *turnCtx, call llm.ToolCall) error {
	t.ToolCalls = append(t.ToolCalls, call.Name)
	err := l.db.InTx(ctx, func(tx *db.Tx) error {
		_, err := l.sessions.AppendMessageTx(ctx, tx, t.SessionID, sessions.NewMessage{Role: "assistant", Content: call.Arguments,
			ToolName: call.Name, ToolCallID: call.ID})
		return err
	})
	if err != nil {
		return err
	}
	args := parseArgs(call.Arguments)
	toldStart(ctx, call, args)
	result, status, errType, errMsg, dur := "", "ok", "", "", time.Duration(0)
	var decision hooks.ToolDecision
	if tc.interrupt != "" {
		// A hook stopped the turn at an earlier call of this answer:
		// the rest are answered, not run.
		decision = hooks.ToolDecision{Action: "block", Message: "not run: the turn was stopped (" + tc.interrupt + ")"}
	} else {
		var trace []map[string]any
		args, trace = l.toolRequestMiddleware(ctx, tc, call, args)
		decision = l.preToolCall(ctx, tc, t.SessionID, call, args, trace)
		if decision.Args != nil {
			args = decision.Args
		}
		if decision.Action == "approve" {
			decision = l.approve(ctx, tc, t.SessionID, call, args, decision, PatternKey(call.Name, decision.RuleKey), nil)
			if decision.Args != nil {
				args = decision.Args
			}
		}
		if decision.Action != "block" {
			decision = l.guardCommand(ctx, tc, t.SessionID, call, args, decision)
		}
	}
	if decision.Action == "block" {
		t.Blocked = append(t.Blocked, call.Name)
		b, _ := json.Marshal(map[string]string{"error": decision.Message})
		result, status, errType, errMsg = string(b), "blocked", "blocked", decision.Message
	} else {
		start := time.Now()
		result, errType, errMsg = l.runToolCall(ctx, tc, t.SessionID, call, args)
		dur = time.Since(start)
		if errMsg != "" && ctx.Err() != nil {
			// The turn was stopped (or ran out of time) under the call.
			errType, errMsg = ErrTypeInterrupted, "not finished: the turn was stopped ("+stopOf(ctx).Reason+")"
			b, _ := json.Marshal(map[string]string{"error": errMsg})
			result = string(b)
		}
		if errMsg != "" {
			status = "error"
		}
		result = withApproval(result, decision.Approval)
	}
	payload := hooks.ToolResultPayload{ToolName: call.Name, Args: args, Arguments: call.Arguments, TaskID: tc.taskID,
		SessionID: t.SessionID, ToolCallID: call.ID, TurnID: tc.turnID, Result: result, ResultSize: len(result),
		DurationMS: dur.Milliseconds(), Status: status, ErrorType: hooks.StrOrNil(errType), ErrorMessage: hooks.StrOrNil(errMsg),
		Error: errMsg, SessionKey: tc.sessionKey}
	stored := result
	if l.bus.HasSync(hooks.TransformToolRes) {
		if results, err := l.bus.CallSync(ctx, hooks.TransformToolRes, payload); err == nil {
			if s, ok := hooks.FirstString(results, true); ok {
				stored = s
			}
		}
	}
	payload.Result, payload.ResultSize = clip(result, 2000), len(result)
	// Stored even when the turn was stopped meanwhile: every tool call in
	// the transcript keeps its result, so the next turn's request is whole.
	// Its statements too: the driver may interrupt a running statement
	// whose context is done, and then the result (and its post_tool_call)
	// rolled back with the transaction.
	rec := context.WithoutCancel(ctx)
	return l.db.InTx(rec, func(tx *db.Tx) error {
		if _, err := l.sessions.AppendMessageTx(rec, tx, t.SessionID, sessions.NewMessage{Role: "tool", Content: stored,
			ToolName: call.Name, ToolCallID: call.ID}); err != nil {
			return err
		}
		_, err := l.bus.EnqueueTx(rec, tx, hooks.PostToolCall, payload)
		return err
	})
}

// withApproval is a tool's JSON result with how its call was approved as
// its "approval" (the model and the transcript read it), as the familiar
// agent's terminal says a reviewing model's approve; result as it is when
// there is nothing to say or it is no JSON object.
func withApproval(result, approval string) string {
	if approval == "" {
		return result
	}
	var obj map[string]json.RawMessage
	body := strings.TrimRight(result, " \t\r\n")
	if json.Unmarshal([]byte(body), &obj) != nil || obj == nil || !strings.HasSuffix(body, "}") {
		return result
	}
	sep := ","
	if len(obj) == 0 {
		sep = ""
	}
	// Added at the end: the result's own keys keep their order.
	return body[:len(body)-1] + sep + `"approval":` + strings.TrimSpace(tools.PlainJSON(approval)) + "}"
}

// ErrTypeInterrupted is post_tool_call's error_type for a call the turn's
// stop cut short.
const ErrTypeInterrupted = "interrupted"

// preToolCall asks the control hook; no subscriber means run it.
func (l *Loop) preToolCall(ctx context.Context, tc *turnCtx, sessionID string, call llm.ToolCall, args map[string]any, trace []map[string]any) hooks.ToolDecision {
	if !l.bus.HasSync(hooks.PreToolCall) {
		return hooks.ToolDecision{}
	}
	if trace == nil {
		trace = []map[string]any{}
	}
	results, err := l.bus.CallSync(ctx, hooks.PreToolCall, hooks.ToolCallPayload{ToolName: call.Name, Args: args,
		Arguments: call.Arguments, TaskID: tc.taskID, SessionID: sessionID, ToolCallID: call.ID, TurnID: tc.turnID,
		MiddlewareTrace: trace, SessionKey: tc.sessionKey})
	if err != nil {
		return hooks.ToolDecision{Action: "block", Message: "pre_tool_call could not be asked: " + err.Error()}
	}
	return hooks.DecideToolCall(results, args)
}

// approve runs a plugin's {"action": "approve"} through the person at the
// surface, unless the rule is allowed already (for this conversation, or
// standing in the profile's config.yaml) or a pre_approval_decision hook
// answers first; with nobody to ask, or on a no, the call is blocked.
//
// key is the rule a "session" or "always" answer covers. A terminal
// command Atrium itself asks about has no d.Plugin, and r, what a
// reviewing model is shown of it under approvals.mode: smart (nil for a
// plugin's ask, which is always the person's).
func (l *Loop) approve(ctx context.Context, tc *turnCtx, sessionID string, call llm.ToolCall, args map[string]any, d hooks.ToolDecision, key string,
	r *review) hooks.ToolDecision {
	tool := call.Name
	blocked := hooks.ToolDecision{Action: "block", Message: "BLOCKED: plugin approval required for " + tool, Args: d.Args, Plugin: d.Plugin}
	if d.Plugin == "" {
		blocked.Message = "BLOCKED: a person's approval is required for this command (" + key + ")"
	}
	if tc.sub != nil {
		// Subagents running side by side ask one at a time (a chat
		// platform waits for one answer per conversation), and the
		// person's answer for the conversation, given to one, holds for
		// those that wait. Waiting for that answer is a person's time.
		release := waitingForPerson(ctx)
		tc.sub.asks.Lock()
		release()
		defer tc.sub.asks.Unlock()
	}
	// The person let asks of this rule run for the rest of the
	// conversation, or from now on in the profile (config.yaml's
	// command_allowlist, honoured in scheduled runs too: it is the
	// standing consent nobody is there to give): nobody is asked, and no
	// approval hook fires.
	if l.allowed(tc.conversation(), key) {
		return hooks.ToolDecision{Args: d.Args}
	}
	approveAll, limit := l.policy()
	if approveAll {
		slog.Info("a tool call a plugin asked about ran without asking (approvals.mode: off)", "plugin", d.Plugin,
			"tool", tool, "rule", key, "session_id", sessionID)
		return hooks.ToolDecision{Args: d.Args}
	}
	// approvals.mode: smart: a reviewing model decides first where a
	// person would be asked, or nobody could be (a send); a scheduled run
	// keeps to approvals.cron_mode, as the familiar agent's.
	if r != nil && tc.platform != PlatformCron {
		out, decided, note := l.smartReview(ctx, tc, sessionID, call, args, d, key, *r, blocked)
		if decided {
			return out
		}
		if note != "" {
			d.Message = strings.TrimSpace(d.Message + " " + note)
		}
	}
	if l.opts.Approve == nil {
		if tc.platform == PlatformCron {
			blocked.Message += " (a scheduled run has nobody to ask; approvals.cron_mode: approve in config.yaml lets such calls run there, or answer \"always\" where a person is asked)"
		} else {
			blocked.Message += " (nobody to approve it on this surface)"
		}
		return blocked
	}
	p := approvalPayload(tc, sessionID, call, args, d, key)
	// A pre_approval_decision hook (Claude Code's PermissionRequest) may
	// answer in the person's place; then nobody is asked, and neither
	// approval observer fires.
	switch v := l.decideApproval(ctx, p); v.Action {
	case "allow":
		if v.Session && (len(v.SessionTools) == 0 || slices.Contains(v.SessionTools, tool)) {
			l.grants.add(tc.conversation(), key)
		}
		if v.Args != nil {
			return hooks.ToolDecision{Args: v.Args}
		}
		return hooks.ToolDecision{Args: d.Args}
	case "deny":
		if v.Interrupt {
			tc.interrupt = v.Message
		}
		blocked.Message, blocked.Plugin = v.Message, v.Plugin
		return blocked
	}
	// pre_approval_request and post_approval_response are observers, each
	// committed before the next step: a plugin that notifies the person
	// hears of the question while it waits.
	l.observe(ctx, hooks.PreApprovalRequest, p)
	ask := Approval{SessionID: sessionID, ToolName: tool, Args: args, Plugin: d.Plugin, Message: d.Message, PatternKey: key, Timeout: limit}
	if tc.sub != nil {
		// The person sees the parent's conversation: say who asks.
		ask.Message = strings.TrimSpace("A subagent asks (its task: " + subagentTitle(tc.sub.task.Goal) + "). " + ask.Message)
	}
	// An "always" is written to the standing list before the surface takes
	// it: one that cannot be written (the list unreadable, a read-only or
	// full disk) is refused there with the reason, and the person answers
	// again, rather than learning later that it was not kept.
	var kept atomic.Bool
	if l.opts.Standing != nil && l.opts.Standing.Check(key) == nil {
		ask.KeepAlways = func() error {
			err := l.opts.Standing.Allow(key)
			kept.Store(err == nil)
			return err
		}
	}
	canAlways := ask.KeepAlways != nil
	release := waitingForPerson(ctx) // the person's time is not the turn's
	answer, err := l.opts.Approve(ctx, ask)
	release()
	if answer == AnswerAlways && !canAlways {
		answer = AnswerSession // it cannot be kept: it lasts the conversation
	}
	ok := err == nil && answer.Allows()
	p.Choice, p.Approved = hooks.ChoiceDeny, &ok
	switch {
	case errors.Is(err, ErrNoAnswer):
		p.Choice, err = hooks.ChoiceTimeout, nil
		blocked.Message += " (no answer in time)"
	case err != nil:
		p.Error = err.Error()
	case answer == AnswerAlways:
		// Kept in the standing list only, so that a person who revokes
		// it is asked again in this conversation too.
		p.Choice = hooks.ChoiceAlways
		if kept.Load() {
			break
		}
		// A surface that took "always" without keeping it first.
		if serr := l.opts.Standing.Allow(key); serr != nil {
			// The call runs (the person said yes) and the grant holds for
			// the conversation; only "from now on" could not be kept.
			l.grants.add(tc.conversation(), key)
			p.Error = "the standing approval could not be saved: " + serr.Error()
			slog.Warn("an \"always\" answer could not be saved; it holds for this conversation", "rule", key, "error", serr)
		}
	case answer == AnswerSession:
		p.Choice = hooks.ChoiceSession
		l.grants.add(tc.conversation(), key)
	case ok:
		p.Choice = hooks.ChoiceOnce
	}
	l.observe(ctx, hooks.PostApprovalResp, p)
	if err != nil {
		blocked.Message = "BLOCKED: plugin approval gate failed for " + tool
		if ctx.Err() != nil {
			blocked.Message = "not run: the turn was stopped while " + tool + " waited for approval"
		}
		return blocked
	}
	if !ok {
		return blocked
	}
	return hooks.ToolDecision{Args: d.Args}
}

// guardCommand holds back a terminal command that could destroy data: one
// nobody can undo never runs; another runs once a person approves it (or
// its rule is allowed: for this conversation, in command_allowlist, or by
// approvals.mode: off), as a plugin's {"action": "approve"} does.
func (l *Loop) guardCommand(ctx context.Context, tc *turnCtx, sessionID string, call llm.ToolCall, args map[string]any, d hooks.ToolDecision) hooks.ToolDecision {
	e, ok := tc.tools.byName[call.Name]
	if !ok || e.source != srcMachine || e.tool.Name != "terminal" {
		return d
	}
	command, _ := args["command"].(string)
	danger, found := tools.CheckAt(command, l.commandDir(tc.machine, tc.platform, tc.sessionKey, args), tc.machine.Protected)
	where := ""
	if danger.Script != "" {
		where = " (in " + danger.Script + ", which the command runs)"
	}
	switch {
	case !found:
		return d
	case danger.Hardline:
		return hooks.ToolDecision{Action: "block", Message: "BLOCKED: " + danger.Key + where + ". A command nobody can undo never runs " +
			"here, whatever anyone answers; if it is really meant, the person runs it themselves."}
	}
	return l.approve(ctx, tc, sessionID, call, args, hooks.ToolDecision{Action: "approve", Args: d.Args,
		Message: "This command could destroy data: " + danger.Key + where + "."}, danger.Key,
		&review{command: command, flagged: danger.Key + where, script: danger.Script})
}

// conversationDir is the folder the conversation of key stands in: where
// its last command ended, else where it starts.
func (l *Loop) conversationDir(s tools.Settings, platform, key string) string {
	if dir := l.dirs.Get(key); dir != "" {
		return dir
	}
	return s.StartDir(platform)
}

// commandDir is the folder a terminal call runs in (tools.WorkDir from
// the conversation's).
func (l *Loop) commandDir(s tools.Settings, platform, key string, args map[string]any) string {
	return tools.WorkDir(l.conversationDir(s, platform, key), args)
}

// PatternKey is the allowlist key of a plugin's ask about tool, in the
// familiar API's words: plugin_rule:<rule_key>, or plugin_rule:<tool> when
// the plugin named no rule_key.
func PatternKey(tool, ruleKey string) string {
	if ruleKey == "" {
		ruleKey = tool
	}
	return "plugin_rule:" + ruleKey
}

// allowed reports whether rule key runs without asking in the
// conversation of sessionKey: allowed there for the session, or standing
// in the profile.
func (l *Loop) allowed(sessionKey, key string) bool {
	return l.grants.has(sessionKey, key) || l.standingAllows(key)
}

// policy is approvals.mode: off and approvals.timeout as config.yaml has
// them at this ask (false and 0 without standing approvals).
func (l *Loop) policy() (approveAll bool, timeout time.Duration) {
	if l.opts.Standing == nil {
		return false, 0
	}
	return l.opts.Standing.ApprovalPolicy()
}

// standingAllows reports whether the profile allows key from now on; a
// standing list that cannot be read allows nothing (logged).
func (l *Loop) standingAllows(key string) bool {
	if l.opts.Standing == nil {
		return false
	}
	ok, err := l.opts.Standing.Allows(key)
	if err != nil {
		slog.Warn("the standing approvals cannot be read; the person is asked", "error", err)
	}
	return ok && err == nil
}

// decideApproval asks pre_approval_decision hooks; a hook that fails, or
// none at all, decides nothing.
func (l *Loop) decideApproval(ctx context.Context, p hooks.ApprovalPayload) hooks.ApprovalVerdict {
	if !l.bus.HasSync(hooks.PreApprovalDecide) {
		return hooks.ApprovalVerdict{}
	}
	results, err := l.bus.CallSync(ctx, hooks.PreApprovalDecide, p)
	if err != nil {
		slog.Warn("pre_approval_decision failed; the person is asked", "tool", p.ToolName, "error", err)
		return hooks.ApprovalVerdict{}
	}
	return hooks.DecideApproval(results)
}

// approvalPayload describes an approval as the familiar API's hooks have it.
func approvalPayload(tc *turnCtx, sessionID string, call llm.ToolCall, args map[string]any, d hooks.ToolDecision, key string) hooks.ApprovalPayload {
	argText, _ := json.Marshal(args)
	desc := strings.TrimSpace(d.Message)
	if desc == "" {
		desc = "the plugin " + d.Plugin + " wants a person to approve " + call.Name
	}
	surface := tc.platform
	if !slices.Contains([]string{"cli", "desktop", "dashboard", PlatformCron}, surface) {
		surface = "gateway" // a chat platform
	}
	command := call.Name + " " + string(argText)
	if c, ok := args["command"].(string); ok && d.Plugin == "" {
		command = c // the terminal's own ask: the command, as the familiar agent has it
	}
	return hooks.ApprovalPayload{Command: command, Description: desc, PatternKey: key,
		PatternKeys: []string{key}, SessionKey: tc.sessionKey, Surface: surface, RequestID: uuid.Must(uuid.NewV7()).String(),
		SessionID: sessionID, TaskID: tc.taskID, TurnID: tc.turnID, ToolName: call.Name, Args: args, ToolCallID: call.ID,
		Platform: tc.platform}
}

// observe commits one observer event in a transaction of its own. The
// event is a report: when it cannot be written the turn goes on, logged; it
// is written even when the turn's context just ended (a stopped turn still
// says what happened to the question it asked).
func (l *Loop) observe(ctx context.Context, hook string, payload any) {
	if err := l.enqueue(context.WithoutCancel(ctx), hook, payload); err != nil {
		slog.Warn("hook event not recorded", "hook", hook, "error", err)
	}
}

// execTool runs a tool: built-in, a plugin's, the memory provider's or the
// context engine's. A
// failing tool is a result the model reads ({"error": ...}), not a failed
// turn.
func (l *Loop) execTool(ctx context.Context, tc *turnCtx, sessionID string, call llm.ToolCall, args map[string]any) (result, errType, errMsg string) {
	e, ok := tc.tools.byName[call.Name]
	if !ok {
		msg := "unknown tool " + call.Name
		return "error: " + msg, "unknown_tool", msg
	}
	switch e.source {
	case srcRecall:
		out, err := l.sessionSearch(ctx, tc, args)
		if err != nil {
			b, _ := json.Marshal(map[string]any{"success": false, "error": err.Error()})
			return string(b), "tool_error", err.Error()
		}
		return out, "", ""
	case srcNotes:
		return l.runNotes(ctx, tc, sessionID, call.ID, args)
	case srcTodo:
		return l.runTodo(ctx, sessionID, args)
	case srcClarify:
		return l.runClarify(ctx, tc, sessionID, args)
	case srcDelegate:
		return l.runDelegate(ctx, tc, sessionID, args)
	case srcMachine:
		var transform func(command, output string, code int) string
		if e.tool.Name == "terminal" && l.bus.HasSync(hooks.TransformTermOut) {
			transform = func(command, output string, code int) string {
				results, err := l.bus.CallSync(ctx, hooks.TransformTermOut, hooks.TerminalOutput{Command: command, Output: output,
					Returncode: code, TaskID: tc.taskID, EnvType: "local", SessionID: sessionID, ToolCallID: call.ID,
					TurnID: tc.turnID, SessionKey: tc.sessionKey})
				if err != nil {
					slog.Warn("transform_terminal_output failed; the output is left as it was", "error", err)
					return output
				}
				if s, ok := hooks.FirstString(results, true); ok {
					return s
				}
				return output
			}
		}
		out, errType, errMsg, changed := l.runMachine(ctx, tc.machine, tc.platform, tc.sessionKey, e.tool, args, transform)
		for _, p := range changed {
			if !slices.Contains(tc.changed, p) {
				tc.changed = append(tc.changed, p)
			}
		}
		return out, errType, errMsg
	case srcBuiltin:
		argText, _ := json.Marshal(args)
		out, err := e.run(ctx, string(argText))
		if err != nil {
			return "error: " + err.Error(), "error", err.Error()
		}
		return out, "", ""
	case srcPlugin:
		raw, err := l.bus.CallCapability(ctx, e.plugin, hooks.CapTool, e.name, "call", map[string]any{"args": args,
			"task_id": tc.taskID, "session_id": sessionID, "tool_call_id": call.ID, "turn_id": tc.turnID, "session_key": tc.sessionKey,
			"platform": tc.platform, "source": tc.source})
		if err != nil {
			b, _ := json.Marshal(map[string]string{"error": "Tool execution failed: " + err.Error()})
			return string(b), "error", err.Error()
		}
		var out struct {
			Result    string `json:"result"`
			Error     string `json:"error"`
			ErrorType string `json:"error_type"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return "error: malformed tool result", "error", err.Error()
		}
		return out.Result, out.ErrorType, out.Error
	case srcEngine:
		// handle_tool_call(name, args, messages=...): the conversation as
		// the model sees it, as the familiar API passes it.
		msgs, err := l.sessions.Messages(ctx, sessionID, false)
		if err != nil {
			return "error: " + err.Error(), "error", err.Error()
		}
		raw, err := l.bus.CallEngine(ctx, *tc.engine, "handle_tool_call", l.engineCall(tc, sessionID, []any{e.name, args},
			map[string]any{"messages": storedPayload(msgs)}))
		if err != nil {
			b, _ := json.Marshal(map[string]string{"error": fmt.Sprintf("Context engine tool '%s' failed: %v", e.name, err)})
			return string(b), "error", err.Error()
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, "", ""
		}
		return string(raw), "", ""
	default:
		a := l.callMemory(ctx, tc, "handle_tool_call", []any{e.name, args}, map[string]any{"session_id": sessionID, "tool_call_id": call.ID})
		if !a.Available {
			msg := "memory provider unavailable: " + a.Reason
			b, _ := json.Marshal(map[string]string{"error": msg})
			return string(b), "error", msg
		}
		var s string
		if json.Unmarshal(a.Value, &s) == nil {
			return s, "", ""
		}
		return string(a.Value), "", ""
	}
}

// runMachine runs one of the machine's tools in the conversation's working
// directory, and keeps the one a terminal command ended in. A result with
// an "error" is post_tool_call's status error (a command that exits
// non-zero is not: its exit code is the result).
func (l *Loop) runMachine(ctx context.Context, s tools.Settings, platform, key string, t tools.Tool, args map[string]any,
	transform func(command, output string, code int) string) (result, errType, errMsg string, changed []string) {
	c := &tools.Call{Args: args, Dir: l.conversationDir(s, platform, key), Settings: s, Transform: transform, Processes: l.opts.Processes, Owner: key,
		Platform: platform, Granted: l.skillEnv.Get(key), AskSecret: l.opts.AskSecret}
	out := t.Run(ctx, c)
	if c.NewDir != "" {
		l.dirs.Set(key, c.NewDir)
	}
	l.skillEnv.Add(key, c.Grants...)
	result, errType, errMsg = toolOutcome(out)
	return result, errType, errMsg, c.Changed
}

// toolOutcome is a tool's JSON answer with the failure it says
// ({"error": "..."}, as the machine's tools, memory and todo answer one),
// as post_tool_call reports it.
func toolOutcome(out string) (result, errType, errMsg string) {
	var failed struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(out), &failed) == nil && failed.Error != "" {
		return out, "tool_error", failed.Error
	}
	return out, "", ""
}

// toolRequestMiddleware lets tool_request middleware rewrite a call's
// arguments ({"args": {...}}) before the hooks see them.
func (l *Loop) toolRequestMiddleware(ctx context.Context, tc *turnCtx, call llm.ToolCall, args map[string]any) (map[string]any, []map[string]any) {
	var trace []map[string]any
	for _, c := range middlewareOf(tc, "tool_request") {
		raw, err := l.bus.CallCapability(ctx, c.Plugin, hooks.CapMiddleware, c.Name, "invoke", map[string]any{"payload": map[string]any{
			"tool_name": call.Name, "args": args, "original_args": args, "task_id": tc.taskID, "session_id": tc.sessionID,
			"tool_call_id": call.ID, "turn_id": tc.turnID, "telemetry_schema_version": hooks.TelemetrySchemaVersion,
			"middleware_schema_version": "hermes.middleware.v1"}})
		if err != nil {
			slog.Warn("tool_request middleware failed", "plugin", c.Plugin, "error", err)
			continue
		}
		var out struct {
			Results []map[string]any `json:"results"`
		}
		_ = json.Unmarshal(raw, &out)
		for _, r := range out.Results {
			if next, ok := r["args"].(map[string]any); ok {
				args = next
				trace = append(trace, map[string]any{"source": c.Plugin})
			}
		}
	}
	return args, trace
}

// DispatchTool runs a tool by name outside a turn (ctx.dispatch_tool): a
// built-in or a plugin's tool, no hooks around it, as the familiar API's
// registry dispatch does. The result is the tool's string.
func (l *Loop) DispatchTool(ctx context.Context, sessionKey, name string, args map[string]any) (string, error) {
	if args == nil {
		args = map[string]any{}
	}
	if tool, ok := l.opts.Tools[name]; ok {
		b, _ := json.Marshal(args)
		return tool.Run(ctx, string(b))
	}
	if !l.pluginOverrides(name) {
		if out, ok := l.dispatchMachine(ctx, sessionKey, name, args); ok {
			return out, nil
		}
	}
	for _, c := range l.bus.Capabilities(hooks.CapTool) {
		if c.Name != name {
			continue
		}
		raw, err := l.bus.CallCapability(ctx, c.Plugin, hooks.CapTool, name, "call", map[string]any{"args": args,
			"session_key": sessionKey, "session_id": sessionOfKey(sessionKey)})
		if err != nil {
			return "", err
		}
		var out struct {
			Result string `json:"result"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return "", fmt.Errorf("tool %s: malformed result: %w", name, err)
		}
		return out.Result, nil
	}
	b, _ := json.Marshal(map[string]string{"error": "Unknown tool: " + name})
	return string(b), nil
}

// pluginOverrides says whether a plugin registered name with override=True
// (a terminal of its own, say): dispatch_tool then calls it, as the turn
// offers it.
func (l *Loop) pluginOverrides(name string) bool {
	for _, c := range l.bus.Capabilities(hooks.CapTool) {
		var ti toolInfo
		if c.Name == name && json.Unmarshal(c.Spec, &ti) == nil && ti.Override {
			return true
		}
	}
	return false
}

// dispatchMachine runs one of the machine's tools for a plugin, when the
// toolsets of the conversation's platform (the session key's first part)
// offer it. Nobody is there to approve a command that could destroy data:
// it runs only if its rule is allowed (command_allowlist, approvals.mode:
// off, or for this conversation); one nobody can undo never does.
func (l *Loop) dispatchMachine(ctx context.Context, sessionKey, name string, args map[string]any) (string, bool) {
	if l.opts.Machine == nil {
		return "", false
	}
	s := l.opts.Machine()
	platform, _, _ := strings.Cut(sessionKey, ":")
	if platform == "" {
		platform = "cli"
	}
	on, _ := s.Enabled(platform)
	if !on[name] {
		return "", false
	}
	all := tools.All()
	i := slices.IndexFunc(all, func(t tools.Tool) bool { return t.Name == name })
	if i < 0 {
		// The turn's own tools (the task list, memory, recall, a question
		// to the person) need a turn: the familiar agent's registry says
		// so, and so does this.
		msg := name + " must be handled by the agent loop"
		if name == tools.ClarifyTool {
			msg = "Clarify tool is not available in this execution context."
		}
		b, _ := json.Marshal(map[string]string{"error": msg})
		return string(b), true
	}
	tool := all[i]
	if command, _ := args["command"].(string); name == "terminal" {
		if danger, found := tools.CheckAt(command, l.commandDir(s, platform, sessionKey, args), s.Protected); found {
			approveAll, _ := l.policy()
			if danger.Hardline || !approveAll && !l.allowed(sessionKey, danger.Key) {
				b, _ := json.Marshal(map[string]any{"output": "", "exit_code": -1,
					"error": "BLOCKED: " + danger.Key + ": a plugin's dispatch_tool has nobody to approve it"})
				return string(b), true
			}
		}
	}
	out, _, _, _ := l.runMachine(ctx, s, platform, sessionKey, tool, args, nil)
	return out, true
}

// sessionOfKey is the session id of a local session key ("cli:<id>").
func sessionOfKey(key string) string {
	if i := strings.LastIndexByte(key, ':'); i >= 0 {
		return key[i+1:]
	}
	return ""
}
