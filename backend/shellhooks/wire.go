package shellhooks

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"atrium/backend/hooks"
)

// What goes to a hook's stdin, and what its answer means.

// topLevel are the payload fields the familiar agent's stdin lifts out of
// extra.
var topLevel = []string{"tool_name", "args", "session_id", "parent_session_id"}

// Stdin renders the hook's payload as its command reads it. transcript is
// the path of the session's JSONL export (Claude Code's transcript_path;
// "" when there is none).
func Stdin(s Spec, e Env, payload map[string]any, transcript string) ([]byte, error) {
	if s.Dialect == Claude {
		return json.Marshal(claudeStdin(s, e, payload, transcript))
	}
	return json.Marshal(WireOf(s.Event, e, payload))
}

// Wire is the familiar agent's shape of a hook's payload, in its wire
// order: what a shell hook reads on stdin and what an outbound webhook
// posts (with its delivery fields).
type Wire struct {
	Event     string         `json:"hook_event_name"`
	ToolName  any            `json:"tool_name"`
	ToolInput any            `json:"tool_input"`
	SessionID string         `json:"session_id"`
	Cwd       string         `json:"cwd"`
	Profile   string         `json:"profile"`
	Extra     map[string]any `json:"extra"`
}

// WireOf renders payload for event: tool_name, args (as tool_input, when an
// object) and the session (session_id, else parent_session_id) lifted out,
// every other field under extra.
func WireOf(event string, e Env, payload map[string]any) Wire {
	extra := map[string]any{}
	for k, v := range payload {
		if !slices.Contains(topLevel, k) {
			extra[k] = v
		}
	}
	var toolInput any
	if m, ok := payload["args"].(map[string]any); ok {
		toolInput = m
	}
	sid, _ := payload["session_id"].(string)
	if sid == "" {
		sid, _ = payload["parent_session_id"].(string)
	}
	return Wire{event, payload["tool_name"], toolInput, sid, e.Dir, e.Profile, extra}
}

// SessionOf is the session a payload is about (for the transcript).
func SessionOf(payload map[string]any) string {
	for _, k := range []string{"session_id", "child_session_id", "parent_session_id"} {
		if v, _ := payload[k].(string); v != "" {
			return v
		}
	}
	return ""
}

func claudeStdin(s Spec, e Env, p map[string]any, transcript string) map[string]any {
	out := map[string]any{
		"session_id":      SessionOf(p),
		"transcript_path": transcript,
		"cwd":             e.Dir,
		"hook_event_name": s.Name,
		"permission_mode": "default",
	}
	switch s.Name {
	case "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest":
		out["tool_name"], out["tool_input"] = p["tool_name"], p["args"]
		if out["tool_input"] == nil {
			out["tool_input"] = map[string]any{}
		}
		if s.Name != "PermissionRequest" {
			out["tool_use_id"] = p["tool_call_id"]
		}
		switch s.Name {
		case "PermissionRequest":
			// Claude Code's "always allow" rules to offer: Atrium keeps none.
			out["permission_suggestions"] = []any{}
		case "PostToolUse":
			out["tool_response"] = p["result"]
		case "PostToolUseFailure":
			out["error"], out["is_interrupt"] = p["error_message"], p["error_type"] == "interrupted"
		}
	case "UserPromptSubmit":
		out["prompt"] = p["user_message"]
	case "Notification":
		tool, _ := p["tool_name"].(string)
		out["message"] = "Atrium needs your permission to use " + tool
		if d, _ := p["description"].(string); d != "" {
			out["message"] = out["message"].(string) + ": " + d
		}
		out["notification_type"] = notifyPermission
	case "Stop":
		// Set when this turn already went on because a hook would not let
		// it end: a hook that checks it cannot loop forever.
		n, _ := Number(p["continues"])
		out["stop_hook_active"] = n > 0
		out["last_assistant_message"] = p["assistant_response"]
	case "SessionStart":
		out["source"] = "startup"
		if src, _ := p["session_start"].(string); src != "" {
			out["source"] = src
		}
		out["model"] = p["model"]
	case "SessionEnd":
		switch r, _ := p["reason"].(string); r {
		case "new":
			out["reason"] = "clear"
		case "exit":
			out["reason"] = "prompt_input_exit"
		default:
			out["reason"] = "other"
		}
	case "PreCompact", "PostCompact":
		out["trigger"] = "auto"
		if r, _ := p["reason"].(string); r == "manual" {
			out["trigger"] = "manual"
		}
		if s.Name == "PreCompact" {
			focus, _ := p["focus"].(string) // compact --focus, /compress FOCUS
			out["custom_instructions"] = focus
		}
	case "SubagentStart", "SubagentStop":
		out["agent_id"], out["agent_type"] = p["child_subagent_id"], p["child_role"]
		if s.Name == "SubagentStop" {
			out["stop_hook_active"] = false
		}
	}
	return out
}

