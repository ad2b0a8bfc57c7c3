package compaction

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"atrium/backend/llm"
	"atrium/backend/sessions"
)

// SummaryPrefix starts every summary message Atrium writes (and every
// summary an import took from another agent).
const SummaryPrefix = sessions.SummaryPrefix

// StubPrefix starts every pruned tool output.
const StubPrefix = "[tool output pruned]"

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// ToLLM turns stored messages into what a model sees. A user message is
// sent as it was sent at the time (with injected context), an assistant
// message that asked for a tool carries its tool call.
func ToLLM(ms []sessions.Message) []llm.Message { return toLLM(ms, true) }

// ToStored is ToLLM with each user message as the user wrote it, without
// the context plugins added to the turn as sent: what a context engine and
// a memory provider are given, as the familiar agent gives its own message
// list (the injected context lives only in the copy sent to the model).
// What an engine returns is stored, so it must not carry that context.
func ToStored(ms []sessions.Message) []llm.Message { return toLLM(ms, false) }

func toLLM(ms []sessions.Message, asSent bool) []llm.Message {
	out := make([]llm.Message, 0, len(ms))
	for _, m := range ms {
		lm := llm.Message{Role: m.Role, Content: m.Content, ToolName: m.ToolName, ToolCallID: m.ToolCallID}
		if asSent && m.SentContent != nil {
			lm.Content = *m.SentContent
		}
		if m.Role == "assistant" && m.ToolCallID != "" {
			lm.ToolCalls = []llm.ToolCall{{ID: m.ToolCallID, Name: m.ToolName, Arguments: m.Content}}
			lm.Content, lm.ToolName, lm.ToolCallID = "", "", ""
		}
		out = append(out, lm)
	}
	return out
}

// tailStart is the index where the protected tail of the last n user turns
// begins (len(ms) when there is no user message).
func tailStart(ms []sessions.Message, n int) int {
	if n <= 0 {
		return len(ms)
	}
	seen := 0
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == "user" {
			seen++
			if seen == n {
				return i
			}
		}
	}
	return 0
}

// leadingSystem counts the system prompt messages at the start, which are
// never folded (a previous summary is not a system prompt: it is folded).
func leadingSystem(ms []sessions.Message) int {
	i := 0
	for i < len(ms) && ms[i].Role == "system" && !strings.HasPrefix(ms[i].Content, SummaryPrefix) {
		i++
	}
	return i
}

// turnsWord is "two turns", "turn", "5 turns": how people say it.
func turnsWord(n int) string {
	words := []string{"zero turns", "turn", "two turns", "three turns", "four turns"}
	if n >= 0 && n < len(words) {
		return words[n]
	}
	return fmt.Sprintf("%d turns", n)
}

func (e *Engine) plan(ctx context.Context, req Request, ms []sessions.Message) (plan, string, string, error) {
	cfg := e.Config()
	switch req.Kind {
	case KindSummarize:
		start, end := leadingSystem(ms), tailStart(ms, cfg.ProtectTurns)
		if eng, ok := e.contextEngine(); ok {
			return e.enginePlan(ctx, req, eng, ms, start, cfg.Rotate)
		}
		if end-start < 2 {
			return plan{}, SkipNothing, fmt.Sprintf("fewer than two messages before the last %s", turnsWord(cfg.ProtectTurns)), nil
		}
		head := ms[start:end]
		return e.summaryPlan(ctx, req, head, cfg.Rotate)
	case KindMicroSummarize:
		start, end := leadingSystem(ms)+2, tailStart(ms, cfg.ProtectTurns)
		size := cfg.MicroSlice
		if end-start < 3 {
			return plan{}, SkipNothing, "fewer than three messages between the start and the last " + turnsWord(cfg.ProtectTurns), nil
		}
		if size > end-start {
			size = end - start
		}
		from := start + (end-start-size)/2
		to := from + size
		// Never cut a tool call from its result.
		for from > start && ms[from].Role == "tool" {
			from--
		}
		for to < end && ms[to].Role == "tool" {
			to++
		}
		return e.summaryPlan(ctx, req, ms[from:to], false)
	case KindPruneToolResults:
		if eng, ok := e.contextEngine(); ok {
			return e.enginePrune(ctx, req, eng, ms)
		}
		end := tailStart(ms, cfg.PruneKeepTurns)
		var p plan
		for _, m := range ms[:end] {
			if m.Role != "tool" || len(m.Content) < cfg.StubMinChars || strings.HasPrefix(m.Content, StubPrefix) {
				continue
			}
			p.replaced = append(p.replaced, m)
			p.inserts = append(p.inserts, sessions.NewMessage{Role: "tool", ToolName: m.ToolName, ToolCallID: m.ToolCallID,
				Content: fmt.Sprintf("%s %s returned %d characters (~%d tokens); the output was removed to save context.",
					StubPrefix, nonEmpty(m.ToolName, "a tool"), len(m.Content), llm.EstimateTokens(m.Content))})
			p.pos = append(p.pos, posOf(m))
		}
		if len(p.replaced) == 0 {
			return plan{}, SkipNothing, "no large tool output older than the last " + turnsWord(cfg.PruneKeepTurns), nil
		}
		p.removed, p.replacedN = intp(0), intp(len(p.replaced))
		return p, "", "", nil
	case KindProviderNative:
		if len(ms) == 0 {
			return plan{}, SkipNothing, "the conversation is empty", nil
		}
		out, err := req.Native.CompactNative(ctx, req.Model, ToLLM(ms))
		if err != nil || len(out) == 0 {
			return plan{}, SkipAborted, fmt.Sprintf("the provider did not compact: %v", err), nil
		}
		p := plan{replaced: ms}
		for _, m := range out {
			role := m.Role
			if role == "" {
				role = "assistant"
			}
			nm := sessions.NewMessage{Role: role, Content: m.Content, ToolName: m.ToolName, ToolCallID: m.ToolCallID}
			if len(m.ToolCalls) > 0 {
				nm.ToolName, nm.ToolCallID, nm.Content = m.ToolCalls[0].Name, m.ToolCalls[0].ID, m.ToolCalls[0].Arguments
			}
			p.inserts = append(p.inserts, nm)
			p.pos = append(p.pos, nil)
		}
		p.removed = intp(max(0, len(ms)-len(out)))
		return p, "", "", nil
	}
	return plan{}, "", "", fmt.Errorf("unknown kind %s", req.Kind)
}

func (e *Engine) summaryPlan(ctx context.Context, req Request, head []sessions.Message, rotate bool) (plan, string, string, error) {
	if eng, ok := e.contextEngine(); ok {
		return e.enginePlan(ctx, req, eng, head, 0, false)
	}
	notes := e.preCompress(ctx, req, head)
	text, err := e.sum.Summarize(ctx, ToLLM(head), req.Focus)
	if err != nil {
		return plan{}, SkipAborted, fmt.Sprintf("the summary failed: %v", err), nil
	}
	if strings.TrimSpace(text) == "" {
		return plan{}, SkipAborted, "the summary came back empty", nil
	}
	if notes != "" {
		text += "\n\n" + MemoryNotesHeading + "\n" + notes
	}
	msg := sessions.NewMessage{Role: "system", Content: fmt.Sprintf("%s %s of %d messages (%s)\n%s", SummaryPrefix, req.Kind, len(head), req.Reason, text)}
	return plan{replaced: head, inserts: []sessions.NewMessage{msg}, pos: []*float64{posOf(head[0])}, removed: intp(len(head)), rotate: rotate}, "", "", nil
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
