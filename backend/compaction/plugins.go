package compaction

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
)

// MemoryNotesHeading introduces, in a summary, what the memory provider
// extracted from the folded messages (on_pre_compress).
const MemoryNotesHeading = "Kept by the memory provider:"

// maxMemoryNotes bounds the provider's text kept in a summary.
const maxMemoryNotes = 6000

// tellMemory calls a method of the configured memory provider; a failure
// is logged, never the compaction's.
func (e *Engine) tellMemory(ctx context.Context, req Request, sessionID, method string, args []any, kwargs map[string]any) hooks.MemoryAnswer {
	if e.bus == nil {
		return hooks.MemoryAnswer{}
	}
	c, ok := e.bus.MemoryProvider(e.Config().MemoryProvider)
	if !ok {
		return hooks.MemoryAnswer{}
	}
	a, err := e.bus.CallMemory(ctx, c, method, hooks.MemoryCall{Args: args, Kwargs: kwargs, SessionID: sessionID, Platform: req.Platform})
	if err != nil {
		slog.Warn("memory provider call failed", "provider", c.Name, "method", method, "error", err)
	}
	return a
}

// preCompress asks the memory provider what to keep from the messages
// about to be folded (on_pre_compress): its text is kept in the summary.
func (e *Engine) preCompress(ctx context.Context, req Request, folded []sessions.Message) string {
	text := strings.TrimSpace(e.tellMemory(ctx, req, req.SessionID, "on_pre_compress", []any{openAIMessages(ToStored(folded))}, nil).Text())
	if len(text) > maxMemoryNotes {
		text = text[:4000] + "\n...[memory provider context truncated]...\n" + text[len(text)-1500:]
	}
	return text
}

// contextEngine is the context engine a plugin registered
// (register_context_engine): the first in plugin load order replaces the
// summarizer.
func (e *Engine) contextEngine() (hooks.Capability, bool) {
	if e.bus == nil {
		return hooks.Capability{}, false
	}
	return e.bus.ContextEngine()
}

// engineCall is a call of the context engine for req's conversation.
func engineCall(req Request, sessionID string, args []any, kwargs map[string]any) hooks.EngineCall {
	return hooks.EngineCall{Args: args, Kwargs: kwargs, SessionID: sessionID, Platform: req.Platform, SessionKey: req.SessionKey,
		Model: req.Model, Provider: req.Provider, ContextLength: req.ContextLength}
}

// tellEngineBoundary tells the context engine that a compaction rewrote the
// conversation (on_session_start with boundary_reason "compression", as the
// familiar API does after every compression, rotated or in place): its copy
// of the old session follows the conversation. A failure is logged.
func (e *Engine) tellEngineBoundary(ctx context.Context, req Request, res Result) {
	eng, ok := e.contextEngine()
	if !ok {
		return
	}
	call := engineCall(req, res.SessionID, nil, nil)
	call.OldSessionID = res.SessionID
	if res.OldSessionID != "" {
		call.OldSessionID = res.OldSessionID
	}
	e.bus.TellEngine(ctx, eng, "on_session_start", call)
}

// enginePlan asks the context engine to compact ms[from:] (the messages
// before from, the system prompt, are kept): its compress() returns the new
// messages. An empty or unchanged answer compacts nothing.
func (e *Engine) enginePlan(ctx context.Context, req Request, eng hooks.Capability, ms []sessions.Message, from int, rotate bool) (plan, string, string, error) {
	folded := ms[from:]
	if len(folded) < 2 {
		return plan{}, SkipNothing, "fewer than two messages to compact", nil
	}
	notes := e.preCompress(ctx, req, folded)
	raw, err := e.bus.CallEngine(ctx, eng, "compress", engineCall(req, req.SessionID, []any{openAIMessages(ToStored(ms))},
		map[string]any{"current_tokens": estimate(ms), "focus_topic": nilIfEmpty(req.Focus),
			"force": req.Reason == ReasonManual, "memory_context": notes}))
	if err != nil {
		return plan{}, SkipAborted, fmt.Sprintf("the context engine %s failed: %v", eng.Name, err), nil
	}
	var msgs []map[string]any
	if err := json.Unmarshal(raw, &msgs); err != nil || len(msgs) == 0 {
		return plan{}, SkipAborted, fmt.Sprintf("the context engine %s returned no messages", eng.Name), nil
	}
	// The kept system prompt is not part of the replacement.
	for i := 0; i < from && len(msgs) > 0; i++ {
		if role, _ := msgs[0]["role"].(string); role == "system" && content(msgs[0]) == ms[i].Content {
			msgs = msgs[1:]
		}
	}
	var inserts []sessions.NewMessage
	for _, m := range msgs {
		nm := sessions.NewMessage{Content: content(m)}
		nm.Role, _ = m["role"].(string)
		if nm.Role == "" {
			nm.Role = "assistant"
		}
		nm.ToolCallID, _ = m["tool_call_id"].(string)
		nm.ToolName, _ = m["name"].(string)
		if calls, ok := m["tool_calls"].([]any); ok && len(calls) > 0 {
			c, _ := calls[0].(map[string]any)
			fn, _ := c["function"].(map[string]any)
			nm.ToolCallID, _ = c["id"].(string)
			nm.ToolName, _ = fn["name"].(string)
			nm.Content, _ = fn["arguments"].(string)
		}
		inserts = append(inserts, nm)
	}
	if unchanged(folded, inserts) {
		return plan{}, SkipNothing, fmt.Sprintf("the context engine %s changed nothing", eng.Name), nil
	}
	p := plan{replaced: folded, inserts: inserts, rotate: rotate, engine: eng.Name}
	for range inserts {
		p.pos = append(p.pos, nil)
	}
	if !rotate && len(inserts) > 0 {
		p.pos[0] = posOf(folded[0])
	}
	p.removed = intp(max(0, len(folded)-len(inserts)))
	return p, "", "", nil
}