// defaultBlock is the message of a block that gave none.
const defaultBlock = "Blocked by shell hook."

// defaultDeny is the message of an approval a hook denied without a reason.
const defaultDeny = "Permission denied by shell hook."

// Answer is what the outcome of a hook's run means for its hook, as the
// bus reads plugin answers: nil (nothing), {"action": "block"|"modify"|
// "approve", ...} for pre_tool_call, {"context": ...} for pre_llm_call. A
// hook that could not answer fails open unless it is a fail_closed
// pre_tool_call hook. Problems worth the log come back as note.
func Answer(s Spec, o Outcome) (answer map[string]any, note string) {
	failClosed := s.FailClosed && s.Event == hooks.PreToolCall
	if o.Err != "" || o.TimedOut {
		why := o.Err
		if o.TimedOut {
			why = fmt.Sprintf("timed out after %s", s.Timeout)
		}
		if failClosed {
			return block(fmt.Sprintf("hook %s failed closed: %s", s.Command, why)), why
		}
		return nil, why
	}
	stderr := clip(strings.TrimSpace(o.Stderr), 400)
	stdout := strings.TrimSpace(o.Stdout)
	if o.ExitCode == 2 {
		switch {
		case s.Event == hooks.PreToolCall:
			if a := parse(s, stdout); a != nil && a["action"] == "block" {
				return a, ""
			}
			if stderr == "" {
				stderr = defaultBlock
			}
			return block(stderr), ""
		case s.Dialect == Claude && s.Name == "UserPromptSubmit":
			// As in Claude Code: the prompt is not processed, and erased;
			// stderr is shown to the person, not to the model.
			if stderr == "" {
				stderr = defaultBlock
			}
			return hooks.BlockPrompt(stderr), ""
		case s.Event == hooks.PreTurnEnd:
			// Claude Code's Stop: the agent goes on, told stderr.
			return goOn(s, strings.TrimSpace(o.Stderr)), ""
		case s.Event == hooks.PreApprovalDecide:
			// Claude Code's PermissionRequest: denied, stderr to the model.
			if stderr == "" {
				stderr = defaultDeny
			}
			return map[string]any{"action": "deny", "message": stderr}, ""
		}
	}
	var note2 string
	if o.ExitCode != 0 {
		note2 = fmt.Sprintf("exited %d: %s", o.ExitCode, stderr)
	}
	if s.Dialect == Claude && o.ExitCode != 0 {
		return nil, note2 // Claude Code reads stdout only after a clean exit
	}
	a := parse(s, stdout)
	if a == nil && failClosed && stdout != "" && !isObject(stdout) {
		return block(fmt.Sprintf("hook %s failed closed: unparseable stdout (expected a JSON object)", s.Command)), note2
	}
	return a, note2
}

func block(msg string) map[string]any { return map[string]any{"action": "block", "message": msg} }

// parse reads stdout as an answer for s's hook.
func parse(s Spec, stdout string) map[string]any {
	if stdout == "" {
		return nil
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(stdout), &data); err != nil {
		// Claude Code adds plain text printed by a UserPromptSubmit hook
		// to the prompt's context.
		if s.Dialect == Claude && s.Event == hooks.PreLLMCall {
			return map[string]any{"context": stdout}
		}
		return nil
	}
	switch s.Event {
	case hooks.PreToolCall:
		return parseToolDecision(data)
	case hooks.PreTurnEnd:
		return parseTurnEnd(s, data)
	case hooks.PreApprovalDecide:
		return parseApproval(data)
	case hooks.PreLLMCall:
		if s.Dialect == Claude && s.Name == "UserPromptSubmit" {
			// Claude Code's {"decision": "block", "reason"} and
			// {"continue": false, "stopReason"}: the prompt is not sent.
			if d, _ := data["decision"].(string); d == "block" {
				return hooks.BlockPrompt(textOr(data, "reason", defaultBlock))
			}
			if c, ok := data["continue"].(bool); ok && !c {
				return hooks.BlockPrompt(textOr(data, "stopReason", defaultBlock))
			}
		}
		if c, _ := data["context"].(string); strings.TrimSpace(c) != "" {
			return map[string]any{"context": c}
		}
		if h, ok := data["hookSpecificOutput"].(map[string]any); ok {
			if c, _ := h["additionalContext"].(string); strings.TrimSpace(c) != "" {
				return map[string]any{"context": c}
			}
		}
	}
	return nil
}

// goOn is the answer that keeps a turn going with reason. A Claude Code
// Stop hook's reason reaches the model as Claude Code words it.
func goOn(s Spec, reason string) map[string]any {
	if s.Dialect == Claude {
		if reason == "" {
			reason = hooks.DefaultContinueMessage
		}
		reason = hooks.StopFeedbackPrefix + "\n[" + s.Command + "]: " + reason
	}
	return map[string]any{"action": "continue", "message": reason}
}

