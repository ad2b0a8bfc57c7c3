package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Results is a plugin's answer to a synchronous hook when it has several
// callbacks: their non-null answers in order (a process plugin answers so).
type Results []any

// Answers flattens CallSync's results into the answers in callback order:
// a plugin's Results are expanded, nulls and failed calls are left out.
func Answers(results []SyncResult) []any {
	var out []any
	for _, r := range results {
		if r.Err != nil || r.Value == nil {
			continue
		}
		switch v := r.Value.(type) {
		case Results:
			for _, x := range v {
				if x != nil {
					out = append(out, normalize(x))
				}
			}
		default:
			out = append(out, normalize(v))
		}
	}
	return out
}

// actions are a plugin's answers that are JSON objects, in callback order
// (its Results expanded): what control hooks read an "action" from.
func (r SyncResult) actions() []map[string]any {
	answers := []any{r.Value}
	if rs, ok := r.Value.(Results); ok {
		answers = rs
	}
	var out []map[string]any
	for _, a := range answers {
		if m, ok := normalize(a).(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// normalize turns a Go value into the shape it has after a trip through
// JSON (maps of any, float64 numbers), so in-process and process plugins
// answer alike.
func normalize(v any) any {
	switch v.(type) {
	case string, map[string]any, []any, bool, float64, nil:
		return v
	}
	if raw, ok := v.(json.RawMessage); ok {
		var out any
		if json.Unmarshal(raw, &out) == nil {
			return out
		}
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// FirstString is what a transform hook (transform_tool_result,
// transform_llm_output) decides: the first string answer, if any (an empty
// one counts only when allowEmpty).
func FirstString(results []SyncResult, allowEmpty bool) (string, bool) {
	for _, a := range Answers(results) {
		if s, ok := a.(string); ok && (allowEmpty || strings.TrimSpace(s) != "") {
			return s, true
		}
	}
	return "", false
}

// ToolDecision is what pre_tool_call decided for one tool call.
type ToolDecision struct {
	// Action is "block", "approve" or "" (run it).
	Action  string
	Message string
	// Args are the arguments after every "modify" answer (each shallow-
	// merged into the arguments as they were), nil when none modified them.
	Args   map[string]any
	Plugin string // who blocked or asked for approval
	// RuleKey is an approve's "rule_key": the grain of the person's
	// "session" and "always" answers (the familiar API's allowlist key is
	// plugin_rule:<rule_key>, or plugin_rule:<tool> without one).
	RuleKey string
	// Approval says how a call that runs was approved when the tool's
	// result should say it (the reviewing model of approvals.mode: smart
	// let it): never a plugin's answer.
	Approval string
}

// TimeoutBlockMessage is the tool result when a pre_tool_call callback did
// not decide in time (the hook fails closed).
const TimeoutBlockMessage = "pre_tool_call plugin callback timed out or is still running"

// DecideToolCall reads pre_tool_call's answers as the control hook they
// are: {"action": "block", "message": ...} vetoes the call (the message is
// the tool's result), {"action": "approve", "message"?: ..., "rule_key"?:
// ...} asks for a person's approval, {"action": "modify", "args": {...}} rewrites the
// arguments; the first block or approve wins, modifications accumulate. It
// fails closed: a plugin whose callback timed out, is still running or
// raised blocks the call.
func DecideToolCall(results []SyncResult, args map[string]any) ToolDecision {
	var d ToolDecision
	for _, r := range results {
		if r.Err != nil {
			msg := TimeoutBlockMessage
			if !errors.Is(r.Err, ErrTimedOut) && !errors.Is(r.Err, ErrSkipped) {
				msg = fmt.Sprintf("pre_tool_call plugin %s raised: %s", r.Plugin, clipText(oneLine(r.Err.Error()), 200))
			}
			return ToolDecision{Action: "block", Message: msg, Args: d.Args, Plugin: r.Plugin}
		}
		for _, m := range r.actions() {
			switch action, _ := m["action"].(string); action {
			case "modify":
				if partial, ok := m["args"].(map[string]any); ok && len(partial) > 0 {
					base := d.Args
					if base == nil {
						base = args
					}
					merged := make(map[string]any, len(base)+len(partial))
					for k, v := range base {
						merged[k] = v
					}
					for k, v := range partial {
						merged[k] = v
					}
					d.Args = merged
				}
			case "block":
				msg, _ := m["message"].(string)
				if msg == "" {
					continue // a block needs its message: it becomes the result
				}
				return ToolDecision{Action: "block", Message: msg, Args: d.Args, Plugin: r.Plugin}
			case "approve":
				msg, _ := m["message"].(string)
				key, _ := m["rule_key"].(string)
				return ToolDecision{Action: "approve", Message: msg, Args: d.Args, Plugin: r.Plugin, RuleKey: strings.TrimSpace(key)}
			}
		}
	}
	return d
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// TurnEnd is what pre_turn_end decided.
type TurnEnd struct {
	// Continue holds the message of every "continue" answer, in plugin
	// order: the turn goes on with them as the next instruction, unless
	// Stop.
	Continue []string
	// Stop is set when an answer said {"action": "stop"}: the turn ends,
	// whatever the others answered.
	Stop bool
	// Notes are what the answers ask to show the person (a stop's message,
	// an answer's "note").
	Notes []string
}

// StopFeedbackPrefix starts the instruction a Claude Code Stop hook gives
// when it keeps a turn going ("Stop hook feedback:\n[COMMAND]: REASON", as
// Claude Code words it); the transcript shows such a message as the hook's,
// not the person's.
const StopFeedbackPrefix = "Stop hook feedback:"

// DefaultContinueMessage is the instruction of a "continue" answer that
// gave none.
const DefaultContinueMessage = "A hook did not let the turn end yet: go on."

// DecideTurnEnd reads pre_turn_end's answers: {"action": "continue",
// "message"} and {"action": "stop", "message"?}, each with an optional
// "note" for the person. The familiar pre_verify directive shapes are read
// alike ("action" or "decision" "continue" or "block", "message" or
// "reason"), so a callback written for it answers here unchanged. It fails
// open: a callback that raised or timed out decides nothing.
func DecideTurnEnd(results []SyncResult) TurnEnd {
	var d TurnEnd
	for _, r := range results {
		if r.Err != nil {
			continue
		}
		for _, m := range r.actions() {
			msg, _ := m["message"].(string)
			if strings.TrimSpace(msg) == "" {
				msg, _ = m["reason"].(string)
			}
			msg = strings.TrimSpace(msg)
			action, _ := m["action"].(string)
			if action == "" {
				action, _ = m["decision"].(string)
			}
			switch strings.ToLower(strings.TrimSpace(action)) {
			case "continue", "block":
				if msg == "" {
					msg = DefaultContinueMessage
				}
				d.Continue = append(d.Continue, msg)
			case "stop":
				d.Stop = true
				if msg != "" {
					d.Notes = append(d.Notes, msg)
				}
			}
			if note, _ := m["note"].(string); strings.TrimSpace(note) != "" {
				d.Notes = append(d.Notes, strings.TrimSpace(note))
			}
		}
	}
	return d
}

// ApprovalVerdict is what pre_approval_decision decided in place of the
// person who would be asked to approve a tool call.
type ApprovalVerdict struct {
	// Action is "allow", "deny", or "" when no hook decided: the person
	// is asked.
	Action string
	// Message is a deny's reason, which the model reads as the call's
	// result.
	Message string
	// Args are an allow's rewritten arguments (nil: as they are).
	Args map[string]any
	// Interrupt is set when a deny also stops the turn.
	Interrupt bool
	// Session is set when an allow also lets the plugin's later asks about
	// the tool in this conversation run without asking ("scope":
	// "session"; Claude Code's updatedPermissions); SessionTools, when
	// given, are the tools it names (the grant is for the call's tool only
	// when they name it).
	Session      bool
	SessionTools []string
	// Plugin is who decided.
	Plugin string
}

// DecideApproval reads pre_approval_decision's answers: {"action": "allow",
// "args"?, "scope"?: "session", "tools"?} and {"action": "deny", "message",
// "interrupt"?} ("approve" and
// "block" read alike). Any deny wins, the first one's message with it; else
// the last allow. A callback that raised or timed out decides nothing, so
// the person is asked.
func DecideApproval(results []SyncResult) ApprovalVerdict {
	var v ApprovalVerdict
	for _, r := range results {
		if r.Err != nil {
			continue
		}
		for _, m := range r.actions() {
			action, _ := m["action"].(string)
			switch strings.ToLower(strings.TrimSpace(action)) {
			case "deny", "block":
				if v.Action != "deny" {
					msg, _ := m["message"].(string)
					v = ApprovalVerdict{Action: "deny", Message: strings.TrimSpace(msg), Plugin: r.Plugin}
				}
				if b, _ := m["interrupt"].(bool); b {
					v.Interrupt = true
				}
			case "allow", "approve":
				if v.Action != "deny" {
					args, _ := m["args"].(map[string]any)
					v = ApprovalVerdict{Action: "allow", Args: args, Plugin: r.Plugin}
					if scope, _ := m["scope"].(string); strings.EqualFold(strings.TrimSpace(scope), "session") {
						v.Session = true
						tools, _ := m["tools"].([]any)
						for _, t := range tools {
							if s, ok := t.(string); ok && s != "" {
								v.SessionTools = append(v.SessionTools, s)
							}
						}
					}
				}
			}
		}
	}
	if v.Action == "deny" && v.Message == "" {
		v.Message = "denied by " + v.Plugin
	}
	return v
}
