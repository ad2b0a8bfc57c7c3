package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/gatewayhooks"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/plugins"
	"atrium/backend/sessions"
	"atrium/backend/turns"
)

// PluginServices answers what plugins ask of their host (proc.Services):
// ctx.llm (the configured provider), ctx.dispatch_tool (the loop's tools),
// ctx.inject_message (a message queued into a local conversation),
// ctx.emit (inter-plugin events, delivered in order), ctx.set_config (the
// plugin's settings in config.yaml), ctx.has_plugin, and for the host
// modules plugins import: hermes_cli.config.load_config (config.yaml as a
// plugin may read it) and agent.context_compressor's summary.
type PluginServices struct {
	st *Stack
	// HasPlugin tells whether a plugin is loaded and enabled here (set by
	// whoever runs the plugins).
	HasPlugin func(id string) bool

	mu   sync.Mutex
	loop *turns.Loop

	events  chan emitted // one worker delivers in emit order
	once    sync.Once
	pending sync.WaitGroup // events queued and not yet delivered
}

type emitted struct {
	event   string
	payload json.RawMessage
	subs    []hooks.Capability
}

// maxPendingEvents bounds the inter-plugin event queue: an emit past it is
// dropped with a warning, so a slow subscriber cannot stall its emitter.
const maxPendingEvents = 64

// NewPluginServices answers plugin requests with st's services.
func NewPluginServices(st *Stack) *PluginServices {
	return &PluginServices{st: st, events: make(chan emitted, maxPendingEvents)}
}

func (s *PluginServices) theLoop() (*turns.Loop, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loop != nil {
		return s.loop, nil
	}
	l, err := s.st.Loop(ModelFlags{})
	if err != nil {
		return nil, err
	}
	s.loop = l
	return l, nil
}

// Serve implements proc.Services.
func (s *PluginServices) Serve(ctx context.Context, plugin, method string, params json.RawMessage) (any, error) {
	switch method {
	case "llm.complete":
		return s.complete(ctx, params)
	case "dispatch_tool":
		var p struct {
			Name       string         `json:"name"`
			Args       map[string]any `json:"args"`
			SessionKey string         `json:"session_key"`
		}
		if err := json.Unmarshal(params, &p); err != nil || p.Name == "" {
			return nil, apperr.New(apperr.Invalid, "dispatch_tool needs a tool name and its arguments")
		}
		l, err := s.theLoop()
		if err != nil {
			return nil, err
		}
		return l.DispatchTool(ctx, p.SessionKey, p.Name, p.Args)
	case "inject_message":
		return s.inject(ctx, plugin, params)
	case "emit":
		return s.emit(plugin, params)
	case "set_config":
		var p struct {
			Key   string `json:"key"`
			Value any    `json:"value"`
		}
		if err := json.Unmarshal(params, &p); err != nil || p.Key == "" {
			return nil, apperr.New(apperr.Invalid, "set_config needs a key")
		}
		if err := plugins.SetPluginSetting(s.st.Home, plugin, p.Key, p.Value); err != nil {
			return nil, err
		}
		return true, nil
	case "load_config":
		// hermes_cli.config.load_config(): config.yaml as read now, without
		// other plugins' settings.
		return config.PluginView(s.st.Home.ConfigPath(), plugin)
	case "summarize":
		return s.summarize(ctx, params)
	case "has_plugin":
		var p struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(params, &p)
		return s.HasPlugin != nil && s.HasPlugin(p.ID), nil
	}
	return nil, apperr.New(apperr.NotFound, "the host has no method %s", method)
}

// summarize is agent.context_compressor's summary: the messages folded into
// one text by the summarizer compaction uses (compaction.summarizer).
func (s *PluginServices) summarize(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		Messages []wireMessage `json:"messages"`
		Focus    string        `json:"focus"`
	}
	if err := json.Unmarshal(params, &p); err != nil || len(p.Messages) == 0 {
		return nil, apperr.New(apperr.Invalid, "summarize needs a non-empty list of messages")
	}
	sum := s.st.summarizer()
	msgs := make([]llm.Message, 0, len(p.Messages))
	for _, m := range p.Messages {
		msgs = append(msgs, llm.Message{Role: m.Role, Content: textOf(m.Content)})
	}
	return sum.Summarize(ctx, msgs, p.Focus)
}

// wireMessage is a message as a plugin sends it: OpenAI's role and content
// (a string, or content parts).
type wireMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

