// Package turns is the turn loop: it sends a user turn to the model with
// the context plugins add at pre_llm_call, runs the tools the model asks
// for, stores everything, and triggers compaction where the transcript grows
// too large. It also owns the session lifecycle commands (/new, /exit, /help).
package turns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"atrium/backend/apperr"
	"atrium/backend/compaction"
	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
)

// Options configure a Loop.
type Options struct {
	Provider      llm.Provider
	Model         string
	Tools         map[string]Tool // default BuiltinTools()
	MaxToolRounds int             // default 4
}

// Loop runs turns.
type Loop struct {
	db       *db.DB
	sessions *sessions.Service
	engine   *compaction.Engine
	bus      *hooks.Bus
	opts     Options
}

// New builds a loop and registers the lifecycle commands it owns.
func New(d *db.DB, s *sessions.Service, eng *compaction.Engine, bus *hooks.Bus, opts Options) (*Loop, error) {
	if opts.Provider == nil {
		return nil, apperr.New(apperr.Invalid, "the turn loop needs a provider")
	}
	if opts.Tools == nil {
		opts.Tools = BuiltinTools()
	}
	if opts.MaxToolRounds <= 0 {
		opts.MaxToolRounds = 4
	}
	if opts.Model == "" {
		opts.Model = opts.Provider.Name()
	}
	l := &Loop{db: d, sessions: s, engine: eng, bus: bus, opts: opts}
	if err := l.registerCommands(); err != nil {
		return nil, err
	}
	return l, nil
}

// Turn is the outcome of one Send.
type Turn struct {
	SessionID   string              `json:"session_id"` // the session that holds the conversation now
	Rotated     bool                `json:"rotated"`    // a compaction moved it to a continuation
	Command     string              `json:"command,omitempty"`
	Output      string              `json:"output,omitempty"` // a slash command's answer
	Reply       string              `json:"reply,omitempty"`
	SentText    string              `json:"sent_text,omitempty"` // the user turn as the model got it
	ToolCalls   []string            `json:"tool_calls,omitempty"`
	Compactions []compaction.Result `json:"compactions,omitempty"`
}

// Send runs one user turn, or a slash command when text starts with "/".
func (l *Loop) Send(ctx context.Context, sessionID, text string, cc hooks.CommandContext) (Turn, error) {
	cc.SessionID = sessionID
	if cc.Platform == "" {
		cc.Platform = "cli"
	}
	if cc.SessionKey == "" {
		cc.SessionKey = cc.Platform + ":" + sessionID
	}
	if name, args, ok := hooks.ParseCommand(text); ok {
		return l.command(ctx, name, args, cc)
	}
	if strings.TrimSpace(text) == "" {
		return Turn{}, apperr.New(apperr.Invalid, "empty message")
	}
	t := Turn{SessionID: sessionID}
	sess, err := l.sessions.Get(ctx, sessionID)
	if err != nil {
		return Turn{}, err
	}
	if sess.Ended() {
		return Turn{}, apperr.New(apperr.Rejected, "session %s has ended (%s)", sess.ID, sess.EndReason)
	}
	history, err := l.sessions.Messages(ctx, sessionID, false)
	if err != nil {
		return Turn{}, err
	}
	first := true
	for _, m := range history {
		if m.Role == "user" {
			first = false
			break
		}
	}
	// pre_llm_call: synchronous; every string or {"context": ...} answer is
	// added to this turn as sent to the model, in plugin order.
	results, err := l.bus.CallSync(ctx, hooks.PreLLMCall, hooks.LLMCall{SessionID: sessionID, UserMessage: text,
		ConversationHistory: historyPayload(history), IsFirstTurn: first, Model: l.opts.Model, Platform: cc.Platform})
	if err != nil {
		return Turn{}, err
	}
	sent := text
	if extra := hooks.ContextTexts(results); len(extra) > 0 {
		sent = text + "\n\n" + strings.Join(extra, "\n\n")
	}
	t.SentText = sent
	err = l.db.InTx(ctx, func(tx *db.Tx) error {
		m := sessions.NewMessage{Role: "user", Content: text}
		if sent != text {
			m.SentContent = &sent
		}
		if _, err := l.sessions.AppendMessageTx(ctx, tx, sessionID, m); err != nil {
			return err
		}
		if first {
			_, err := l.bus.EnqueueTx(ctx, tx, hooks.OnSessionStart, hooks.SessionLifecycle{SessionID: sessionID, Platform: cc.Platform})
			return err
		}
		return nil
	})
	if err != nil {
		return Turn{}, err
	}
	// pre_api: compact before the call when the prompt is over the threshold.
	if err := l.maybeCompact(ctx, &t, compaction.KindSummarize, compaction.ReasonPreAPI, l.engine.Config().Threshold); err != nil {
		return t, err
	}
	reply, err := l.modelRounds(ctx, &t)
	if err != nil {
		return t, err
	}
	t.Reply = reply
	err = l.db.InTx(ctx, func(tx *db.Tx) error {
		if _, err := l.sessions.AppendMessageTx(ctx, tx, t.SessionID, sessions.NewMessage{Role: "assistant", Content: reply}); err != nil {
			return err
		}
		if _, err := l.bus.EnqueueTx(ctx, tx, hooks.PostLLMCall, hooks.LLMCall{SessionID: t.SessionID, UserMessage: text,
			AssistantMessage: reply, IsFirstTurn: first, Model: l.opts.Model, Platform: cc.Platform}); err != nil {
			return err
		}
		_, err := l.bus.EnqueueTx(ctx, tx, hooks.OnSessionEnd, hooks.SessionLifecycle{SessionID: t.SessionID, Platform: cc.Platform})
		return err
	})
	if err != nil {
		return t, err
	}
	// Between turns: prune stale tool output first, then the soft threshold.
	// prune_tool_results' own plan decides whether there is anything to prune.
	if _, err := l.compact(ctx, &t, compaction.KindPruneToolResults, compaction.ReasonProactivePrune); err != nil {
		return t, err
	}
	if err := l.maybeCompact(ctx, &t, compaction.KindSummarize, compaction.ReasonBetweenTurns, l.engine.Config().SoftThreshold); err != nil {
		return t, err
	}
	return t, nil
}

