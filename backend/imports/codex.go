package imports

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	"atrium/backend/sessions"
)

// Codex writes one rollout per session, sessions/YYYY/MM/DD/
// rollout-<time>-<uuid>.jsonl. Since mid-2025 every line is an envelope
// {timestamp, type, payload}: "session_meta" (payload: id, timestamp, cwd,
// originator, cli_version, instructions, source, forked_from_id, ...),
// "response_item" (payload: what the model API saw: message, function_call,
// function_call_output, custom_tool_call(_output), local_shell_call,
// reasoning, web_search_call, ...), "compacted" (payload.message: the
// summary that replaced the history), and "event_msg" / "turn_context"
// (UI events repeating the items, and per-turn settings). Before that, the
// first line was the session itself ({id, timestamp, instructions}), the
// others bare response items, with {"record_type": "state"} lines between.
// A fork or a subagent started with the parent's history copies it, its
// session_meta included, after its own: the first session_meta is the
// file's.

// readCodex reads every rollout under root (or root itself, one file), in
// the order of their paths: by date and time, so a session that spawned
// others comes before them.
func readCodex(ctx context.Context, root string, yield Yield, warn func(Problem)) error {
	for _, p := range jsonlPaths(root, warn) {
		if err := ctx.Err(); err != nil {
			return err
		}
		r := &codexReader{path: p, warn: warn, calls: map[string]string{}}
		if !jsonlLines(p, warn, r.line) {
			continue
		}
		key := r.key
		if key == "" {
			key = codexFileID(p)
		}
		if key == "" {
			warn(Problem{Path: p, Message: "no session id: no session_meta line, and no id at the end of the file name"})
			continue
		}
		started := r.started
		if started.IsZero() {
			started = r.first
		}
		it := sessions.Imported{
			Origin:    sessions.Origin{Kind: sessions.ImportCodex, Key: key, Path: p},
			Reading:   readingCodex,
			Title:     promptTitle(r.title),
			Source:    "cli",
			Platform:  PlatformCodex,
			StartedAt: started,
			Messages:  r.msgs,
		}
		if r.parent != "" && r.parent != key {
			it.ParentKey, it.Relation = r.parent, r.relation
		}
		if err := yield(it); err != nil {
			return err
		}
	}
	return nil
}

// codexFileID is the UUID that ends a rollout's file name; "" when none.
func codexFileID(path string) string {
	stem := fileStem(path)
	if len(stem) < 36 || !looksLikeUUID(stem[len(stem)-36:]) {
		return ""
	}
	return stem[len(stem)-36:]
}

type codexReader struct {
	path     string
	warn     func(Problem)
	metaSeen bool
	key      string
	started  time.Time
	parent   string // the session it was forked from, or that spawned it
	relation string
	first    time.Time // the first time of any line
	msgs     []sessions.ImportedMessage
	calls    map[string]string // call_id → tool name
	title    string            // the first user message
}

func (r *codexReader) bad(n int, msg string) {
	r.warn(Problem{Path: r.path, Line: n, Message: msg})
}

func (r *codexReader) add(m sessions.ImportedMessage) {
	r.msgs = append(r.msgs, m)
	if m.Role == "user" && r.title == "" {
		r.title = m.Content
	}
}

// The line types of the envelope layout.
var codexEnvelope = map[string]bool{"session_meta": true, "response_item": true, "compacted": true, "event_msg": true, "turn_context": true}

func (r *codexReader) line(n int, raw []byte) {
	obj, why := jsonlObject(raw)
	if why != "" {
		r.bad(n, why)
		return
	}
	at := jsonlTime(fieldText(obj, "timestamp"))
	if r.first.IsZero() {
		r.first = at
	}
	if _, ok := obj["record_type"]; ok {
		return // the older layout's state lines
	}
	typRaw, hasType := obj["type"]
	typ, ok := jsonText(typRaw)
	if hasType && !ok {
		r.bad(n, `its "type" is not a text`)
		return
	}
	payload, hasPayload := obj["payload"]
	switch {
	case codexEnvelope[typ] || hasType && hasPayload:
		if typ != "session_meta" && typ != "response_item" && typ != "compacted" {
			return // event_msg repeats the items; turn_context is settings
		}
		if !isJSONObject(payload) {
			r.bad(n, fmt.Sprintf("a %s line without its payload object", typ))
			return
		}
		switch typ {
		case "session_meta":
			r.meta(n, payload)
		case "response_item":
			r.item(n, payload, at)
		default:
			r.compacted(n, payload, at)
		}
	case !hasType:
		if _, ok := obj["id"]; !ok {
			r.bad(n, "neither a rollout item nor a session header")
			return
		}
		r.meta(n, raw) // the older layout's first line
	default:
		r.item(n, raw, at) // the older layout: the item itself
	}
}

