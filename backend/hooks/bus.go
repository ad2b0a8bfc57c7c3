package hooks

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"atrium/backend/apperr"
	"atrium/backend/db"
)

// Options configure a Bus.
type Options struct {
	// Timeout bounds each callback (plugins.hook_callback_timeout); it is
	// passed through NormalizeTimeout, so 0 or less means unbounded.
	// SetTimeout changes it later.
	Timeout time.Duration
	// Logger receives callback failures, with the plugin's name.
	Logger *slog.Logger
	// Lease is how long a process on another machine is believed alive
	// after its last heartbeat (default 2 minutes). A process on this
	// machine is alive while its pid runs with the same start time.
	Lease time.Duration
	// Watch is how often a delivering bus looks for commits made by other
	// processes (PRAGMA data_version; default 50 ms). A poke (Wake) from
	// the committing process is faster; this is what makes it optional.
	Watch time.Duration
}

// Bus registers callbacks, logs events in the caller's transaction and
// delivers them. A bus delivers itself (the engine, see deliver.go) unless
// it has a Remote: then it is a client of the profile's plugin host, which
// delivers, and answers synchronous calls, for it.
type Bus struct {
	db      *db.DB
	timeout atomic.Int64 // nanoseconds; 0 = unbounded
	// engineName is context.engine (SelectContextEngine); engineWarned
	// the names already warned about as missing.
	engineName   atomic.Value
	engineWarned sync.Map
	lease        time.Duration
	watch        time.Duration
	log          *slog.Logger
	procID       string
	base         context.Context
	stop         context.CancelFunc

	mu        sync.Mutex
	subs      map[string]*subscriber     // by plugin name
	byHook    map[string][]*registration // registration order
	syncRegs  []*syncReg
	caps      []*capReg
	commands  *Commands
	nextReg   uint64
	started   bool
	engine    bool // delivering: started without a remote
	closed    bool
	remote    Remote
	committed int64         // the highest seq this bus committed
	progress  chan struct{} // closed and replaced whenever a subscriber advances
	procRow   bool          // this process's row is in processes

	rec       *recorder
	cache     logCache      // the newest events, read once for every subscriber
	commitGen atomic.Uint64 // bumped by every commit noticed (here or by the watcher)
	pokes     sync.WaitGroup
	bgWG      sync.WaitGroup // watcher, heartbeat: they end with base
	workWG    sync.WaitGroup // delivery workers: one may be stuck in a hung callback
	observers []func(Activity)
	dropAll   atomic.Bool // test seam: simulate a crash between commit and delivery

	order      map[string]int       // plugin load order (SetPluginOrder); unlisted plugins sort after, by name
	suppressed map[uint64]time.Time // sync registrations that timed out, skipped until then
	failures   failureLog
}

type registration struct {
	id     uint64
	plugin string
	hook   string
	fn     Handler
}

// Activity is what the bus reports to in-process observers of delivery (the
// desktop's activity panel): one per subscriber outcome.
type Activity struct {
	EventID    string `json:"event_id"`
	Seq        int64  `json:"seq"`
	Hook       string `json:"hook"`
	Subscriber string `json:"subscriber"`
	Status     string `json:"status"`
	Error      string `json:"error,omitempty"`
	Redelivery bool   `json:"redelivery"`
}

// NewBus builds a bus on d. Register plugins (or set a Remote), then call
// Start.
func NewBus(d *db.DB, opts Options) *Bus {
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	lease := opts.Lease
	if lease <= 0 {
		lease = 2 * time.Minute
	}
	watch := opts.Watch
	if watch <= 0 {
		watch = 50 * time.Millisecond
	}
	base, stop := context.WithCancel(context.Background())
	b := &Bus{
		db:         d,
		lease:      lease,
		watch:      watch,
		log:        lg,
		procID:     uuid.Must(uuid.NewV7()).String(),
		base:       base,
		stop:       stop,
		subs:       map[string]*subscriber{},
		order:      map[string]int{},
		suppressed: map[uint64]time.Time{},
		byHook:     map[string][]*registration{},
		commands:   NewCommands(),
		progress:   make(chan struct{}),
	}
	b.timeout.Store(int64(NormalizeTimeout(opts.Timeout)))
	b.rec = newRecorder(b)
	return b
}

// Timeout is the callback bound in force (0 = none).
func (b *Bus) Timeout() time.Duration { return time.Duration(b.timeout.Load()) }

// Within bounds a callback's own deadline d inside the callback bound (at
// most 90% of it): a callback that gives up by its own rule answers
// before the bus would cut it off.
func (b *Bus) Within(d time.Duration) time.Duration {
	if bt := b.Timeout(); bt > 0 && d > bt-bt/10 {
		return bt - bt/10
	}
	return d
}

