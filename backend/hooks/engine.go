package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Names of context.engine that choose the built-in summarizer.
const (
	EngineCompressor = "compressor"
	EngineBuiltin    = "builtin"
)

// SelectContextEngine sets context.engine: "" uses the first context engine
// plugins registered; "compressor" (or "builtin") the built-in summarizer
// whatever plugins register; another name that engine, and the built-in
// summarizer while no plugin registered it.
func (b *Bus) SelectContextEngine(name string) {
	b.engineName.Store(strings.TrimSpace(name))
}

// ContextEngine returns the context engine in use (register_context_engine;
// see SelectContextEngine), false for the built-in summarizer.
func (b *Bus) ContextEngine() (Capability, bool) {
	name, _ := b.engineName.Load().(string)
	if name == EngineCompressor || name == EngineBuiltin {
		return Capability{}, false
	}
	caps := b.Capabilities(CapContextEngine)
	for _, c := range caps {
		if name == "" || c.Name == name {
			return c, true
		}
	}
	if name != "" {
		if _, warned := b.engineWarned.LoadOrStore(name, true); !warned {
			b.log.Warn("context engine not found; the built-in summarizer compacts", "context.engine", name)
		}
	}
	return Capability{}, false
}

// EngineCall is one call of a context engine's method, and the conversation
// it belongs to. The plugin's runner gives each session its own copy of the
// engine, started (update_model, on_session_start) before its first call;
// OldSessionID names the session a compaction continued, whose copy the new
// session takes over (on_session_start with boundary_reason "compression").
type EngineCall struct {
	Args          []any          `json:"args"`
	Kwargs        map[string]any `json:"kwargs"`
	SessionID     string         `json:"session_id"`
	OldSessionID  string         `json:"old_session_id,omitempty"`
	Platform      string         `json:"platform,omitempty"`
	SessionKey    string         `json:"session_key,omitempty"`
	Model         string         `json:"model,omitempty"`
	Provider      string         `json:"provider,omitempty"`
	ContextLength int            `json:"context_length,omitempty"`
}

// CallEngine calls method of context engine c and returns what it returned
// (JSON null for None).
func (b *Bus) CallEngine(ctx context.Context, c Capability, method string, call EngineCall) (json.RawMessage, error) {
	call.Args, call.Kwargs = pyArgs(call.Args, call.Kwargs)
	raw, err := b.CallCapability(ctx, c.Plugin, CapContextEngine, c.Name, method, call)
	if err != nil {
		return nil, err
	}
	var out struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("context engine %s: malformed answer to %s: %w", c.Name, method, err)
	}
	if len(out.Value) == 0 {
		out.Value = json.RawMessage("null")
	}
	return out.Value, nil
}

// TellEngine calls a context engine method whose answer does not matter
// (a lifecycle notice: on_session_start, update_from_response,
// on_session_end); a failure is logged, never the caller's.
func (b *Bus) TellEngine(ctx context.Context, c Capability, method string, call EngineCall) {
	if _, err := b.CallEngine(ctx, c, method, call); err != nil {
		b.log.Warn("context engine call failed", "engine", c.Name, "method", method, "error", err)
	}
}
