package turns

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/tools"
)

// System prompt sections are bounded: they become prompt bytes charged on
// every turn.
const (
	maxSections         = 32
	maxSectionsChars    = 8000
	sectionHeading      = "## Plugin Context: "
	sectionsStartMarker = "<!-- plugin-sections:start -->"
	sectionsEndMarker   = "<!-- plugin-sections:end -->"
)

// memory is the active memory provider of a turn.
type memory struct {
	cap hooks.Capability
}

// activeMemory finds the memory provider memory.provider names and makes
// sure it is initialized (is_available first): nil when none is
// configured, registered or available.
func (l *Loop) activeMemory(ctx context.Context, tc *turnCtx) *memory {
	c, ok := l.bus.MemoryProvider(l.opts.MemoryProvider)
	if !ok {
		return nil
	}
	m := &memory{cap: c}
	a, err := l.bus.CallMemory(ctx, c, "initialize", l.memCall(tc, nil, nil))
	if err != nil {
		slog.Warn("memory provider did not initialize", "provider", c.Name, "plugin", c.Plugin, "error", err)
		return nil
	}
	if !a.Available {
		slog.Warn("memory provider is not available", "provider", c.Name, "reason", a.Reason)
		return nil
	}
	return m
}

func (l *Loop) memCall(tc *turnCtx, args []any, kwargs map[string]any) hooks.MemoryCall {
	return hooks.MemoryCall{Args: args, Kwargs: kwargs, SessionID: tc.sessionID, Platform: tc.platform, SessionKey: tc.sessionKey,
		UserID: tc.userID, AgentContext: tc.agentCtx, ParentSessionID: tc.parentID}
}

// callMemory calls a provider method; a failure is logged and ignored (a
// memory provider never stops a turn).
func (l *Loop) callMemory(ctx context.Context, tc *turnCtx, method string, args []any, kwargs map[string]any) hooks.MemoryAnswer {
	if tc.mem == nil {
		return hooks.MemoryAnswer{}
	}
	a, err := l.bus.CallMemory(ctx, tc.mem.cap, method, l.memCall(tc, args, kwargs))
	if err != nil {
		slog.Warn("memory provider call failed", "provider", tc.mem.cap.Name, "method", method, "error", err)
	}
	return a
}

// engineCall is a call of the context engine for a session of this turn:
// the plugin's runner starts its copy for the session (update_model,
// on_session_start) before the first.
func (l *Loop) engineCall(tc *turnCtx, sessionID string, args []any, kwargs map[string]any) hooks.EngineCall {
	return hooks.EngineCall{Args: args, Kwargs: kwargs, SessionID: sessionID, Model: tc.model.Name, Provider: tc.model.Provider.Name(),
		ContextLength: tc.model.Provider.ContextWindow(), Platform: tc.platform, SessionKey: tc.sessionKey}
}

// engineWantsCompaction asks the context engine's should_compress; an
// engine that fails to answer is not compacted for (its compress would
// likely fail too), and says so in the log.
func (l *Loop) engineWantsCompaction(ctx context.Context, tc *turnCtx, eng hooks.Capability, sessionID string, tokens int64) bool {
	raw, err := l.bus.CallEngine(ctx, eng, "should_compress", l.engineCall(tc, sessionID, []any{tokens}, nil))
	if err != nil {
		slog.Warn("context engine call failed", "engine", eng.Name, "method", "should_compress", "error", err)
		return false
	}
	var v any // Python's truth: True, a non-zero number
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch x := v.(type) {
	case bool:
		return x
	case float64:
		return x != 0
	}
	return false
}

