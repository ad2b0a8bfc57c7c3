package hooks

import (
	"context"
	"encoding/json"
	"fmt"
)

// MemoryProvider returns the registered memory provider named name
// (memory.provider in config.yaml); false when name is "" or "builtin" or
// no plugin registered one of that name.
func (b *Bus) MemoryProvider(name string) (Capability, bool) {
	if name == "" || name == "builtin" {
		return Capability{}, false
	}
	for _, c := range b.Capabilities(CapMemoryProvider) {
		if c.Name == name {
			return c, true
		}
	}
	return Capability{}, false
}

// MemoryCall is one call of a memory provider's method: positional and
// keyword arguments as the provider's Python method takes them, and the
// conversation the call belongs to (the provider is initialized with it
// before its first call in a process).
type MemoryCall struct {
	Args       []any          `json:"args"`
	Kwargs     map[string]any `json:"kwargs"`
	SessionID  string         `json:"session_id"`
	Platform   string         `json:"platform"`
	SessionKey string         `json:"session_key,omitempty"`
	// UserID is the gateway sender (initialize's user_id), "" on local
	// surfaces; AgentContext is "primary" (default), "subagent" (a delegate
	// child's turn) or "cron".
	UserID       string `json:"user_id,omitempty"`
	AgentContext string `json:"agent_context,omitempty"`
	// ParentSessionID is the parent of a subagent's session (initialize's
	// parent_session_id).
	ParentSessionID string `json:"parent_session_id,omitempty"`
}

// MemoryAnswer is a memory provider's answer: Available is false when its
// is_available() said no (Reason says why; nothing was called).
type MemoryAnswer struct {
	Available bool            `json:"available"`
	Reason    string          `json:"reason,omitempty"`
	Value     json.RawMessage `json:"value"`
}

// CallMemory calls method of memory provider c.
func (b *Bus) CallMemory(ctx context.Context, c Capability, method string, call MemoryCall) (MemoryAnswer, error) {
	call.Args, call.Kwargs = pyArgs(call.Args, call.Kwargs)
	raw, err := b.CallCapability(ctx, c.Plugin, CapMemoryProvider, c.Name, method, call)
	if err != nil {
		return MemoryAnswer{}, err
	}
	var a MemoryAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return MemoryAnswer{}, fmt.Errorf("memory provider %s: malformed answer to %s: %w", c.Name, method, err)
	}
	return a, nil
}

// pyArgs gives a Python call's arguments as the runner takes them: [] and
// {}, never null.
func pyArgs(args []any, kwargs map[string]any) ([]any, map[string]any) {
	if args == nil {
		args = []any{}
	}
	if kwargs == nil {
		kwargs = map[string]any{}
	}
	return args, kwargs
}

// Text is the answer as a string ("" when it is not one).
func (a MemoryAnswer) Text() string {
	var s string
	if json.Unmarshal(a.Value, &s) != nil {
		return ""
	}
	return s
}
