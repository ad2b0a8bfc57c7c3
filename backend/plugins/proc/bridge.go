package proc

// The bridge to the hook bus: a plugin's handshake registrations become bus
// hooks and commands, and bus events and requests become wire calls bounded
// by the callback timeout. What the plugin could not take (its process was
// down, restarting, stopped for a restart) is reported to the bus with a
// coded status, and the bus keeps it in the log for the plugin's return:
// proc knows processes and the wire, never the log.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"atrium/backend/hooks"
)

func sameRegistration(a, b InitializeResult) bool {
	ea, _ := json.Marshal(a.Extras)
	eb, _ := json.Marshal(b.Extras)
	return slices.Equal(dedupe(a.Hooks), dedupe(b.Hooks)) && slices.Equal(a.Commands, b.Commands) && string(ea) == string(eb)
}

func dedupe(list []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// register puts the handshake's hooks and commands on the bus (once).
func (p *plugin) register(res InitializeResult) error {
	bus, name := p.h.bus, p.spec.Name
	var handles []hooks.Handle
	var cmds []string
	undo := func() {
		for _, hd := range handles {
			hd.Unregister()
		}
		for _, c := range cmds {
			bus.Commands().Unregister(name, c)
		}
	}
	seen := map[string]bool{}
	var hookNames []string
	for _, hk := range res.Hooks {
		if seen[hk] {
			continue
		}
		seen[hk] = true
		hookNames = append(hookNames, hk)
		kind, _ := hooks.Lookup(hk)
		var hd hooks.Handle
		var err error
		if kind == hooks.Sync {
			hook := hk
			hd, err = bus.RegisterSync(name, hook, func(ctx context.Context, payload json.RawMessage) (any, error) {
				return p.onSync(ctx, hook, payload)
			})
		} else {
			hd, err = bus.RegisterHook(name, hk, p.onEvent)
		}
		if err != nil {
			undo()
			return err
		}
		handles = append(handles, hd)
	}
	for _, c := range res.Commands {
		cname := hooks.NormalizeCommand(c.Name)
		err := bus.Commands().RegisterHint(name, cname, c.Description, c.ArgsHint, hooks.ContextCommand(func(ctx context.Context, args string, cc hooks.CommandContext) (string, error) {
			return p.onCommand(ctx, cname, args, cc)
		}))
		if err != nil {
			undo()
			return fmt.Errorf("plugin %s: %w", name, err)
		}
		cmds = append(cmds, cname)
	}
	capHandles, err := p.registerCapabilities(res.Extras)
	handles = append(handles, capHandles...)
	if err != nil {
		undo()
		return err
	}
	if len(res.Extras.Memory) > 0 {
		// A memory provider hears of every delegate child that ended
		// (on_delegation), through the durable log like any event, so one
		// that ended while the plugin was down is told when it is back.
		// It is listed among the plugin's hooks: what it registered is what
		// commands read to know which plugins an event needs.
		hd, err := bus.RegisterHook(name, hooks.SubagentStop, p.delegationObserver())
		if err != nil {
			undo()
			return err
		}
		handles = append(handles, hd)
		if !seen[hooks.SubagentStop] {
			hookNames = append(hookNames, hooks.SubagentStop)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		// stop withdrew the registrations before these were made.
		undo()
		return fmt.Errorf("plugin %s is stopped", name)
	}
	p.hooks, p.commands, p.handles, p.cmdNames, p.extras = hookNames, res.Commands, handles, cmds, res.Extras
	return nil
}

// unregister withdraws the plugin's hooks and commands from the bus.
func (p *plugin) unregister() {
	p.mu.Lock()
	handles, cmds := p.handles, p.cmdNames
	p.handles, p.cmdNames = nil, nil
	p.mu.Unlock()
	for _, hd := range handles {
		hd.Unregister()
	}
	for _, c := range cmds {
		p.h.bus.Commands().Unregister(p.spec.Name, c)
	}
}

// bound derives the callback's context: Spec.Timeout, and a little less than
// the bus's deadline so this handler's own error (not the bus's generic
// timeout) is what gets recorded.
func (p *plugin) bound(ctx context.Context) (context.Context, context.CancelFunc, time.Duration) {
	p.mu.Lock()
	d := p.spec.Timeout
	p.mu.Unlock()
	if dl, ok := ctx.Deadline(); ok {
		rem := time.Until(dl)
		margin := min(max(rem/5, 10*time.Millisecond), 250*time.Millisecond)
		if d <= 0 || rem-margin < d {
			d = max(rem-margin, time.Millisecond)
		}
	}
	if d <= 0 {
		c, cancel := context.WithCancel(ctx)
		return c, cancel, 0
	}
	c, cancel := context.WithTimeout(ctx, d)
	return c, cancel, d
}

func eventParams(ev hooks.Event) EventParams {
	return EventParams{Hook: ev.Hook, EventID: ev.ID, Seq: ev.Seq, Redelivery: ev.Redelivery, CreatedAt: ev.CreatedAt, Payload: ev.Payload}
}

func doneError(d EventDoneParams) error {
	if d.Error == "" {
		return nil
	}
	if d.Traceback != "" {
		return fmt.Errorf("%s\n%s", d.Error, d.Traceback)
	}
	return errors.New(d.Error)
}

// onEvent is the bus Handler of every observer hook the plugin registered.
// An event the plugin cannot take now goes back to the bus as unavailable
// (it stays in the log for the plugin's next process: restarting, stopped
// for a restart, not running within the bound), or suspended when the
// plugin is in error. An event its process died on is unavailable and
// handed out (the retry is a redelivery), except the second time: a plugin
// that dies twice on one event has it recorded as failed.
func (p *plugin) onEvent(ctx context.Context, ev hooks.Event) error {
	cctx, cancel, limit := p.bound(ctx)
	defer cancel()
	inst, err := p.waitRunning(cctx)
	if err != nil {
		var te terminalError
		switch {
		case errors.As(err, &te) && te.stopped:
			return hooks.Unavailable(err, false)
		case errors.As(err, &te):
			return fmt.Errorf("%w: %v", hooks.ErrSuspended, err)
		}
		return hooks.Unavailable(fmt.Errorf("plugin %s was not running within %s", p.spec.Name, limit), false)
	}
	d, err := inst.sendEvent(cctx, eventParams(ev))
	var unsent notSent
	switch {
	case err == nil:
		return doneError(d)
	case errors.As(err, &unsent):
		return hooks.Unavailable(fmt.Errorf("plugin %s exited before event %s was sent", p.spec.Name, ev.ID), false)
	case errors.Is(err, errDied):
		if p.diedOn(ev.ID) >= 2 {
			return fmt.Errorf("plugin %s exited twice while handling event %s; not retried", p.spec.Name, ev.ID)
		}
		return hooks.Unavailable(fmt.Errorf("plugin %s exited while handling event %s", p.spec.Name, ev.ID), true)
	case errors.Is(err, errCancelled):
		// The plugin answered the cancel: the event failed on its bound,
		// and the plugin (and what else it does) goes on.
		p.h.log.Warn("plugin callback timed out; cancelled", "plugin", p.spec.Name, "hook", ev.Hook, "pid", inst.pid)
		return fmt.Errorf("%w: callback did not return within %s; cancelled (plugin %s goes on)", hooks.ErrTimedOut, limit, p.spec.Name)
	case cctx.Err() != nil:
		p.timedOut(inst, ev.Hook)
		return fmt.Errorf("callback did not return within %s; plugin %s restarted", limit, p.spec.Name)
	default:
		return err
	}
}

// diedOn counts the deaths of the plugin's process while it handled event
// id (only the latest such event is remembered).
func (p *plugin) diedOn(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.crashID != id {
		p.crashID, p.crashes = id, 0
	}
	p.crashes++
	return p.crashes
}

// timedOut kills a child whose callback overran; onExit restarts it at once.
func (p *plugin) timedOut(in *instance, what string) {
	p.h.log.Warn("plugin callback timed out; restarting", "plugin", p.spec.Name, "hook", what, "pid", in.pid)
	in.kill("timeout")
}

// request sends a request to the ready instance, bounded like a callback.
func (p *plugin) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	cctx, cancel, limit := p.bound(ctx)
	defer cancel()
	inst, err := p.waitRunning(cctx)
	if err != nil {
		var te terminalError
		if errors.As(err, &te) {
			return nil, err
		}
		return nil, fmt.Errorf("plugin %s was not running within %s", p.spec.Name, limit)
	}
	res, err := inst.call(cctx, method, params)
	if errors.Is(err, errCancelled) {
		// The plugin answered the cancel: the call is given up, the plugin
		// (and what else it is doing for other conversations) goes on.
		if ctx.Err() != nil {
			p.h.log.Info("the caller stopped waiting for a plugin call; cancelled", "plugin", p.spec.Name,
				"method", method, "cause", context.Cause(ctx))
			return nil, fmt.Errorf("plugin %s: %s cancelled: %w", p.spec.Name, method, context.Cause(ctx))
		}
		p.h.log.Warn("plugin call timed out; cancelled", "plugin", p.spec.Name, "method", method, "limit", limit)
		return nil, fmt.Errorf("plugin %s did not answer %s within %s; cancelled", p.spec.Name, method, limit)
	}
	if err != nil && !errors.Is(err, errDied) && cctx.Err() != nil {
		if ctx.Err() != nil {
			// The caller stopped waiting (a person stopped the turn) and the
			// plugin cannot be told, or did not answer the cancel: only a
			// restart ends the call under way.
			p.h.log.Info("the caller stopped waiting for a plugin call; restarting the plugin to end it", "plugin", p.spec.Name,
				"method", method, "pid", inst.pid, "cause", context.Cause(ctx))
			inst.kill("its caller stopped waiting")
			return nil, fmt.Errorf("plugin %s: %s abandoned: %w", p.spec.Name, method, context.Cause(ctx))
		}
		p.timedOut(inst, method)
		return nil, fmt.Errorf("plugin %s did not answer %s within %s; restarted", p.spec.Name, method, limit)
	}
	return res, err
}

// onSync calls a synchronous hook in the plugin. pre_llm_call answers
// {"context": ...} (or a bare string); every other synchronous hook answers
// {"results": [...]}, the non-null answers of its callbacks in order, which
// the bus gets as hooks.Results. A plugin that has no such method (one
// written for an earlier protocol) answers nothing.
func (p *plugin) onSync(ctx context.Context, hook string, payload json.RawMessage) (any, error) {
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	raw, err := p.request(ctx, hook, PreLLMCallParams{Payload: payload})
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) && rpcErr.Code == CodeMethodNotFound {
		p.h.log.Warn("plugin does not answer a hook it registered; treated as no answer", "plugin", p.spec.Name, "hook", hook)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if hooks.RoleOf(hook) != hooks.RoleContext {
		var out struct {
			Results []any `json:"results"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, fmt.Errorf("plugin %s: malformed %s answer: %v", p.spec.Name, hook, err)
		}
		if len(out.Results) == 0 {
			return nil, nil
		}
		return hooks.Results(out.Results), nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return s, nil
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, nil
	}
	if c, ok := obj["context"].(string); ok && c != "" {
		return map[string]any{"context": c}, nil
	}
	return nil, nil
}

func (p *plugin) onCommand(ctx context.Context, name, args string, cc hooks.CommandContext) (string, error) {
	params := CommandParams{Name: name, Args: args, SessionID: cc.SessionID, SessionKey: cc.SessionKey, Platform: cc.Platform}
	if cc.Source != nil {
		params.Source = cc.Source
	}
	raw, err := p.request(ctx, "command", params)
	if err != nil {
		return "", err
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var out struct {
		Output *string `json:"output"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", fmt.Errorf("plugin %s: malformed command result: %v", p.spec.Name, err)
	}
	if out.Output == nil {
		return "", nil
	}
	return *out.Output, nil
}