// SetTimeout changes the callback bound (plugins.hook_callback_timeout) for
// every callback that starts from now on; it is normalised like
// Options.Timeout.
func (b *Bus) SetTimeout(d time.Duration) { b.timeout.Store(int64(NormalizeTimeout(d))) }

// ProcessID identifies this process's claims in the event log.
func (b *Bus) ProcessID() string { return b.procID }

// Handle undoes one registration.
type Handle struct {
	b  *Bus
	id uint64
}

// Unregister removes the callback. An event being delivered to it finishes;
// the events after it wait in the log for the plugin's next registration.
func (h Handle) Unregister() {
	if h.b == nil {
		return
	}
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	if h.b.unregisterCapLocked(h.id) {
		return
	}
	for i, r := range h.b.syncRegs {
		if r.id == h.id {
			h.b.syncRegs = append(h.b.syncRegs[:i:i], h.b.syncRegs[i+1:]...)
			return
		}
	}
	for hook, regs := range h.b.byHook {
		for i, r := range regs {
			if r.id == h.id {
				h.b.byHook[hook] = append(regs[:i:i], regs[i+1:]...)
				if s := h.b.subs[r.plugin]; s != nil {
					s.poke()
				}
				return
			}
		}
	}
}

// RegisterHook subscribes fn, on behalf of plugin, to an observer hook.
func (b *Bus) RegisterHook(plugin, hook string, fn Handler) (Handle, error) {
	plugin = strings.TrimSpace(plugin)
	if plugin == "" {
		return Handle{}, apperr.New(apperr.Invalid, "register hook %q: plugin name is empty", hook)
	}
	if fn == nil {
		return Handle{}, apperr.New(apperr.Invalid, "register hook %q for %s: callback is nil", hook, plugin)
	}
	kind, err := Lookup(hook)
	if err != nil {
		return Handle{}, fmt.Errorf("plugin %s: %w", plugin, err)
	}
	if kind != Observer {
		return Handle{}, apperr.New(apperr.Invalid, "plugin %s: %s is called synchronously; register it with RegisterSync", plugin, hook)
	}
	b.mu.Lock()
	known := b.subs[plugin] != nil && b.subs[plugin].sinceSet
	b.mu.Unlock()
	var since int64
	var sinceErr error
	if !known {
		// A subscriber the log has never seen starts here, not where the
		// log stands when its claim is made.
		since, sinceErr = b.head(context.Background())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextReg++
	r := &registration{id: b.nextReg, plugin: plugin, hook: hook, fn: fn}
	b.byHook[hook] = append(b.byHook[hook], r)
	s := b.subscriberLocked(plugin)
	if !s.sinceSet && !known && sinceErr == nil {
		s.since, s.sinceSet = since, true
	}
	if s.suspended {
		s.suspended = false // a new registration is a new chance
		s.hooksSaved = ""   // written again, active again
	}
	b.runLocked(s)
	return Handle{b: b, id: r.id}, nil
}

// subscriberLocked returns plugin's subscriber record, creating it.
func (b *Bus) subscriberLocked(plugin string) *subscriber {
	s := b.subs[plugin]
	if s == nil {
		s = &subscriber{name: plugin, wake: make(chan struct{}, 1)}
		b.subs[plugin] = s
	}
	return s
}

// Context is what a plugin's Register receives.
type Context struct {
	bus     *Bus
	plugin  string
	handles []Handle
	hooks   []string
	cmds    []string
}

// Plugin returns the registration context for the named plugin.
func (b *Bus) Plugin(name string) *Context { return &Context{bus: b, plugin: name} }

// Name is the plugin's name.
func (c *Context) Name() string { return c.plugin }

// RegisterHook subscribes fn to hook for this plugin.
func (c *Context) RegisterHook(hook string, fn Handler) error {
	h, err := c.bus.RegisterHook(c.plugin, hook, fn)
	if err != nil {
		return err
	}
	c.added(h, hook)
	return nil
}

func (c *Context) added(h Handle, hook string) {
	c.handles = append(c.handles, h)
	if !slices.Contains(c.hooks, hook) {
		c.hooks = append(c.hooks, hook)
	}
}

// Hooks are the hooks registered through this context, in first
// registration order.
func (c *Context) Hooks() []string { return slices.Clone(c.hooks) }

// Commands are the commands registered through this context.
func (c *Context) Commands() []string { return slices.Clone(c.cmds) }

// Unload reverses every registration made through this context.
func (c *Context) Unload() {
	for _, h := range c.handles {
		h.Unregister()
	}
	for _, n := range c.cmds {
		c.bus.commands.Unregister(c.plugin, n)
	}
	c.handles, c.hooks, c.cmds = nil, nil, nil
}

// OnActivity adds an in-process observer of delivery outcomes. It is called
// from the delivery goroutines and must not block.
func (b *Bus) OnActivity(fn func(Activity)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.observers = append(b.observers, fn)
}

// EnqueueTx writes an event for hook into the caller's transaction. After
// the commit, the bus's engine (or, for a client, the profile's plugin host,
// which it pokes) delivers it from the log; on rollback nothing happens.
func (b *Bus) EnqueueTx(ctx context.Context, tx *db.Tx, hook string, payload any) (Event, error) {
	if _, err := Lookup(hook); err != nil {
		return Event{}, err
	}
	b.mu.Lock()
	started, closed := b.started, b.closed
	b.mu.Unlock()
	if closed {
		return Event{}, apperr.New(apperr.Internal, "hook bus closed: %s cannot be enqueued", hook)
	}
	if !started {
		// Nothing would deliver it or wait for it: a wiring bug, refuse loudly.
		return Event{}, apperr.New(apperr.Internal, "hook bus not started: call Start before enqueuing %s", hook)
	}
	raw, err := EncodePayload(payload)
	if err != nil {
		return Event{}, fmt.Errorf("encode %s payload: %w", hook, err)
	}
	// created_at is what the log stores (milliseconds), so the live event,
	// ListEvents and a redelivery all carry the same value.
	created := db.Ms(tx.Now)
	ev := Event{ID: uuid.Must(uuid.NewV7()).String(), Hook: hook, Payload: raw, CreatedAt: time.UnixMilli(created).UTC()}
	// A statement prepared once on the writer (gorm would re-prepare it in
	// every transaction). The seq is past every seq the log ever held:
	// hook_seq is at or past every one pruned (what AUTOINCREMENT did, without
	// writing a page at every insert). An event no active subscriber takes
	// is delivered at birth, as settleTx would mark it: it never enters
	// hook_events_pending, and the prune takes it in its time (nothing
	// settled it when no plugin took any hook: such a log only grew).
	res, err := tx.Exec(ctx, `INSERT INTO hook_events (seq, event_id, hook, payload, created_at, delivered_at)
		VALUES ((SELECT max(floor, COALESCE((SELECT MAX(seq) FROM hook_events), 0)) + 1 FROM hook_seq), ?, ?, ?, ?,
			CASE WHEN EXISTS (`+takers+`?) THEN NULL ELSE ? END)`,
		ev.ID, hook, string(raw), created, hook, created)
	if err == nil {
		ev.Seq, err = res.LastInsertId()
	}
	if err != nil {
		return Event{}, fmt.Errorf("append %s event: %w", hook, err)
	}
	tx.AfterCommitOrdered(func() { b.committedEvent(ev) })
	return ev, nil
}

// committedEvent runs right after the commit of an event: it wakes the
// subscribers of its hook here, or pokes the host.
func (b *Bus) committedEvent(ev Event) {
	if b.dropAll.Load() {
		return
	}
	b.commitGen.Add(1)
	b.mu.Lock()
	b.committed = max(b.committed, ev.Seq)
	remote := b.remote
	for _, r := range b.byHook[ev.Hook] {
		if s := b.subs[r.plugin]; s != nil {
			s.poke()
		}
	}
	if remote != nil {
		b.pokes.Add(1)
	}
	b.mu.Unlock()
	if remote != nil {
		go func() { defer b.pokes.Done(); remote.Poke() }()
	}
}

// Subscribers lists the plugins subscribed to hook here, in registration
// order.
func (b *Bus) Subscribers(hook string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, r := range b.byHook[hook] {
		if !seen[r.plugin] {
			seen[r.plugin] = true
			out = append(out, r.plugin)
		}
	}
	return out
}

// Commands is the slash-command registry served with this bus.
func (b *Bus) Commands() *Commands { return b.commands }

// RunCommand runs a slash command bounded by the callback timeout: here if
// it is registered here, else on the profile's plugin host.
func (b *Bus) RunCommand(ctx context.Context, name, args string, cc CommandContext) (string, error) {
	return b.commands.Run(ctx, b.Timeout, name, args, cc)
}

// RegisterCommand adds a command for this plugin. handler may be a
// func(args string) (string, error), or take the session context too:
// func(ctx context.Context, args string, cc hooks.CommandContext) (string, error).
func (c *Context) RegisterCommand(name string, handler any, description string) error {
	if err := c.bus.commands.Register(c.plugin, name, description, handler); err != nil {
		return err
	}
	n := NormalizeCommand(name)
	c.cmds = append(c.cmds, n)
	return nil
}

// SetRemote makes this bus a client of the profile's plugin host (call it
// before Start): its events are delivered there, Flush and Close wait for
// that delivery, and synchronous hooks, plugin commands and capabilities
// not registered here are answered there. SetRemote(nil) before Start
// makes it deliver itself again (a window that became the host).
func (b *Bus) SetRemote(r Remote) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.remote = r
	if r == nil {
		b.commands.setRemote(nil)
		return
	}
	b.commands.setRemote(r)
}

