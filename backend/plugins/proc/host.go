package proc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/hooks"
)

// Plugin states reported by Info.
const (
	StateRunning    = "running"
	StateStarting   = "starting"   // launched; its handshake is under way (see Launch)
	StateRestarting = "restarting" // down, a restart is scheduled
	StateStopped    = "stopped"
	StateError      = "error" // cut off or refused; not restarted
)

// DownPrefix starts the error recorded for an event a plugin missed because
// its process was down (crashed, restarting) for the whole callback bound.
// Host.catchUp redelivers exactly those events after a restart.
const DownPrefix = "plugin down:"

// Info describes one hosted plugin.
type Info struct {
	Name     string        `json:"name"`
	State    string        `json:"state"`
	Err      string        `json:"error,omitempty"`
	Hooks    []string      `json:"hooks"`
	Commands []CommandInfo `json:"commands"`
	PID      int           `json:"pid,omitempty"`
	Restarts int           `json:"restarts"`
}

// Host runs out-of-process plugins, one long-lived child each, bridged onto
// the hook bus. Tune the exported fields before the first Add.
type Host struct {
	bus *hooks.Bus
	log *slog.Logger

	// Grace is how long a child has to exit after shutdown before it is killed.
	Grace time.Duration
	// HandshakeTimeout bounds initialize when Spec.Timeout is 0.
	HandshakeTimeout time.Duration
	// BackoffMin and BackoffMax bound the restart delay after a crash (doubling).
	BackoffMin, BackoffMax time.Duration
	// MaxLine is the longest stdout line accepted (bytes); MaxRate the most
	// messages per second. Beyond either the plugin is cut off.
	MaxLine int
	MaxRate int

	mu        sync.Mutex
	plugins   map[string]*plugin
	order     []string
	done      chan struct{}
	closed    bool
	wg        sync.WaitGroup
	observers []func(Info)
	notifyMu  sync.Mutex    // serializes observer calls, so the last call carries the latest state
	gate      chan struct{} // while not nil, launched children wait for it to close (Hold)
}

// Hold makes Launch register plugins at once but start their children only
// at Release, so a window can paint before interpreters compete for the CPU.
// Events for a held plugin wait for it, bounded by the callback timeout.
func (h *Host) Hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gate == nil {
		h.gate = make(chan struct{})
	}
}

// Release starts the children Hold kept back (and every later launch at once).
func (h *Host) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gate != nil {
		close(h.gate)
		h.gate = nil
	}
}

// OnState adds an observer called after every state change of a hosted
// plugin (running, restarting, error, stopped, and a new error text while
// restarting) with the plugin's Info at the time of the call. Calls are
// serialized and made outside the host's locks; fn must not block for long.
func (h *Host) OnState(fn func(Info)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observers = append(h.observers, fn)
}

// changed tells the observers about p's current state.
func (p *plugin) changed() {
	h := p.h
	h.mu.Lock()
	obs := append([]func(Info){}, h.observers...)
	h.mu.Unlock()
	if len(obs) == 0 {
		return
	}
	h.notifyMu.Lock()
	defer h.notifyMu.Unlock()
	in := p.info()
	for _, fn := range obs {
		fn(in)
	}
}

// NewHost makes a host delivering bus events to its plugins.
func NewHost(bus *hooks.Bus, logger *slog.Logger) *Host {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return &Host{bus: bus, log: logger, Grace: 2 * time.Second, HandshakeTimeout: 10 * time.Second,
		BackoffMin: 100 * time.Millisecond, BackoffMax: 5 * time.Second, MaxLine: 1 << 20, MaxRate: 2000,
		plugins: map[string]*plugin{}, done: make(chan struct{})}
}

// plugin is the host's record of one plugin across its restarts.
type plugin struct {
	h    *Host
	spec Spec

	mu        sync.Mutex
	inst      *instance     // the running, ready instance; nil while down
	catching  *instance     // the instance catchUp delivers to (before it is ready)
	ready     chan struct{} // closed while inst != nil or the state is final
	readyOpen bool
	state     string
	err       string
	hooks     []string
	commands  []CommandInfo
	handles   []hooks.Handle
	cmdNames  []string
	stopping  bool
	quit      chan struct{} // closed by stop: ends a pending restart at once
	restarts  int
	backoff   time.Duration
	missed    map[string]hooks.Event // by event_id: missed while down, for catchUp
	lastPID   int
}