// enginePrune asks the context engine to prune tool outputs
// (prune_tool_results_only(messages, current_tokens) -> (messages, count)),
// as the familiar agent leaves that to its engine: the default answer prunes
// nothing, so Atrium's own stubs never change an engine's transcript. The
// tool messages whose content the engine changed are replaced in place.
func (e *Engine) enginePrune(ctx context.Context, req Request, eng hooks.Capability, ms []sessions.Message) (plan, string, string, error) {
	raw, err := e.bus.CallEngine(ctx, eng, "prune_tool_results_only", engineCall(req, req.SessionID,
		[]any{openAIMessages(ToStored(ms))}, map[string]any{"current_tokens": estimate(ms)}))
	if err != nil {
		return plan{}, SkipAborted, fmt.Sprintf("the context engine %s failed: %v", eng.Name, err), nil
	}
	var pair []json.RawMessage
	var msgs []map[string]any
	var n int
	if json.Unmarshal(raw, &pair) != nil || len(pair) != 2 || json.Unmarshal(pair[0], &msgs) != nil || json.Unmarshal(pair[1], &n) != nil {
		return plan{}, SkipAborted, fmt.Sprintf("the context engine %s did not answer (messages, count)", eng.Name), nil
	}
	if n <= 0 {
		return plan{}, SkipNothing, fmt.Sprintf("the context engine %s pruned nothing", eng.Name), nil
	}
	if len(msgs) != len(ms) {
		return plan{}, SkipAborted, fmt.Sprintf("the context engine %s answered %d messages for %d", eng.Name, len(msgs), len(ms)), nil
	}
	var p plan
	for i, m := range ms {
		if m.Role != "tool" {
			continue
		}
		if c := content(msgs[i]); c != m.Content {
			p.replaced = append(p.replaced, m)
			p.inserts = append(p.inserts, sessions.NewMessage{Role: "tool", ToolName: m.ToolName, ToolCallID: m.ToolCallID, Content: c})
			p.pos = append(p.pos, posOf(m))
		}
	}
	if len(p.replaced) == 0 {
		return plan{}, SkipNothing, fmt.Sprintf("the context engine %s changed no tool output", eng.Name), nil
	}
	p.removed, p.replacedN, p.engine = intp(0), intp(len(p.replaced)), eng.Name
	return p, "", "", nil
}

func unchanged(ms []sessions.Message, ins []sessions.NewMessage) bool {
	if len(ms) != len(ins) {
		return false
	}
	for i := range ms {
		if ms[i].Role != ins[i].Role || ms[i].Content != ins[i].Content {
			return false
		}
	}
	return true
}

func content(m map[string]any) string {
	switch c := m["content"].(type) {
	case string:
		return c
	case []any: // content parts
		var b strings.Builder
		for _, p := range c {
			if pm, ok := p.(map[string]any); ok {
				if t, ok := pm["text"].(string); ok {
					b.WriteString(t)
				}
			}
		}
		return b.String()
	}
	return ""
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// openAIMessages is messages in the OpenAI shape plugins expect.
func openAIMessages(ms []llm.Message) []map[string]any {
	out := make([]map[string]any, 0, len(ms))
	for _, m := range ms {
		out = append(out, OpenAIMessage(m))
	}
	return out
}

// OpenAIMessage is one message in the OpenAI chat shape ({role, content},
// tool_call_id, name, tool_calls) that plugins of the familiar Python API
// read.
func OpenAIMessage(m llm.Message) map[string]any {
	x := map[string]any{"role": m.Role, "content": m.Content}
	if m.ToolCallID != "" {
		x["tool_call_id"] = m.ToolCallID
	}
	if m.ToolName != "" {
		x["name"] = m.ToolName
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]map[string]any, 0, len(m.ToolCalls))
		for _, c := range m.ToolCalls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		x["tool_calls"] = calls
	}
	return x
}