func (r *codexReader) meta(n int, raw []byte) {
	var m struct {
		ID         string          `json:"id"`
		Timestamp  string          `json:"timestamp"`
		ForkedFrom string          `json:"forked_from_id"`
		Parent     string          `json:"parent_thread_id"`
		Source     json.RawMessage `json:"source"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		r.bad(n, "session meta of an unexpected shape: "+err.Error())
		return
	}
	if r.metaSeen {
		return // a copied parent's
	}
	r.metaSeen = true
	r.key, r.started = m.ID, jsonlTime(m.Timestamp)
	// A subagent names the session that spawned it, flat or in its source
	// ({"subagent": {"thread_spawn": {"parent_thread_id": ...}}}); a fork,
	// the session it was forked from.
	var src struct {
		Subagent struct {
			ThreadSpawn struct {
				Parent string `json:"parent_thread_id"`
			} `json:"thread_spawn"`
		} `json:"subagent"`
	}
	if isJSONObject(m.Source) {
		_ = json.Unmarshal(m.Source, &src) // another shape names no parent
	}
	switch {
	case m.Parent != "":
		r.parent, r.relation = m.Parent, sessions.RelationDelegate
	case src.Subagent.ThreadSpawn.Parent != "":
		r.parent, r.relation = src.Subagent.ThreadSpawn.Parent, sessions.RelationDelegate
	case m.ForkedFrom != "":
		r.parent, r.relation = m.ForkedFrom, sessions.RelationBranch
	}
}

func (r *codexReader) compacted(n int, raw []byte, at time.Time) {
	var c struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		r.bad(n, "a compacted line of an unexpected shape: "+err.Error())
		return
	}
	if strings.TrimSpace(c.Message) != "" {
		r.add(sessions.ImportedMessage{Role: "system", Content: jsonlSummaryPrefix + "\n" + c.Message, CreatedAt: at})
	}
}

func (r *codexReader) item(n int, raw []byte, at time.Time) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		r.bad(n, "a response item without a type")
		return
	}
	switch head.Type {
	case "message":
		r.message(n, raw, at)
	case "function_call", "custom_tool_call":
		var c struct {
			Name      string          `json:"name"`
			CallID    string          `json:"call_id"`
			Arguments json.RawMessage `json:"arguments"`
			Input     json.RawMessage `json:"input"`
		}
		if json.Unmarshal(raw, &c) != nil || c.Name == "" || c.CallID == "" {
			r.bad(n, fmt.Sprintf("a %s without its name and call_id", head.Type))
			return
		}
		args := codexArguments(c.Arguments)
		if head.Type == "custom_tool_call" {
			args = codexCustomInput(c.Input)
		}
		r.calls[c.CallID] = c.Name
		r.add(sessions.ImportedMessage{Role: "assistant", Content: args, ToolName: c.Name, ToolCallID: c.CallID, CreatedAt: at})
	case "local_shell_call":
		var c struct {
			CallID string          `json:"call_id"`
			Action json.RawMessage `json:"action"`
		}
		if json.Unmarshal(raw, &c) != nil {
			r.bad(n, "a local_shell_call of an unexpected shape")
			return
		}
		if c.CallID == "" {
			return // no id to pair its output with (the chat API's calls keep theirs unwritten)
		}
		args, ok := jsonCompact(c.Action)
		if !ok || args == "null" {
			args = "{}"
		}
		r.calls[c.CallID] = "local_shell"
		r.add(sessions.ImportedMessage{Role: "assistant", Content: args, ToolName: "local_shell", ToolCallID: c.CallID, CreatedAt: at})
	case "function_call_output", "custom_tool_call_output":
		var o struct {
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		}
		if json.Unmarshal(raw, &o) != nil || o.CallID == "" {
			r.bad(n, fmt.Sprintf("a %s without its call_id", head.Type))
			return
		}
		text, ok := codexOutput(o.Output)
		if !ok {
			r.bad(n, fmt.Sprintf("a %s whose output has an unexpected shape, kept as JSON", head.Type))
		}
		r.add(sessions.ImportedMessage{Role: "tool", Content: text, ToolName: r.calls[o.CallID], ToolCallID: o.CallID, CreatedAt: at})
	default:
		// reasoning, web_search_call (run by the API: no call id, no output
		// written), ghost_snapshot, compaction, and what comes next: not kept.
	}
}

func (r *codexReader) message(n int, raw []byte, at time.Time) {
	var m struct {
		Role    string `json:"role"`
		Content []struct {
			Type string          `json:"type"`
			Text json.RawMessage `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		r.bad(n, "a message of an unexpected shape: "+err.Error())
		return
	}
	var texts []string
	injected := false
	for _, c := range m.Content {
		s, ok := jsonText(c.Text)
		if !ok || strings.TrimSpace(s) == "" || (c.Type != "input_text" && c.Type != "output_text" && c.Type != "text") {
			continue // input_image, and what has no text
		}
		injected = injected || codexInjected(s)
		texts = append(texts, s)
	}
	text := strings.Join(texts, "\n\n")
	switch m.Role {
	case "user":
		if injected || text == "" {
			return
		}
	case "assistant", "system":
		if text == "" {
			return
		}
	case "developer":
		return // Codex's own instructions
	default:
		r.bad(n, fmt.Sprintf("a message of role %q", m.Role))
		return
	}
	r.add(sessions.ImportedMessage{Role: m.Role, Content: text, CreatedAt: at})
}