// terminalError is returned when the plugin will not come back by itself.
type terminalError struct{ msg string }

func (e terminalError) Error() string { return e.msg }

// Add starts the plugin, performs its handshake and registers on the bus
// exactly the hooks and commands it declared there.
func (h *Host) Add(spec Spec) error {
	_, err := h.Start(context.Background(), spec)
	return err
}

// Start is Add that also reports the plugin's state. ctx bounds the handshake.
func (h *Host) Start(ctx context.Context, spec Spec) (Info, error) {
	p, err := h.newPlugin(spec, StateRestarting)
	if err != nil {
		return Info{Name: spec.Name, State: StateError}, err
	}
	inst, res, err := p.startOnce(ctx)
	if err != nil {
		p.fail(err.Error())
		return p.info(), err
	}
	if err := p.register(res); err != nil {
		inst.kill("refused")
		<-inst.dead
		p.fail(err.Error())
		return p.info(), err
	}
	p.openOrRestart(inst)
	return p.info(), nil
}

// Launch starts a plugin without waiting for it. It is registered on the bus
// at once with prior, what it registered at its last handshake, so events and
// requests that arrive while the child starts wait for it (bounded by the
// callback timeout, as during a restart) instead of passing it by; then the
// child starts and handshakes in the background, and the registrations are
// corrected to what it declares now. The plugin is in state starting until
// then. A prior that cannot be registered (a command taken meanwhile, say) is
// an error, and nothing is started: use Start.
func (h *Host) Launch(spec Spec, prior InitializeResult) (Info, error) {
	if err := validate(InitializeResult{ProtocolVersion: ProtocolVersion, Hooks: prior.Hooks, Commands: prior.Commands}); err != nil {
		return Info{Name: spec.Name, State: StateError}, apperr.Wrap(apperr.Invalid, err, "plugin %s: last handshake", spec.Name)
	}
	p, err := h.newPlugin(spec, StateStarting)
	if err != nil {
		return Info{Name: spec.Name, State: StateError}, err
	}
	if err := p.register(prior); err != nil {
		h.forget(p)
		return Info{Name: spec.Name, State: StateError}, err
	}
	h.mu.Lock()
	gate, closed := h.gate, h.closed
	if !closed {
		h.wg.Add(1) // under the lock: Stop's Wait never races this Add
	}
	h.mu.Unlock()
	if closed {
		p.unregister()
		h.forget(p)
		return Info{Name: spec.Name, State: StateStopped}, apperr.New(apperr.Internal, "plugin host is stopped")
	}
	go func() {
		defer h.wg.Done()
		if gate != nil {
			select {
			case <-gate:
			case <-p.quit:
				return // stopped before it was released
			}
		}
		inst, res, err := p.startOnce(context.Background())
		if err != nil {
			// As with Start, a plugin that never handshook holds no
			// registration; what waited for it fails with its error.
			p.unregister()
			p.fail(err.Error())
			return
		}
		if !sameRegistration(prior, res) {
			p.unregister()
			if err := p.register(res); err != nil {
				inst.kill("refused")
				<-inst.dead
				p.fail(err.Error())
				return
			}
		}
		p.openOrRestart(inst)
	}()
	p.changed()
	return p.info(), nil
}

// Await waits, bounded by ctx, until a launched plugin is past its
// handshake (running, in error, stopped or restarting), and reports it.
func (h *Host) Await(ctx context.Context, name string) (Info, bool) {
	h.mu.Lock()
	p := h.plugins[name]
	h.mu.Unlock()
	if p == nil {
		return Info{}, false
	}
	for {
		p.mu.Lock()
		state, ch := p.state, p.ready
		p.mu.Unlock()
		if state != StateStarting {
			return p.info(), true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return p.info(), true
		}
	}
}