func (b *Bus) remoteOf() Remote {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.remote
}

// Start lets the bus take events. Without a remote it starts delivering:
// each subscriber registered here (now or later) claims its position in the
// log, unless another live process delivers to it, and catches up from
// there; commits of other processes are noticed within Options.Watch. A
// client (SetRemote) only takes events. Start again after SetRemote(nil)
// starts delivering.
func (b *Bus) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return apperr.New(apperr.Internal, "hook bus closed")
	}
	b.started = true
	if b.remote != nil || b.engine {
		return nil
	}
	if err := b.db.Writable(); err != nil {
		// A store this process cannot write (read-only, damaged) takes no
		// event and records no delivery: its events wait for a process
		// that can deliver them.
		b.log.Debug("hook delivery not started", "error", err)
		return nil
	}
	b.engine = true
	b.rec.start()
	b.bgWG.Add(1)
	go b.watchCommits()
	// The subscribers registered so far claim their positions now, so a
	// process that answers others once Start returned (the plugin host)
	// has them in the log before it answers.
	var subs []*subscriber
	for _, s := range b.subs {
		if len(b.hooksOfLocked(s.name)) > 0 {
			subs = append(subs, s)
		}
	}
	b.mu.Unlock()
	for _, s := range subs {
		b.mu.Lock()
		hooks := b.hooksOfLocked(s.name)
		b.mu.Unlock()
		if _, err := b.claim(ctx, s, hooks); err != nil {
			b.log.Warn("claim hook subscriber", "plugin", s.name, "error", err)
		}
	}
	b.mu.Lock()
	for _, s := range b.subs {
		b.runLocked(s)
	}
	return nil
}