// codexInjectedPrefixes start the user messages Codex writes itself, not
// the person: the environment, AGENTS.md and skill instructions, and the
// notes it adds to the history (an aborted turn, a subagent's news).
var codexInjectedPrefixes = []string{"<environment_context>", "<user_instructions>", "# agents.md instructions",
	"<skill", "<turn_aborted>", "<subagent_notification>", "<context_update>"}

func codexInjected(text string) bool {
	t := strings.ToLower(strings.TrimLeftFunc(text, unicode.IsSpace))
	for _, p := range codexInjectedPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// codexArguments is a function call's arguments as compact JSON text: the
// API keeps them as a string holding JSON (kept as it is when it holds
// something else); an object is taken as it is.
func codexArguments(raw json.RawMessage) string {
	s, ok := jsonText(raw)
	if !ok {
		if c, ok := jsonCompact(raw); ok && c != "null" {
			return c
		}
		return "{}"
	}
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	if c, ok := jsonCompact([]byte(s)); ok {
		return c
	}
	return s
}

// codexCustomInput is a custom tool call's input (free text: apply_patch's
// patch) as JSON arguments, {"input": text}, as the turn loop keeps every
// call's arguments; an input that is itself a JSON object is taken as it is.
func codexCustomInput(raw json.RawMessage) string {
	s, ok := jsonText(raw)
	if !ok {
		return codexArguments(raw)
	}
	if c, ok := jsonCompact([]byte(s)); ok && isJSONObject(json.RawMessage(c)) {
		return c
	}
	b, _ := json.Marshal(map[string]string{"input": s})
	return string(b)
}

// codexOutput is a tool output's text. Codex writes a text; older versions
// a text holding {"output": ..., "metadata": {exit_code, ...}} (the output
// is taken), or {content, success} (a failure marked as errorText marks it);
// an MCP tool's, a list of content items (their texts). false for another
// shape, given as compact JSON.
func codexOutput(raw json.RawMessage) (string, bool) {
	switch jsonKind(raw) {
	case 0, 'n':
		return "", true
	case '"':
		s, _ := jsonText(raw)
		if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") {
			var w struct {
				Output   *string         `json:"output"`
				Metadata json.RawMessage `json:"metadata"`
			}
			if json.Unmarshal([]byte(t), &w) == nil && w.Output != nil && isJSONObject(w.Metadata) {
				return *w.Output, true
			}
		}
		return s, true
	case '[':
		if s, ok := jsonTextBlocks(raw, func(string) bool { return true }); ok {
			return s, true
		}
	case '{':
		var o struct {
			Content *string `json:"content"`
			Success *bool   `json:"success"`
		}
		if json.Unmarshal(raw, &o) == nil && o.Content != nil {
			if o.Success != nil && !*o.Success {
				return errorText(*o.Content), true
			}
			return *o.Content, true
		}
	}
	s, _ := jsonCompact(raw)
	return s, false
}
