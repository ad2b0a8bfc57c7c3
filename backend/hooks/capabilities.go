package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"atrium/backend/apperr"
)

// Kinds of capability a plugin may provide beyond hooks and slash commands.
// The set grows with the plugin API; a kind is a stable string.
const (
	CapTool                = "tool"                  // a tool offered to the model
	CapMemoryProvider      = "memory_provider"       // an external memory provider
	CapCLICommand          = "cli_command"           // `atrium <name> ...`
	CapContextEngine       = "context_engine"        // replaces the summarizer
	CapMiddleware          = "middleware"            // e.g. llm_request
	CapSystemPromptSection = "system_prompt_section" // text added to the system prompt
	CapSubscription        = "subscription"          // ctx.subscribe: an inter-plugin event it listens to
	CapSkill               = "skill"                 // a skill it ships: skill_view("<plugin>:<name>")
)

// Capability describes one thing a plugin provides: what it is (Kind), its
// name within that kind, and a JSON description of it (a tool's schema, a
// section's position...). Everything about it is plain data, and it is
// called with JSON and answers JSON, so one registry serves in-process
// plugins, process plugins and a command that forwards its calls to the
// profile's plugin host.
type Capability struct {
	Plugin string          `json:"plugin"`
	Kind   string          `json:"kind"`
	Name   string          `json:"name"`
	Spec   json.RawMessage `json:"spec,omitempty"`
}

// CapabilityHandler answers a call of one of a capability's methods ("call"
// for a tool, "prefetch" for a memory provider, ...).
type CapabilityHandler func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

type capReg struct {
	id  uint64
	cap Capability
	fn  CapabilityHandler
}

// RegisterCapability adds a capability on behalf of c.Plugin. A plugin
// registers a given kind and name once; two plugins may register the same
// name (which one wins is the caller's rule, e.g. tool overrides).
func (b *Bus) RegisterCapability(c Capability, fn CapabilityHandler) (Handle, error) {
	c.Plugin, c.Kind, c.Name = strings.TrimSpace(c.Plugin), strings.TrimSpace(c.Kind), strings.TrimSpace(c.Name)
	if c.Plugin == "" || c.Kind == "" || c.Name == "" || fn == nil {
		return Handle{}, apperr.New(apperr.Invalid, "register capability: plugin, kind, name and handler are required")
	}
	if len(c.Spec) > 0 && !json.Valid(c.Spec) {
		return Handle{}, apperr.New(apperr.Invalid, "plugin %s: %s %q: its description is not valid JSON", c.Plugin, c.Kind, c.Name)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.caps {
		if r.cap.Plugin == c.Plugin && r.cap.Kind == c.Kind && r.cap.Name == c.Name {
			return Handle{}, apperr.New(apperr.Conflict, "plugin %s already registered %s %q", c.Plugin, c.Kind, c.Name)
		}
	}
	b.nextReg++
	b.caps = append(b.caps, &capReg{id: b.nextReg, cap: c, fn: fn})
	return Handle{b: b, id: b.nextReg}, nil
}

// RegisterCapability adds a capability for this plugin; spec is encoded as
// JSON (nil for none).
func (c *Context) RegisterCapability(kind, name string, spec any, fn CapabilityHandler) error {
	var raw json.RawMessage
	if spec != nil {
		b, err := json.Marshal(spec)
		if err != nil {
			return apperr.Wrap(apperr.Invalid, err, "plugin %s: %s %q: encode its description", c.plugin, kind, name)
		}
		raw = b
	}
	h, err := c.bus.RegisterCapability(Capability{Plugin: c.plugin, Kind: kind, Name: name, Spec: raw}, fn)
	if err != nil {
		return err
	}
	c.handles = append(c.handles, h)
	return nil
}

// Capabilities lists the registered capabilities of kind ("" for every
// kind), in plugin load order (see SetPluginOrder), then registration
// order: those registered here and, for a client, those of the profile's
// plugin host (asked within the callback timeout; a host that cannot be
// reached adds none, and is logged).
func (b *Bus) Capabilities(kind string) []Capability {
	b.mu.Lock()
	regs := slices.Clone(b.caps)
	remote := b.remote
	b.mu.Unlock()
	slices.SortStableFunc(regs, func(x, y *capReg) int { return b.comparePlugins(x.cap.Plugin, y.cap.Plugin) })
	var out []Capability
	for _, r := range regs {
		if kind == "" || r.cap.Kind == kind {
			out = append(out, r.cap)
		}
	}
	if remote != nil { // the host's, in its load order, after
		ctx, cancel := b.remoteContext()
		defer cancel()
		more, err := remote.Capabilities(ctx, kind)
		if err != nil {
			b.log.Warn("list the plugin host's capabilities", "error", err)
		}
		out = append(out, more...)
	}
	return out
}

// remoteContext bounds a question to the plugin host that has no caller's
// ctx (what is registered there): the callback timeout, but never less than
// 10 s, so a busy host is not taken for one without plugins.
func (b *Bus) remoteContext() (context.Context, context.CancelFunc) {
	d := b.Timeout()
	if d <= 0 {
		d = DefaultTimeout
	}
	return context.WithTimeout(context.Background(), max(d, 10*time.Second))
}

// CallCapability calls method of plugin's capability kind/name with params
// (encoded as JSON), bounded by the callback timeout; a panic is an error.
// An unknown capability is not_found.
func (b *Bus) CallCapability(ctx context.Context, plugin, kind, name, method string, params any) (json.RawMessage, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalid, err, "%s %q: encode the parameters of %s", kind, name, method)
	}
	b.mu.Lock()
	var fn CapabilityHandler
	for _, r := range b.caps {
		if r.cap.Plugin == plugin && r.cap.Kind == kind && r.cap.Name == name {
			fn = r.fn
			break
		}
	}
	remote := b.remote
	b.mu.Unlock()
	if fn == nil && remote != nil {
		return remote.CallCapability(ctx, plugin, kind, name, method, raw)
	}
	if fn == nil {
		return nil, apperr.New(apperr.NotFound, "plugin %s has no %s %q", plugin, kind, name)
	}
	v, err := b.callOne(ctx, &syncReg{plugin: plugin, hook: kind + ":" + name, fn: func(c context.Context, p json.RawMessage) (any, error) {
		return fn(c, method, p)
	}}, raw)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %s %q: %s: %w", plugin, kind, name, method, err)
	}
	out, _ := v.(json.RawMessage)
	return out, nil
}

func (b *Bus) unregisterCapLocked(id uint64) bool {
	for i, r := range b.caps {
		if r.id == id {
			b.caps = append(b.caps[:i:i], b.caps[i+1:]...)
			return true
		}
	}
	return false
}