// Delivering reports whether this bus delivers events itself.
func (b *Bus) Delivering() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.engine
}

// Flush waits until every event in the log so far was delivered to each
// subscriber that takes it and is being delivered to (here, by another
// process, or, for a client, by the plugin host), and recorded. A
// subscriber in error (suspended) is not waited for.
func (b *Bus) Flush(ctx context.Context) error {
	if r := b.remoteOf(); r != nil {
		b.pokes.Wait()
		b.mu.Lock()
		seq := b.committed
		b.mu.Unlock()
		if seq == 0 {
			return nil
		}
		if err := r.Wait(ctx, seq); err != nil {
			return fmt.Errorf("wait for hook delivery by the plugin host: %w", err)
		}
		return nil
	}
	head, err := b.head(ctx)
	if err != nil {
		return err
	}
	return b.WaitDelivered(ctx, head)
}

// Close waits for pending deliveries (bounded by ctx), then stops
// delivering and withdraws this process's claims, recording where each
// subscriber stands: the next process to deliver continues from there.
func (b *Bus) Close(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	started := b.started
	b.mu.Unlock()
	var flushErr error
	if started && !b.dropAll.Load() {
		flushErr = b.Flush(ctx)
	}
	b.mu.Lock()
	b.closed = true
	engine := b.engine
	for _, s := range b.subs {
		s.poke()
	}
	b.mu.Unlock()
	b.stop()
	b.bgWG.Wait()
	b.pokes.Wait()
	// A worker stuck in a callback that ignores its ctx is left behind
	// (bounded by ctx): what it had in hand is redelivered by the next
	// deliverer, flagged.
	workers := make(chan struct{})
	go func() { b.workWG.Wait(); close(workers) }()
	select {
	case <-workers:
	case <-ctx.Done():
	}
	if engine {
		b.rec.stopAndDrain()
		if !b.dropAll.Load() {
			b.releaseAll()
		}
	}
	return flushErr
}

// SimulateCrash makes the bus behave as if its process died right after its
// commits: nothing more is delivered or recorded, no heartbeat is sent, its
// claims stay, and its process row says it is dead. Tests only.
func (b *Bus) SimulateCrash() {
	b.dropAll.Store(true)
	b.markDead()
	b.stop()
	workers := make(chan struct{})
	go func() { b.workWG.Wait(); close(workers) }()
	select {
	case <-workers:
	case <-time.After(200 * time.Millisecond): // one stuck in a callback stays stuck
	}
}

// WakeAll makes every subscriber look at the log again (a poke from a
// process that committed).
func (b *Bus) WakeAll() {
	b.commitGen.Add(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.subs {
		s.poke()
	}
}

// Wake tells the bus that plugin may take events again (its process came
// back): its delivery resumes at once instead of at the next retry.
func (b *Bus) Wake(plugin string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.subs[plugin]; s != nil {
		s.poke()
	}
}

// notifyProgress wakes every waiter on subscriber progress. b.mu is held.
func (b *Bus) notifyProgressLocked() {
	close(b.progress)
	b.progress = make(chan struct{})
}
