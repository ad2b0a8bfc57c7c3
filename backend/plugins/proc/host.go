package proc

// The registry: the Host, the plugins it hosts by name, their states and
// observers, and adding, launching, listing, removing and stopping them.

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"atrium/backend/apperr"
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

// Info describes one hosted plugin.
type Info struct {
	Name     string        `json:"name"`
	State    string        `json:"state"`
	Err      string        `json:"error,omitempty"`
	Hooks    []string      `json:"hooks"`
	Commands []CommandInfo `json:"commands"`
	PID      int           `json:"pid,omitempty"`
	Restarts int           `json:"restarts"`
	// Extras: what it registered beyond hooks and commands (tools, memory
	// providers, CLI commands, ..., and what Atrium accepts but never calls).
	Extras Extras `json:"extras"`
}

// Host runs out-of-process plugins, one long-lived child each, bridged onto
// the hook bus. Tune the exported fields before the first Add.
type Host struct {
	bus *hooks.Bus
	log *slog.Logger

	// Grace is how long a child has to exit after shutdown before it is killed.
	Grace time.Duration
	// HandshakeTimeout bounds initialize (Spec.Timeout when that is longer).
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
	services  Services // answers the plugins' requests; nil refuses them
	done      chan struct{}
	closed    bool
	wg        sync.WaitGroup
	observers []func(Info)
	notifyMu  sync.Mutex    // serializes observer calls, so the last call carries the latest state
	gate      chan struct{} // while not nil, launched children wait for it to close (Hold)
	memory    string        // memory.provider: the provider told of delegations
}

// SetMemoryProvider names the memory provider in use (memory.provider):
// when a delegate child ends, the plugin that registered it is told
// (on_delegation).
func (h *Host) SetMemoryProvider(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.memory = name
}

func (h *Host) memoryProvider() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.memory
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

// NewHost makes a host delivering bus events to its plugins.
func NewHost(bus *hooks.Bus, logger *slog.Logger) *Host {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return &Host{bus: bus, log: logger, Grace: 2 * time.Second, HandshakeTimeout: 10 * time.Second,
		BackoffMin: 100 * time.Millisecond, BackoffMax: 5 * time.Second, MaxLine: 1 << 20, MaxRate: 2000,
		plugins: map[string]*plugin{}, done: make(chan struct{})}
}

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
	sanitize(&prior, nil)
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
		backoff: h.BackoffMin, quit: make(chan struct{})}
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

// Configure gives a running plugin a new callback timeout without a
// restart, when its process takes the configure notification (its
// handshake said "configure": true): the bound of its next callbacks, the
// environment of any process it starts later (env), and the notification,
// so the process's own bounds follow. false: the plugin is not hosted, not
// running now, or its process cannot take it: restart it instead.
func (h *Host) Configure(name string, timeout time.Duration, env []string) bool {
	h.mu.Lock()
	p := h.plugins[name]
	h.mu.Unlock()
	if p == nil {
		return false
	}
	p.mu.Lock()
	inst := p.inst
	if inst == nil || !inst.configures {
		p.mu.Unlock()
		return false
	}
	p.spec.Timeout, p.spec.Env = timeout, slices.Clone(env)
	p.mu.Unlock()
	// A process that dies meanwhile starts again from the new spec.
	if err := inst.notify("configure", ConfigureParams{HookTimeout: timeout.Seconds()}); err != nil {
		h.log.Debug("plugin configure not delivered; its next process starts with it", "plugin", name, "error", err)
	}
	return true
}

// Remove stops one plugin (shutdown, Grace, then kill; always reaped),
// withdraws its hooks and commands from the bus and forgets it, so a plugin
// of that name can be started again. Its events are not lost: they wait in
// the log, and a plugin of that name started again (a restart after its
// folder or settings changed) takes them; the observers see it stopped.
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