// newPlugin records a new plugin in state.
func (h *Host) newPlugin(spec Spec, state string) (*plugin, error) {
	spec.Name = strings.TrimSpace(spec.Name)
	if spec.Name == "" || len(spec.Argv) == 0 {
		return nil, apperr.New(apperr.Invalid, "plugin spec needs a name and a command")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, apperr.New(apperr.Internal, "plugin host is stopped")
	}
	if _, dup := h.plugins[spec.Name]; dup {
		return nil, apperr.New(apperr.Conflict, "plugin %s is already hosted", spec.Name)
	}
	p := &plugin{h: h, spec: spec, ready: make(chan struct{}), readyOpen: true, state: state,
		missed: map[string]hooks.Event{}, backoff: h.BackoffMin, quit: make(chan struct{})}
	h.plugins[spec.Name] = p
	h.order = append(h.order, spec.Name)
	return p, nil
}

// forget drops p from the host (it never ran).
func (h *Host) forget(p *plugin) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.plugins[p.spec.Name] == p {
		delete(h.plugins, p.spec.Name)
		h.order = slices.DeleteFunc(h.order, func(n string) bool { return n == p.spec.Name })
	}
}

// openOrRestart opens a handshaken instance to traffic, or schedules a restart if
// it died meanwhile.
func (p *plugin) openOrRestart(inst *instance) {
	if p.becomeReady(inst) {
		return
	}
	p.mu.Lock()
	restart := !p.stopping
	if restart {
		p.state = StateRestarting
		p.closeLocked()
		p.h.wg.Add(1)
		go p.restartLoop(p.backoff)
	}
	p.mu.Unlock()
	if restart {
		p.changed()
	}
}