func (s *PluginServices) complete(ctx context.Context, params json.RawMessage) (any, error) {
	var p struct {
		Messages []wireMessage `json:"messages"`
		Model    string        `json:"model"`
	}
	if err := json.Unmarshal(params, &p); err != nil || len(p.Messages) == 0 {
		return nil, apperr.New(apperr.Invalid, "llm.complete needs a non-empty list of messages")
	}
	l, err := s.theLoop()
	if err != nil {
		return nil, err
	}
	m, err := l.Resolve()
	if err != nil {
		return nil, err
	}
	model := m.Name
	if p.Model != "" {
		model = p.Model
	}
	var msgs []llm.Message
	for i, m := range p.Messages {
		switch m.Role {
		case "system", "user", "assistant":
		default:
			return nil, apperr.New(apperr.Invalid, "messages[%d].role must be system, user or assistant, not %q", i, m.Role)
		}
		msgs = append(msgs, llm.Message{Role: m.Role, Content: textOf(m.Content)})
	}
	resp, err := m.Provider.Complete(ctx, llm.Request{Model: model, Messages: msgs})
	if err != nil {
		return nil, fmt.Errorf("the model failed: %w", err)
	}
	return map[string]any{"text": resp.Content, "provider": m.Provider.Name(), "model": model, "agent_id": "",
		"usage": map[string]any{"input_tokens": resp.PromptTokens, "output_tokens": resp.CompletionTokens,
			"total_tokens": resp.PromptTokens + resp.CompletionTokens}}, nil
}

// textOf reads a message content: a string, or OpenAI content parts.
func textOf(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, part := range c {
			if m, ok := part.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					b.WriteString(t)
				}
			}
		}
		return b.String()
	}
	return ""
}

// inject queues a message into a local conversation (the session a
// "<platform>:<session id>" key names): it is stored as a user message, so
// the model reads it at the next turn. A gateway conversation needs
// allow_gateway_injection, and Atrium runs no gateway yet: refused.
func (s *PluginServices) inject(ctx context.Context, plugin string, params json.RawMessage) (any, error) {
	var p struct {
		Content    string `json:"content"`
		Role       string `json:"role"`
		SessionKey string `json:"session_key"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, apperr.New(apperr.Invalid, "inject_message: %v", err)
	}
	parts := strings.Split(p.SessionKey, ":")
	if p.SessionKey == "" || len(parts) != 2 {
		slog.Warn("inject_message: needs the session key of a local conversation", "plugin", plugin, "session_key", p.SessionKey)
		return false, nil
	}
	msg := p.Content
	if p.Role != "" && p.Role != "user" {
		msg = "[" + p.Role + "] " + p.Content
	}
	if _, err := s.st.Sessions.AppendMessage(ctx, parts[1], sessions.NewMessage{Role: "user", Content: msg}); err != nil {
		slog.Warn("inject_message failed", "plugin", plugin, "session", parts[1], "error", err)
		return false, nil
	}
	return true, nil
}

// emit queues an event for its subscribers and returns how many there are.
func (s *PluginServices) emit(plugin string, params json.RawMessage) (any, error) {
	var p struct {
		Event   string          `json:"event"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.Event == "" {
		return nil, apperr.New(apperr.Invalid, "emit needs an event name")
	}
	if !strings.HasPrefix(p.Event, plugin+":") {
		return nil, apperr.New(apperr.Invalid, "plugin %s may only emit events under %s:", plugin, plugin)
	}
	var subs []hooks.Capability
	for _, c := range s.st.Bus.Capabilities(hooks.CapSubscription) {
		// A gateway event hook hears the gateway, not plugins' events.
		if c.Name == p.Event && !strings.HasPrefix(c.Plugin, gatewayhooks.PluginPrefix) {
			subs = append(subs, c)
		}
	}
	if len(subs) == 0 {
		return 0, nil
	}
	s.once.Do(func() { go s.deliver() })
	s.pending.Add(1)
	select {
	case s.events <- emitted{event: p.Event, payload: p.Payload, subs: subs}:
		return len(subs), nil
	default:
		s.pending.Done()
		slog.Warn("inter-plugin event queue full; event dropped", "plugin", plugin, "event", p.Event, "pending", maxPendingEvents)
		return 0, nil
	}
}

func (s *PluginServices) deliver() {
	for ev := range s.events {
		for _, c := range ev.subs {
			if _, err := s.st.Bus.CallCapability(context.Background(), c.Plugin, hooks.CapSubscription, ev.event, "deliver",
				map[string]any{"payload": ev.payload}); err != nil {
				slog.Warn("inter-plugin event not delivered", "event", ev.event, "subscriber", c.Plugin, "error", err)
			}
		}
		s.pending.Done()
	}
}

// Drain waits, bounded by ctx, until the events emitted so far reached
// their subscribers (before the plugins stop with the process).
func (s *PluginServices) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.pending.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("inter-plugin events still pending: %w", ctx.Err())
	}
}