// parseTurnEnd reads a pre_turn_end answer: the familiar shape
// ({"action": "continue"|"stop", "message"}) and Claude Code's Stop output
// ({"decision": "block", "reason"} goes on; {"continue": false,
// "stopReason"} ends the turn whatever else was answered; "systemMessage"
// is shown to the person).
func parseTurnEnd(s Spec, d map[string]any) map[string]any {
	var out map[string]any
	switch {
	case d["continue"] == false:
		out = map[string]any{"action": "stop", "message": textOr(d, "stopReason", "")}
	case d["decision"] == "block":
		out = goOn(s, textOr(d, "reason", ""))
	case d["action"] == "continue" || d["action"] == "stop":
		out = map[string]any{"action": d["action"], "message": textOr(d, "message", "")}
	}
	if note := textOr(d, "systemMessage", textOr(d, "note", "")); note != "" {
		if out == nil {
			out = map[string]any{}
		}
		out["note"] = note
	}
	return out
}

// parseToolDecision reads both dialects of a pre_tool_call answer: the
// familiar agent's {"action": "block"|"modify", "message"|"args"}, Claude
// Code's {"decision": "block", "reason"} and {"hookSpecificOutput":
// {"permissionDecision": "deny"|"ask"|"allow", "permissionDecisionReason",
// "updatedInput"}}.
func parseToolDecision(d map[string]any) map[string]any {
	msg := func(primary, secondary string) string {
		for _, k := range []string{primary, secondary} {
			if s, ok := d[k].(string); ok && s != "" {
				return s
			}
		}
		return defaultBlock
	}
	if d["action"] == "block" {
		return block(msg("message", "reason"))
	}
	if d["decision"] == "block" || d["decision"] == "deny" {
		return block(msg("reason", "message"))
	}
	if h, ok := d["hookSpecificOutput"].(map[string]any); ok {
		reason, _ := h["permissionDecisionReason"].(string)
		switch h["permissionDecision"] {
		case "deny":
			if reason == "" {
				reason = defaultBlock
			}
			return block(reason)
		case "ask":
			return map[string]any{"action": "approve", "message": reason}
		}
		if in, ok := h["updatedInput"].(map[string]any); ok {
			return map[string]any{"action": "modify", "args": in}
		}
	}
	if args, ok := d["args"].(map[string]any); ok && d["action"] == "modify" {
		return map[string]any{"action": "modify", "args": args}
	}
	if in, ok := d["tool_input"].(map[string]any); ok && d["decision"] == "modify" {
		return map[string]any{"action": "modify", "args": in}
	}
	return nil
}

// parseApproval reads a pre_approval_decision answer: Claude Code's
// PermissionRequest output ({"hookSpecificOutput": {"decision": {"behavior":
// "allow", "updatedInput"?} | {"behavior": "deny", "message", "interrupt"?}}})
// and the familiar shape ({"action": "allow", "args"?} | {"action": "deny",
// "message", "interrupt"?}). Anything else decides nothing.
func parseApproval(d map[string]any) map[string]any {
	var rules []any // Claude Code's updatedPermissions: "always allow" rules
	if h, ok := d["hookSpecificOutput"].(map[string]any); ok {
		dec, _ := h["decision"].(map[string]any)
		d = map[string]any{"action": dec["behavior"], "args": dec["updatedInput"], "message": dec["message"], "interrupt": dec["interrupt"]}
		rules, _ = dec["updatedPermissions"].([]any)
	}
	switch d["action"] {
	case "allow":
		out := map[string]any{"action": "allow"}
		if args, ok := d["args"].(map[string]any); ok {
			out["args"] = args
		}
		// An allow rule (addRules, behavior allow) is kept for the rest of
		// the conversation, whatever its destination: Atrium writes no
		// settings files, so a rule meant for them lasts the session.
		var tools []any
		granted := false
		for _, u := range rules {
			u, _ := u.(map[string]any)
			if u["type"] != "addRules" || u["behavior"] != "allow" {
				continue
			}
			granted = true
			rs, _ := u["rules"].([]any)
			for _, r := range rs {
				if r, ok := r.(map[string]any); ok {
					if name, ok := r["toolName"].(string); ok && name != "" {
						tools = append(tools, name)
					}
				}
			}
		}
		if granted {
			out["scope"] = "session"
			if len(tools) > 0 {
				out["tools"] = tools
			}
		}
		return out
	case "deny":
		return map[string]any{"action": "deny", "message": textOr(d, "message", defaultDeny), "interrupt": d["interrupt"] == true}
	}
	return nil
}

// textOr is d[key] when it is a non-blank text, else def.
func textOr(d map[string]any, key, def string) string {
	if v, ok := d[key].(string); ok && strings.TrimSpace(v) != "" {
		return v
	}
	return def
}

func isObject(s string) bool {
	var m map[string]any
	return json.Unmarshal([]byte(s), &m) == nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