func sameRegistration(a, b InitializeResult) bool {
	return slices.Equal(dedupe(a.Hooks), dedupe(b.Hooks)) && slices.Equal(a.Commands, b.Commands)
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

func (h *Host) handshakeTimeout(spec Spec) time.Duration {
	d := spec.Timeout
	if d <= 0 {
		d = h.HandshakeTimeout
	}
	if d < 2*time.Second {
		d = 2 * time.Second // interpreters need a moment to start
	}
	return d
}

// startOnce spawns a child and performs the handshake.
func (p *plugin) startOnce(ctx context.Context) (*instance, InitializeResult, error) {
	var res InitializeResult
	inst, err := p.spawn()
	if err != nil {
		return nil, res, err
	}
	p.mu.Lock()
	p.lastPID = inst.pid
	p.mu.Unlock()
	hctx, cancel := context.WithTimeout(ctx, p.h.handshakeTimeout(p.spec))
	defer cancel()
	settings := p.spec.Settings
	if settings == nil {
		settings = map[string]any{}
	}
	raw, err := inst.call(hctx, "initialize", InitializeParams{ProtocolVersion: ProtocolVersion, Name: p.spec.Name,
		Settings: settings, WorkDir: p.spec.WorkDir, AtriumVersion: AtriumVersion})
	if err == nil {
		err = json.Unmarshal(raw, &res)
		if err == nil {
			err = validate(res)
		}
		if err != nil {
			err = terminalError{fmt.Sprintf("plugin %s: bad handshake: %v", p.spec.Name, err)}
		}
	} else if hctx.Err() != nil {
		err = fmt.Errorf("plugin %s: no handshake within %s", p.spec.Name, p.h.handshakeTimeout(p.spec))
	} else {
		err = fmt.Errorf("plugin %s: handshake: %w", p.spec.Name, err)
	}
	if err != nil {
		inst.kill("refused")
		<-inst.dead
		return nil, res, err
	}
	return inst, res, nil
}

func validate(res InitializeResult) error {
	if res.ProtocolVersion != ProtocolVersion {
		return fmt.Errorf("protocol_version %d, the host speaks %d", res.ProtocolVersion, ProtocolVersion)
	}
	for _, hk := range res.Hooks {
		if _, err := hooks.Lookup(hk); err != nil {
			return err
		}
	}
	for _, c := range res.Commands {
		if hooks.NormalizeCommand(c.Name) == "" {
			return errors.New("a command without a name")
		}
	}
	return nil
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
		err := bus.Commands().Register(name, cname, c.Description, hooks.ContextCommand(func(ctx context.Context, args string, cc hooks.CommandContext) (string, error) {
			return p.onCommand(ctx, cname, args, cc)
		}))
		if err != nil {
			undo()
			return fmt.Errorf("plugin %s: %w", name, err)
		}
		cmds = append(cmds, cname)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		// stop withdrew the registrations before these were made.
		undo()
		return fmt.Errorf("plugin %s is stopped", name)
	}
	p.hooks, p.commands, p.handles, p.cmdNames = hookNames, res.Commands, handles, cmds
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

// becomeReady catches up on missed events, then opens the plugin to live
// traffic. If the instance died meanwhile, onExit or the caller restarts it.
func (p *plugin) becomeReady(inst *instance) bool {
	p.mu.Lock()
	p.catching = inst
	p.mu.Unlock()
	if _, err := p.h.catchUp(p.spec.Name); err != nil {
		p.h.log.Warn("plugin catch-up", "plugin", p.spec.Name, "error", err)
	}
	p.mu.Lock()
	p.catching = nil
	if p.stopping || inst.isDead() {
		if !inst.isDead() {
			go inst.kill("shutdown")
		}
		p.mu.Unlock()
		return false
	}
	p.inst = inst
	p.state, p.err = StateRunning, ""
	p.openLocked()
	p.mu.Unlock()
	p.changed()
	return true
}

func (p *plugin) openLocked() {
	if p.readyOpen {
		close(p.ready)
		p.readyOpen = false
	}
}

func (p *plugin) closeLocked() {
	if !p.readyOpen {
		p.ready = make(chan struct{})
		p.readyOpen = true
	}
}

// fail puts the plugin in the error state: it is not restarted.
func (p *plugin) fail(msg string) {
	p.mu.Lock()
	if p.state == StateStopped {
		p.mu.Unlock()
		return
	}
	p.state, p.err = StateError, msg
	p.inst = nil
	p.openLocked()
	p.mu.Unlock()
	p.h.log.Error("plugin in error state", "plugin", p.spec.Name, "error", msg)
	p.changed()
}

// cutOff kills a misbehaving child and puts the plugin in error.
func (p *plugin) cutOff(in *instance, cause string, err error) {
	p.fail(fmt.Sprintf("plugin %s cut off: %v", p.spec.Name, err))
	in.kill(cause)
}

// onExit runs once a child has been reaped.
func (p *plugin) onExit(in *instance) {
	if p.restartAfterExit(in) {
		p.changed()
	}
}

// restartAfterExit schedules the restart of a ready instance that exited;
// false when nothing changed (it was never ready, or it is being stopped).
func (p *plugin) restartAfterExit(in *instance) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inst != in {
		return false // never became ready, or already replaced: its starter handles it
	}
	p.inst = nil
	if p.stopping || p.state == StateError || p.state == StateStopped {
		return false
	}
	cause := in.killCause()
	delay := time.Duration(0)
	if cause == "" { // it crashed: back off
		if time.Since(in.started) > 30*time.Second {
			p.backoff = p.h.BackoffMin
		}
		delay = p.backoff
		p.backoff = min(p.backoff*2, p.h.BackoffMax)
		p.err = fmt.Sprintf("exited: %v", in.exitErr)
		p.h.log.Warn("plugin exited; restarting", "plugin", p.spec.Name, "pid", in.pid, "error", in.exitErr, "delay", delay)
	} else {
		p.err = "restarted after " + cause
	}
	p.state = StateRestarting
	p.closeLocked()
	p.h.wg.Add(1)
	go p.restartLoop(delay)
	return true
}

func (p *plugin) restartLoop(delay time.Duration) {
	defer p.h.wg.Done()
	for {
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-p.h.done:
				t.Stop()
				return
			case <-p.quit:
				t.Stop()
				return
			}
		}
		p.mu.Lock()
		stop := p.stopping
		p.mu.Unlock()
		if stop {
			return
		}
		inst, _, err := p.startOnce(context.Background())
		if err != nil {
			var te terminalError
			if errors.As(err, &te) {
				p.fail(err.Error())
				return
			}
			p.mu.Lock()
			p.err = err.Error()
			delay = p.backoff
			p.backoff = min(p.backoff*2, p.h.BackoffMax)
			p.mu.Unlock()
			p.h.log.Warn("plugin restart failed", "plugin", p.spec.Name, "error", err, "retry_in", delay)
			p.changed()
			continue
		}
		p.mu.Lock()
		p.restarts++
		p.mu.Unlock()
		if p.becomeReady(inst) {
			return
		}
		p.mu.Lock()
		stop = p.stopping
		delay = p.backoff
		p.backoff = min(p.backoff*2, p.h.BackoffMax)
		p.mu.Unlock()
		if stop {
			return
		}
	}
}

