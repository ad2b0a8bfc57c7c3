package proc

// What a plugin registers beyond hooks and commands (tools, memory
// providers, CLI commands, middleware, system prompt sections, context
// engines, event subscriptions) becomes capabilities on the hook bus, called
// with JSON through the `capability` request; and what a plugin asks of its
// host (ctx.llm, ctx.dispatch_tool, ...) is answered by Services.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
)

// sanitize keeps in res.Hooks only the hooks Atrium fires: another name is
// a warning, moved to UnknownHooks (a hook of the familiar API Atrium has no
// moment for to Inert), never a refusal of the whole plugin.
func sanitize(res *InitializeResult, lg *slog.Logger) {
	var keep []string
	for _, h := range res.Hooks {
		switch {
		case hooks.Known(h):
			keep = append(keep, h)
		case hooks.Foreign(h):
			if !slices.ContainsFunc(res.Inert, func(i InertInfo) bool { return i.Kind == "hook" && i.Name == h }) {
				res.Inert = append(res.Inert, InertInfo{Kind: "hook", Name: h, Reason: "Atrium has no such moment, so it is never called"})
			}
		default:
			if !slices.Contains(res.UnknownHooks, h) {
				res.UnknownHooks = append(res.UnknownHooks, h)
			}
			if lg != nil {
				lg.Warn("plugin registered an unknown hook; kept out, the plugin runs", "hook", h)
			}
		}
	}
	res.Hooks = keep
}

// registerCapabilities puts a handshake's extras on the bus as
// capabilities of this plugin. Each is described by its handshake entry and
// answered by the plugin through the `capability` request.
func (p *plugin) registerCapabilities(x Extras) ([]hooks.Handle, error) {
	bus, name := p.h.bus, p.spec.Name
	var handles []hooks.Handle
	add := func(kind, cname string, spec any) error {
		raw, err := json.Marshal(spec)
		if err != nil {
			return err
		}
		k, n := kind, cname
		hd, err := bus.RegisterCapability(hooks.Capability{Plugin: name, Kind: kind, Name: cname, Spec: raw},
			func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
				return p.onCapability(ctx, k, n, method, params)
			})
		if err != nil {
			return fmt.Errorf("plugin %s: %w", name, err)
		}
		handles = append(handles, hd)
		return nil
	}
	var errs []error
	for _, t := range x.Tools {
		errs = append(errs, add(hooks.CapTool, t.Name, t))
	}
	for _, c := range x.CLICommands {
		errs = append(errs, add(hooks.CapCLICommand, c.Name, c))
	}
	for _, m := range dedupe(x.Middleware) {
		errs = append(errs, add(hooks.CapMiddleware, m, map[string]string{"kind": m}))
	}
	for _, s := range x.Sections {
		errs = append(errs, add(hooks.CapSystemPromptSection, s.ID, s))
	}
	for _, m := range x.Memory {
		errs = append(errs, add(hooks.CapMemoryProvider, m.Name, m))
	}
	for _, e := range x.Engines {
		errs = append(errs, add(hooks.CapContextEngine, e.Name, e))
	}
	for _, ev := range dedupe(x.Subscriptions) {
		errs = append(errs, add(hooks.CapSubscription, ev, map[string]string{"event": ev}))
	}
	for _, sk := range x.Skills {
		errs = append(errs, add(hooks.CapSkill, sk.Name, sk))
	}
	for _, err := range errs {
		if err != nil {
			for _, hd := range handles {
				hd.Unregister()
			}
			return nil, err
		}
	}
	return handles, nil
}

// onCapability calls method of one of the plugin's capabilities.
func (p *plugin) onCapability(ctx context.Context, kind, name, method string, params json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	return p.request(ctx, "capability", CapabilityParams{Kind: kind, Name: name, Method: method, Params: params})
}

// Services answers what a plugin asks of its host: "llm.complete",
// "dispatch_tool", "inject_message", "emit", "set_config", "has_plugin".
// It is defined here and implemented by whoever wires the host (package
// plugins), so proc imports nothing above it. The result is sent back as
// JSON; an error as a JSON-RPC error the plugin sees as an exception.
type Services interface {
	Serve(ctx context.Context, plugin, method string, params json.RawMessage) (any, error)
}

// SetServices sets what answers the plugins' requests (nil refuses them).
func (h *Host) SetServices(s Services) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.services = s
}

// serve answers one request of the plugin's on its own goroutine: it may
// take a while (a model call) and may call back into the plugin meanwhile.
// It ends with the instance.
// serveSafely answers one request of the plugin's; a fault in Atrium
// while answering it is the plugin's error reply and a logged error with
// its stack, never the end of the process (a plugin's request is input
// nobody here wrote).
func (in *instance) serveSafely(ctx context.Context, svc Services, m message) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			in.p.h.log.Error("a plugin's request made Atrium fail; it was refused", "plugin", in.p.spec.Name, "method", m.Method,
				"fault", fmt.Sprint(r), "stack", string(debug.Stack()))
			v, err = nil, fmt.Errorf("Atrium failed answering %s (a fault of Atrium's, logged): %v", m.Method, r)
		}
	}()
	return svc.Serve(ctx, in.p.spec.Name, m.Method, m.Params)
}

func (in *instance) serve(m message) {
	h := in.p.h
	h.mu.Lock()
	svc := h.services
	h.mu.Unlock()
	reply := message{ID: m.ID}
	if svc == nil {
		reply.Error = &RPCError{Code: CodeMethodNotFound, Message: "this Atrium process answers no plugin requests (" + m.Method + ")"}
		_ = in.write(reply)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-in.dead:
			cancel()
		case <-ctx.Done():
		}
	}()
	v, err := in.serveSafely(ctx, svc, m)
	if err != nil {
		code := CodePluginError
		switch apperr.CodeOf(err) {
		case apperr.NotFound:
			code = CodeMethodNotFound
		case apperr.Invalid:
			code = CodeInvalidParams
		}
		reply.Error = &RPCError{Code: code, Message: err.Error()}
	} else {
		raw, merr := json.Marshal(v)
		if merr != nil {
			reply.Error = &RPCError{Code: CodeInternal, Message: merr.Error()}
		} else {
			reply.Result = raw
		}
	}
	_ = in.write(reply)
}

// delegationObserver tells the plugin's memory provider, when it is the one
// in use (memory.provider names one of this plugin's), that a delegate child
// ended: on_delegation(task, result, child_session_id=...), as the familiar
// API calls it on the parent's provider, the provider first initialized for
// the parent session. A provider that raises is logged, as the familiar API
// does; the event is not delivered again for it.
func (p *plugin) delegationObserver() hooks.Handler {
	return func(ctx context.Context, ev hooks.Event) error {
		c, ok := p.h.bus.MemoryProvider(p.h.memoryProvider())
		if !ok || c.Plugin != p.spec.Name {
			return nil
		}
		var pl hooks.SubagentStopPayload
		if err := json.Unmarshal(ev.Payload, &pl); err != nil {
			return fmt.Errorf("subagent_stop payload: %w", err)
		}
		result := ""
		if pl.ChildSummary != nil {
			result = *pl.ChildSummary
		}
		_, err := p.h.bus.CallMemory(ctx, c, "on_delegation", hooks.MemoryCall{Args: []any{pl.ChildGoal, result},
			Kwargs: map[string]any{"child_session_id": pl.ChildSessionID}, SessionID: pl.ParentSessionID})
		if err != nil {
			p.h.log.Warn("memory provider on_delegation failed", "plugin", p.spec.Name, "provider", c.Name,
				"child_session_id", pl.ChildSessionID, "error", err)
		}
		return nil
	}
}