// modelRounds calls the model, running requested tools, until it answers
// with text. A context-length error compacts (overflow) and retries once.
func (l *Loop) modelRounds(ctx context.Context, t *Turn) (string, error) {
	retried := false
	for round := 0; round <= l.opts.MaxToolRounds; round++ {
		msgs, err := l.sessions.Messages(ctx, t.SessionID, false)
		if err != nil {
			return "", err
		}
		resp, err := l.opts.Provider.Complete(ctx, llm.Request{Model: l.opts.Model, Messages: compaction.ToLLM(msgs), Tools: l.toolSpecs()})
		if errors.Is(err, llm.ErrContextLength) && !retried {
			retried = true
			res, cerr := l.compact(ctx, t, compaction.KindSummarize, compaction.ReasonOverflow)
			if cerr != nil {
				return "", cerr
			}
			if !res.Changed {
				return "", apperr.Wrap(apperr.Rejected, err, "the prompt is over the model's context and compaction could not shrink it (%s)", res.Skipped)
			}
			round--
			continue
		}
		if err != nil {
			return "", fmt.Errorf("model call: %w", err)
		}
		if len(resp.ToolCalls) == 0 {
			return resp.Content, nil
		}
		for _, call := range resp.ToolCalls {
			if err := l.runTool(ctx, t, call); err != nil {
				return "", err
			}
		}
		if err := l.maybeCompact(ctx, t, compaction.KindSummarize, compaction.ReasonPostTool, l.engine.Config().Threshold); err != nil {
			return "", err
		}
	}
	return "", apperr.New(apperr.Rejected, "the model asked for tools %d times in a row; stopping the turn", l.opts.MaxToolRounds+1)
}