// systemPrompt assembles a session's system prompt: the profile's persona
// (SOUL.md), the curated memory, the memory provider's block, the skills
// (the guidance to record them, their index), the project's context file,
// the platform's hint, then the plugins' sections in id order, each under
// its heading, within the caps (32 sections, 8,000 characters). "" when
// there is nothing.
func (l *Loop) systemPrompt(ctx context.Context, tc *turnCtx, sess sessions.Session) string {
	var parts []string
	// The persona opens the prompt, where the familiar agent puts its
	// identity (which SOUL.md replaces); a subagent works from its task
	// alone. The context files' budget grows with the model's window.
	budget := tools.ContextBudget(tc.machine.ContextMaxChars, tc.model.Provider.ContextWindow())
	if tc.sub == nil && l.opts.Machine != nil {
		if soul := tools.SoulPrompt(tc.machine.Soul, budget); soul != "" {
			parts = append(parts, soul)
		}
	}
	if notes := l.notesPrompt(tc); notes != "" {
		parts = append(parts, notes)
	}
	if tc.mem != nil {
		if block := strings.TrimSpace(l.callMemory(ctx, tc, "system_prompt_block", nil, nil).Text()); block != "" {
			parts = append(parts, block)
		}
	}
	// The skills, as the familiar agent lists them: to record what worked
	// with skill_manage, and what to load with skill_view. A profile
	// without skills has neither (skill_manage's own description says
	// when to write the first).
	if tc.offered[tools.SkillViewTool] {
		if index := tc.machine.Skills.SkillIndex(tc.platform, tc.offered[tools.SkillManageTool]); index != "" {
			if tc.offered[tools.SkillManageTool] {
				parts = append(parts, tools.SkillsGuidance)
			}
			parts = append(parts, index)
		}
	}
	// The project's context file (.hermes.md, AGENTS.md, CLAUDE.md, the
	// Cursor rules: the first kind found), from the folder the
	// conversation starts in, as the familiar agent reads it.
	if tc.sub == nil && l.opts.Machine != nil {
		if files := tools.ContextFiles(l.commandDir(tc.machine, tc.platform, tc.sessionKey, nil), budget); files != "" {
			parts = append(parts, files)
		}
	}
	// Where the words are read: what renders there, how a file is sent.
	if tc.sub == nil && l.opts.Machine != nil {
		if hint := platformHints[tc.platform]; hint != "" {
			parts = append(parts, hint)
		}
	}
	caps := l.bus.Capabilities(hooks.CapSystemPromptSection)
	sort.SliceStable(caps, func(i, j int) bool { return caps[i].Name < caps[j].Name })
	info := map[string]any{"session_id": sess.ID, "platform": tc.platform, "model": tc.model.Name, "title": sess.Title,
		"source": sess.Source, "profile": sess.Profile, "session_key": tc.sessionKey}
	var blocks []string
	total := len(sectionsStartMarker) + len(sectionsEndMarker) + 2
	for _, c := range caps {
		if len(blocks) >= maxSections {
			slog.Warn("system prompt section over the count budget; skipped", "section", c.Name, "plugin", c.Plugin, "max", maxSections)
			continue
		}
		text := l.sectionText(ctx, c, info)
		if text == "" {
			continue
		}
		block := fmt.Sprintf("%s%s\n\n%s", sectionHeading, c.Name, text)
		size := len(block)
		if len(blocks) > 0 {
			size += 2
		}
		if total+size > maxSectionsChars {
			slog.Warn("system prompt section over the 8,000-character budget; skipped", "section", c.Name, "plugin", c.Plugin)
			continue
		}
		total += size
		blocks = append(blocks, block)
	}
	if len(blocks) > 0 {
		parts = append(parts, sectionsStartMarker+"\n"+strings.Join(blocks, "\n\n")+"\n"+sectionsEndMarker)
	}
	return strings.Join(parts, "\n\n")
}

// sectionText is one section's text: its static content, or what its
// callable returns for this session ("" when it raised or was too long).
func (l *Loop) sectionText(ctx context.Context, c hooks.Capability, info map[string]any) string {
	var spec struct {
		Static   *string `json:"static"`
		MaxChars int     `json:"max_chars"`
	}
	_ = json.Unmarshal(c.Spec, &spec)
	if spec.Static != nil {
		text := strings.TrimSpace(*spec.Static)
		if spec.MaxChars > 0 && len(text) > spec.MaxChars {
			slog.Warn("system prompt section exceeded its max_chars; skipped", "section", c.Name, "plugin", c.Plugin)
			return ""
		}
		return text
	}
	raw, err := l.bus.CallCapability(ctx, c.Plugin, hooks.CapSystemPromptSection, c.Name, "render", map[string]any{"session_info": info})
	if err != nil {
		slog.Warn("system prompt section failed; skipped", "section", c.Name, "plugin", c.Plugin, "error", err)
		return ""
	}
	var out struct {
		Text    *string `json:"text"`
		Skipped string  `json:"skipped"`
	}
	if json.Unmarshal(raw, &out) != nil || out.Text == nil {
		if out.Skipped != "" {
			slog.Warn("system prompt section skipped", "section", c.Name, "plugin", c.Plugin, "why", out.Skipped)
		}
		return ""
	}
	return strings.TrimSpace(*out.Text)
}