// waitRunning returns the ready instance, waiting (bounded by ctx) while the
// plugin restarts.
func (p *plugin) waitRunning(ctx context.Context) (*instance, error) {
	for {
		p.mu.Lock()
		inst, state, msg, ch := p.inst, p.state, p.err, p.ready
		stopping := p.stopping
		p.mu.Unlock()
		switch {
		case inst != nil && !inst.isDead():
			return inst, nil
		case stopping || state == StateStopped:
			return nil, terminalError{fmt.Sprintf("plugin %s is stopped", p.spec.Name)}
		case state == StateError:
			return nil, terminalError{fmt.Sprintf("plugin %s is in error: %s", p.spec.Name, msg)}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond): // inst died but onExit has not run yet
		}
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

func (p *plugin) onSync(ctx context.Context, hook string, payload json.RawMessage) (any, error) {
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	raw, err := p.request(ctx, hook, PreLLMCallParams{Payload: payload})
	if err != nil {
		return nil, err
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

func (p *plugin) info() Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := Info{Name: p.spec.Name, State: p.state, Err: p.err, Hooks: append([]string{}, p.hooks...),
		Commands: append([]CommandInfo{}, p.commands...), Restarts: p.restarts}
	if p.inst != nil {
		in.PID = p.inst.pid
	}
	return in
}

// List reports every hosted plugin, in the order they were added.
func (h *Host) List() []Info {
	h.mu.Lock()
	ps := make([]*plugin, 0, len(h.order))
	for _, n := range h.order {
		ps = append(ps, h.plugins[n])
	}
	h.mu.Unlock()
	out := make([]Info, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.info())
	}
	return out
}

// Info reports one plugin.
func (h *Host) Info(name string) (Info, bool) {
	h.mu.Lock()
	p := h.plugins[name]
	h.mu.Unlock()
	if p == nil {
		return Info{}, false
	}
	return p.info(), true
}

// Stop sends shutdown to every child, gives them Grace (bounded by ctx) to
// exit, kills the rest and reaps them all. The plugins' registrations are
// withdrawn from the bus.
func (h *Host) Stop(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	close(h.done)
	ps := make([]*plugin, 0, len(h.plugins))
	for _, n := range h.order {
		ps = append(ps, h.plugins[n])
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop(ctx) }()
	}
	wg.Wait()
	h.wg.Wait()
	return nil
}

func (p *plugin) stop(ctx context.Context) {
	p.mu.Lock()
	if !p.stopping {
		close(p.quit)
	}
	p.stopping = true
	inst := p.inst
	if inst == nil {
		inst = p.catching
	}
	p.mu.Unlock()
	p.unregister()
	if inst != nil && !inst.isDead() {
		_ = inst.notify("shutdown", struct{}{})
		inst.wmu.Lock()
		_ = inst.stdin.Close()
		inst.wmu.Unlock()
		t := time.NewTimer(p.h.Grace)
		select {
		case <-inst.dead:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		if !inst.isDead() {
			inst.kill("shutdown")
		}
		<-inst.dead // always reaped
	}
	p.mu.Lock()
	p.inst = nil
	if p.state != StateError {
		p.state = StateStopped
	}
	p.openLocked()
	p.mu.Unlock()
	p.changed()
}

// Remove stops one plugin (shutdown, Grace, then kill; always reaped),
// withdraws its hooks and commands from the bus and forgets it, so a plugin
// of that name can be started again. Events already queued for it fail as
// "stopped"; the observers see it stopped.
func (h *Host) Remove(ctx context.Context, name string) error {
	h.mu.Lock()
	p := h.plugins[name]
	if p == nil {
		h.mu.Unlock()
		return apperr.New(apperr.NotFound, "plugin %s is not hosted", name)
	}
	delete(h.plugins, name)
	h.order = slices.DeleteFunc(h.order, func(n string) bool { return n == name })
	h.mu.Unlock()
	p.stop(ctx)
	return nil
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