func (l *Loop) runTool(ctx context.Context, t *Turn, call llm.ToolCall) error {
	t.ToolCalls = append(t.ToolCalls, call.Name)
	payload := hooks.ToolCallPayload{SessionID: t.SessionID, ToolName: call.Name, ToolCallID: call.ID, Arguments: call.Arguments}
	// The assistant's request is stored (and pre_tool_call fires) before the tool runs.
	err := l.db.InTx(ctx, func(tx *db.Tx) error {
		if _, err := l.sessions.AppendMessageTx(ctx, tx, t.SessionID, sessions.NewMessage{Role: "assistant", Content: call.Arguments,
			ToolName: call.Name, ToolCallID: call.ID}); err != nil {
			return err
		}
		_, err := l.bus.EnqueueTx(ctx, tx, hooks.PreToolCall, payload)
		return err
	})
	if err != nil {
		return err
	}
	var result string
	tool, ok := l.opts.Tools[call.Name]
	if !ok {
		payload.Error = "unknown tool " + call.Name
		result = "error: " + payload.Error
	} else if out, err := tool.Run(ctx, call.Arguments); err != nil {
		payload.Error = err.Error()
		result = "error: " + err.Error()
	} else {
		result = out
	}
	payload.Result, payload.ResultSize = clip(result, 2000), len(result)
	return l.db.InTx(ctx, func(tx *db.Tx) error {
		if _, err := l.sessions.AppendMessageTx(ctx, tx, t.SessionID, sessions.NewMessage{Role: "tool", Content: result,
			ToolName: call.Name, ToolCallID: call.ID}); err != nil {
			return err
		}
		_, err := l.bus.EnqueueTx(ctx, tx, hooks.PostToolCall, payload)
		return err
	})
}

func (l *Loop) toolSpecs() []llm.ToolSpec {
	names := make([]string, 0, len(l.opts.Tools))
	for n := range l.opts.Tools {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]llm.ToolSpec, 0, len(names))
	for _, n := range names {
		out = append(out, l.opts.Tools[n].Spec)
	}
	return out
}

// maybeCompact compacts when the active transcript's estimate is over
// fraction of the model's window.
func (l *Loop) maybeCompact(ctx context.Context, t *Turn, kind, reason string, fraction float64) error {
	if fraction <= 0 {
		return nil
	}
	s, err := l.sessions.Get(ctx, t.SessionID)
	if err != nil {
		return err
	}
	if float64(s.TokenCount) <= fraction*float64(l.opts.Provider.ContextWindow()) {
		return nil
	}
	_, err = l.compact(ctx, t, kind, reason)
	return err
}

func (l *Loop) compact(ctx context.Context, t *Turn, kind, reason string) (compaction.Result, error) {
	req := compaction.Request{SessionID: t.SessionID, Kind: kind, Reason: reason, Model: l.opts.Model}
	res, err := l.engine.Compact(ctx, req)
	if apperr.CodeOf(err) == apperr.Conflict {
		return res, nil // someone else is compacting it: go on with the turn
	}
	if err != nil {
		return res, err
	}
	if res.Changed {
		t.Compactions = append(t.Compactions, res)
		if res.OldSessionID != "" {
			t.SessionID, t.Rotated = res.SessionID, true
		}
	}
	return res, nil
}

// Hygiene is the gateway's between-messages call: it compacts a session
// above the soft threshold (reason gateway_hygiene).
func (l *Loop) Hygiene(ctx context.Context, sessionID string) (Turn, error) {
	t := Turn{SessionID: sessionID}
	err := l.maybeCompact(ctx, &t, compaction.KindSummarize, compaction.ReasonGatewayHygiene, l.engine.Config().SoftThreshold)
	return t, err
}

// CompactNative asks the provider to compact the transcript itself.
func (l *Loop) CompactNative(ctx context.Context, sessionID string) (compaction.Result, error) {
	n, ok := l.opts.Provider.(llm.NativeCompactor)
	if !ok {
		return compaction.Result{}, apperr.New(apperr.Invalid, "provider %s cannot compact natively", l.opts.Provider.Name())
	}
	return l.engine.Compact(ctx, compaction.Request{SessionID: sessionID, Kind: compaction.KindProviderNative,
		Reason: compaction.ReasonProvider, Native: n, Model: l.opts.Model})
}

// Native returns the provider as a native compactor, if it is one.
func (l *Loop) Native() llm.NativeCompactor {
	n, _ := l.opts.Provider.(llm.NativeCompactor)
	return n
}

func historyPayload(ms []sessions.Message) []map[string]any {
	out := make([]map[string]any, 0, len(ms))
	for _, m := range compaction.ToLLM(ms) {
		out = append(out, map[string]any{"role": m.Role, "content": m.Content})
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