// turnContext runs pre_llm_call and the memory provider's on_turn_start
// and prefetch; it returns the texts to add to the user turn as sent, in
// plugin order, the provider's recall last.
func (l *Loop) turnContext(ctx context.Context, tc *turnCtx, sess sessions.Session, text string, history []sessions.Message, first bool, start string) ([]string, error) {
	var extra []string
	if l.bus.HasSync(hooks.PreLLMCall) {
		results, err := l.bus.CallSync(ctx, hooks.PreLLMCall, hooks.LLMCall{SessionID: tc.sessionID, TaskID: tc.taskID,
			TurnID: tc.turnID, UserMessage: text, ConversationHistory: historyPayload(history), IsFirstTurn: first,
			Model: tc.model.Name, Platform: tc.platform, ParentSessionID: sess.ParentSessionID, SenderID: hooks.StrOrNil(tc.userID),
			SessionKey: tc.sessionKey, SessionStart: start})
		if err != nil {
			return nil, err
		}
		if reason, ok := hooks.PromptBlock(results); ok {
			// Nothing is stored and nothing fires: the turn never began.
			return nil, apperr.New(apperr.Rejected, "a hook blocked the message, which was neither sent nor kept: %s", reason)
		}
		extra = hooks.ContextTexts(results)
	}
	if tc.mem != nil {
		turns := 1
		for _, m := range history {
			if m.Role == "user" {
				turns++
			}
		}
		l.callMemory(ctx, tc, "on_turn_start", []any{turns, text}, map[string]any{"model": tc.model.Name,
			"platform": tc.platform, "remaining_tokens": nil, "tool_count": nil})
		if recall := strings.TrimSpace(l.callMemory(ctx, tc, "prefetch", []any{text}, map[string]any{"session_id": tc.sessionID}).Text()); recall != "" {
			extra = append(extra, recall)
		}
	}
	if left := l.todoReminder(ctx, sess, tc.offered[tools.TodoTool]); left != "" {
		extra = append(extra, left)
	}
	return extra, nil
}

type channelPromptKey struct{}

// WithChannelPrompt adds prompt to the system prompt of every model call
// a turn run with ctx makes (the familiar channel_prompts: a chat
// platform's per-channel instructions): ephemeral, never stored, so
// changing it changes the next call and it never piles up in the
// transcript.
func WithChannelPrompt(ctx context.Context, prompt string) context.Context {
	return context.WithValue(ctx, channelPromptKey{}, strings.TrimSpace(prompt))
}

// withChannelPrompt is msgs with ctx's channel prompt added to their
// system prompt (a copy; msgs is not changed).
func withChannelPrompt(ctx context.Context, msgs []llm.Message) []llm.Message {
	p, _ := ctx.Value(channelPromptKey{}).(string)
	if p == "" {
		return msgs
	}
	if len(msgs) > 0 && msgs[0].Role == "system" {
		out := slices.Clone(msgs)
		out[0].Content = strings.TrimSpace(out[0].Content + "\n\n" + p)
		return out
	}
	return append([]llm.Message{{Role: "system", Content: p}}, msgs...)
}

// afterTurn tells the memory provider about the finished turn: sync_turn,
// then queue_prefetch for the next one.
func (l *Loop) afterTurn(ctx context.Context, tc *turnCtx, t *Turn, text, reply string) {
	if tc.mem == nil {
		return
	}
	msgs, err := l.sessions.Messages(ctx, t.SessionID, false)
	if err != nil {
		return
	}
	tc.sessionID = t.SessionID
	l.callMemory(ctx, tc, "sync_turn", []any{text, reply}, map[string]any{"session_id": t.SessionID, "messages": storedPayload(msgs)})
	l.callMemory(ctx, tc, "queue_prefetch", []any{text}, map[string]any{"session_id": t.SessionID})
}

// transformReply runs transform_llm_output: the first non-empty string
// answer replaces the reply.
func (l *Loop) transformReply(ctx context.Context, tc *turnCtx, sessionID, reply string) (string, bool) {
	if !l.bus.HasSync(hooks.TransformLLMOutput) {
		return "", false
	}
	results, err := l.bus.CallSync(ctx, hooks.TransformLLMOutput, hooks.TransformLLMOutputPayload{ResponseText: reply,
		SessionID: sessionID, TaskID: tc.taskID, TurnID: tc.turnID, Model: tc.model.Name, Platform: tc.platform, SessionKey: tc.sessionKey})
	if err != nil {
		return "", false
	}
	return hooks.FirstString(results, false)
}
