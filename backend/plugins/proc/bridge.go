package proc

// The bridge to the hook bus: a plugin's handshake registrations become bus
// hooks and commands, bus events and requests become wire calls bounded by
// the callback timeout, and events missed while the plugin was down are
// redelivered once it is back.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/hooks"
)

// DownPrefix starts the error recorded for an event a plugin missed because
// its process was down (crashed, restarting) for the whole callback bound.
// Host.catchUp redelivers exactly those events after a restart.
const DownPrefix = "plugin down:"

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
	d := p.spec.Timeout
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
func (p *plugin) onEvent(ctx context.Context, ev hooks.Event) error {
	cctx, cancel, limit := p.bound(ctx)
	defer cancel()
	crashes := 0
	for {
		inst, err := p.waitRunning(cctx)
		if err != nil {
			var te terminalError
			if errors.As(err, &te) {
				return err
			}
			p.addMissed(ev)
			return fmt.Errorf("%s %s was not running within %s; event %s is redelivered after its restart", DownPrefix, p.spec.Name, limit, ev.ID)
		}
		d, err := inst.sendEvent(cctx, eventParams(ev))
		switch {
		case err == nil:
			return doneError(d)
		case errors.Is(err, errDied):
			crashes++
			if crashes >= 2 {
				return fmt.Errorf("plugin %s exited twice while handling event %s; not retried", p.spec.Name, ev.ID)
			}
			ev.Redelivery = true // it may have seen it
		case cctx.Err() != nil:
			p.timedOut(inst, ev.Hook)
			return fmt.Errorf("callback did not return within %s; plugin %s restarted", limit, p.spec.Name)
		default:
			return err
		}
	}
}

// timedOut kills a child whose callback overran; onExit restarts it at once.
func (p *plugin) timedOut(in *instance, what string) {
	p.h.log.Warn("plugin callback timed out; restarting", "plugin", p.spec.Name, "hook", what, "pid", in.pid)
	in.kill("timeout")
}

func (p *plugin) addMissed(ev hooks.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.missed[ev.ID] = ev
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
		return nil, fmt.Errorf("%s %s was not running within %s", DownPrefix, p.spec.Name, limit)
	}
	res, err := inst.call(cctx, method, params)
	if err != nil && !errors.Is(err, errDied) && cctx.Err() != nil {
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

// missedRow is one event a plugin missed while down.
type missedRow struct {
	Seq       int64
	EventID   string
	Hook      string
	Payload   string
	CreatedAt int64
}

// catchUp redelivers, in seq order and flagged as redeliveries with their
// original event_id, the events the plugin missed while it was down: the
// hook_deliveries rows recorded for it as failed/timeout with DownPrefix, and
// those this process noted in memory (whose row may not be written yet). Each
// one delivered is updated to ok. It returns how many it delivered.
func (h *Host) catchUp(name string) (int, error) {
	h.mu.Lock()
	p := h.plugins[name]
	h.mu.Unlock()
	if p == nil {
		return 0, apperr.New(apperr.NotFound, "no plugin %s", name)
	}
	p.mu.Lock()
	inst := p.catching
	if inst == nil {
		inst = p.inst
	}
	mem := p.missed
	p.missed = map[string]hooks.Event{}
	registered := map[string]bool{}
	for _, hk := range p.hooks {
		registered[hk] = true
	}
	p.mu.Unlock()
	if inst == nil {
		for _, ev := range mem {
			p.addMissed(ev)
		}
		return 0, nil
	}
	d := h.bus.DB()
	var rows []missedRow
	err := d.Read.Raw(`SELECT e.seq, e.event_id, e.hook, e.payload, e.created_at
		FROM hook_deliveries d JOIN hook_events e ON e.seq = d.seq
		WHERE d.subscriber = ? AND d.status IN ('failed', 'timeout') AND d.error LIKE ?
		ORDER BY d.seq`, name, DownPrefix+"%").Scan(&rows).Error
	if err != nil {
		for _, ev := range mem {
			p.addMissed(ev)
		}
		return 0, fmt.Errorf("read missed events of %s: %w", name, err)
	}
	byID := map[string]hooks.Event{}
	for _, r := range rows {
		byID[r.EventID] = hooks.Event{ID: r.EventID, Seq: r.Seq, Hook: r.Hook, Payload: json.RawMessage(r.Payload),
			CreatedAt: time.UnixMilli(r.CreatedAt).UTC()}
	}
	for id, ev := range mem {
		byID[id] = ev
	}
	evs := make([]hooks.Event, 0, len(byID))
	for _, ev := range byID {
		evs = append(evs, ev)
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].Seq < evs[j].Seq })
	limit := p.spec.Timeout
	if limit <= 0 {
		limit = h.bus.Timeout()
	}
	n := 0
	for i, ev := range evs {
		if !registered[ev.Hook] {
			h.markDelivery(name, ev.Seq, "ok", "", 0)
			continue
		}
		ev.Redelivery = true
		ctx, cancel := context.Background(), context.CancelFunc(func() {})
		if limit > 0 {
			ctx, cancel = context.WithTimeout(ctx, limit)
		}
		start := time.Now()
		dn, err := inst.sendEvent(ctx, eventParams(ev))
		cancel()
		switch {
		case err == nil:
			status, msg := "ok", ""
			if e := doneError(dn); e != nil {
				status, msg = "failed", e.Error()
			}
			h.markDelivery(name, ev.Seq, status, msg, time.Since(start))
			n++
		case errors.Is(err, errDied):
			for _, rest := range evs[i:] {
				p.addMissed(rest)
			}
			return n, fmt.Errorf("plugin %s exited during catch-up", name)
		default: // overran its bound: recorded, not retried; restart it
			h.markDelivery(name, ev.Seq, "timeout", fmt.Sprintf("redelivery did not finish within %s", limit), time.Since(start))
			for _, rest := range evs[i+1:] {
				p.addMissed(rest)
			}
			inst.kill("timeout")
			return n, fmt.Errorf("plugin %s timed out during catch-up", name)
		}
	}
	return n, nil
}

// markDelivery rewrites the delivery row of a redelivered event. The bus
// records outcomes asynchronously, so a row not written yet is retried for a
// few seconds in the background.
func (h *Host) markDelivery(name string, seq int64, status, msg string, dur time.Duration) {
	if h.updateDelivery(name, seq, status, msg, dur) {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for i := 0; i < 100; i++ {
			select {
			case <-time.After(50 * time.Millisecond):
			case <-h.done:
				return
			}
			if h.updateDelivery(name, seq, status, msg, dur) {
				return
			}
		}
	}()
}

func (h *Host) updateDelivery(name string, seq int64, status, msg string, dur time.Duration) bool {
	d := h.bus.DB()
	var affected int64
	err := d.InTx(context.Background(), func(tx *db.Tx) error {
		r := tx.G.Exec(`UPDATE hook_deliveries SET status = ?, error = ?, redelivery = 1, delivered_at = ?, duration_us = ?
			WHERE seq = ? AND subscriber = ?`, status, msg, db.Ms(tx.Now), dur.Microseconds(), seq, name)
		affected = r.RowsAffected
		return r.Error
	})
	if err != nil {
		h.log.Warn("record plugin redelivery", "plugin", name, "seq", seq, "error", err)
		return true
	}
	return affected > 0
}
