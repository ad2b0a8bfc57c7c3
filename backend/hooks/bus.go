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
	Timeout time.Duration
	// Logger receives callback failures, with the plugin's name.
	Logger *slog.Logger
	// Lease is how long a process's claim on its events outlives its last
	// heartbeat (default 2 minutes).
	Lease time.Duration
}

// Bus registers callbacks and delivers durable events to them.
type Bus struct {
	db      *db.DB
	timeout time.Duration
	lease   time.Duration
	log     *slog.Logger
	procID  string
	base    context.Context
	stop    context.CancelFunc

	mu       sync.Mutex
	subs     map[string]*subscriber     // by plugin name
	byHook   map[string][]*registration // registration order
	syncRegs []*syncReg
	caps     []*capReg
	commands *Commands
	nextReg  uint64
	started  bool
	closed   bool
	// registered: this process's row in processes has committed (see
	// registerTx); until then it has claimed nothing and writes nothing.
	registered atomic.Bool
	pending    int           // events handed to delivery and not yet recorded
	idle       chan struct{} // closed when pending drops to 0

	outMu    sync.Mutex
	outQueue []outcome     // unbounded: a committing caller never blocks on it
	outReady chan struct{} // signalled when outQueue gains items
	recDone  chan struct{}
	bgWG     sync.WaitGroup

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

type subscriber struct {
	name    string
	queue   []job
	running bool
	gen     uint64
}

type job struct {
	ev       Event
	handlers []Handler
	state    *eventState
}

type eventState struct {
	remaining atomic.Int32
}

type outcome struct {
	seq        int64
	subscriber string // "" marks only "event fully handed out"
	status     string
	err        string
	redelivery bool
	at         time.Time
	dur        time.Duration
	eventDone  bool
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

// NewBus builds a bus on d. Register plugins, then call Start.
func NewBus(d *db.DB, opts Options) *Bus {
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	lease := opts.Lease
	if lease <= 0 {
		lease = 2 * time.Minute
	}
	base, stop := context.WithCancel(context.Background())
	b := &Bus{
		db:         d,
		timeout:    NormalizeTimeout(opts.Timeout),
		lease:      lease,
		log:        lg,
		procID:     uuid.Must(uuid.NewV7()).String(),
		base:       base,
		stop:       stop,
		subs:       map[string]*subscriber{},
		order:      map[string]int{},
		suppressed: map[uint64]time.Time{},
		byHook:     map[string][]*registration{},
		commands:   NewCommands(),
		idle:       make(chan struct{}),
		outReady:   make(chan struct{}, 1),
		recDone:    make(chan struct{}),
	}
	close(b.idle)
	go b.recorder()
	return b
}

// Timeout is the callback bound in force (0 = none).
func (b *Bus) Timeout() time.Duration { return b.timeout }

// ProcessID identifies this process's claims in the event log.
func (b *Bus) ProcessID() string { return b.procID }

// Handle undoes one registration.
type Handle struct {
	b  *Bus
	id uint64
}

// Unregister removes the callback; events already queued for it still run.
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
	defer b.mu.Unlock()
	b.nextReg++
	r := &registration{id: b.nextReg, plugin: plugin, hook: hook, fn: fn}
	b.byHook[hook] = append(b.byHook[hook], r)
	if b.subs[plugin] == nil {
		b.subs[plugin] = &subscriber{name: plugin}
	}
	return Handle{b: b, id: r.id}, nil
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

// EnqueueTx writes an event for hook into the caller's transaction and queues
// its delivery for after the commit. On rollback neither happens.
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
		// Start recovers lapsed events before this process adds its own:
		// enqueuing first is a wiring bug, refuse loudly.
		return Event{}, apperr.New(apperr.Internal, "hook bus not started: call Start before enqueuing %s", hook)
	}
	if err := b.registerTx(ctx, tx); err != nil {
		return Event{}, err
	}
	raw, err := EncodePayload(payload)
	if err != nil {
		return Event{}, fmt.Errorf("encode %s payload: %w", hook, err)
	}
	// created_at is what the log stores (milliseconds), so the live event,
	// ListEvents and a redelivery all carry the same value.
	created := db.Ms(tx.Now)
	ev := Event{ID: uuid.Must(uuid.NewV7()).String(), Hook: hook, Payload: raw, CreatedAt: time.UnixMilli(created).UTC()}
	row := struct{ Seq int64 }{}
	err = tx.G.WithContext(ctx).Raw(
		`INSERT INTO hook_events (event_id, hook, payload, created_at, claimed_by) VALUES (?, ?, ?, ?, ?) RETURNING seq`,
		ev.ID, hook, string(raw), created, b.procID).Scan(&row).Error
	if err != nil {
		return Event{}, fmt.Errorf("append %s event: %w", hook, err)
	}
	ev.Seq = row.Seq
	tx.AfterCommitOrdered(func() { b.deliver(ev) })
	return ev, nil
}

// deliver hands a committed event to every current subscriber of its hook.
func (b *Bus) deliver(ev Event) {
	if b.dropAll.Load() {
		return
	}
	b.deliverTo(ev, nil)
}

// deliverTo queues ev for the subscribers of its hook, skipping those in skip.
func (b *Bus) deliverTo(ev Event, skip map[string]bool) {
	b.mu.Lock()
	// Group this hook's callbacks by plugin, in registration order.
	var order []string
	handlers := map[string][]Handler{}
	for _, r := range b.byHook[ev.Hook] {
		if skip[r.plugin] {
			continue
		}
		if _, ok := handlers[r.plugin]; !ok {
			order = append(order, r.plugin)
		}
		handlers[r.plugin] = append(handlers[r.plugin], r.fn)
	}
	b.addPendingLocked()
	if len(order) == 0 {
		b.mu.Unlock()
		// Nobody to hand it to: it is delivered. Sent outside the lock, as
		// the recorder takes the lock once it has written.
		b.pushOutcome(outcome{seq: ev.Seq, eventDone: true, at: b.db.Now()})
		return
	}
	defer b.mu.Unlock()
	st := &eventState{}
	st.remaining.Store(int32(len(order)))
	for _, name := range order {
		s := b.subs[name]
		s.queue = append(s.queue, job{ev: ev, handlers: handlers[name], state: st})
		if !s.running {
			s.running = true
			go b.work(s, s.gen)
		}
	}
}

func (b *Bus) addPendingLocked() {
	if b.pending == 0 {
		b.idle = make(chan struct{})
	}
	b.pending++
}

// work drains one subscriber's queue in order. If a callback overruns the
// timeout, its timer detaches this goroutine (bumping gen) and starts a
// replacement, so the hung callback holds only itself.
func (b *Bus) work(s *subscriber, gen uint64) {
	for {
		b.mu.Lock()
		if s.gen != gen {
			b.mu.Unlock()
			return
		}
		if len(s.queue) == 0 {
			s.running = false
			b.mu.Unlock()
			return
		}
		j := s.queue[0]
		s.queue[0] = job{}
		s.queue = s.queue[1:]
		b.mu.Unlock()

		start := time.Now()
		status, errText := "ok", ""
		for _, h := range j.handlers {
			st, e, abandoned := b.invoke(s, gen, j, h, start)
			if abandoned {
				return
			}
			if st != "ok" && status == "ok" {
				status, errText = st, e
			}
		}
		b.finish(j, s.name, status, errText, time.Since(start))
	}
}

const (
	callRunning int32 = iota
	callFinished
	callTimedOut
)

// invoke runs one callback with the timeout, recovering panics.
func (b *Bus) invoke(s *subscriber, gen uint64, j job, h Handler, start time.Time) (status, errText string, abandoned bool) {
	c := &callCtx{Context: b.base}
	var state atomic.Int32
	var timer *time.Timer
	if b.timeout > 0 {
		c.deadline = time.Now().Add(b.timeout)
		timer = time.AfterFunc(b.timeout, func() {
			if !state.CompareAndSwap(callRunning, callTimedOut) {
				return
			}
			c.cancel(context.DeadlineExceeded)
			msg := fmt.Sprintf("callback did not return within %s", b.timeout)
			b.log.Warn("hook callback timed out", "plugin", s.name, "hook", j.ev.Hook, "event_id", j.ev.ID, "timeout", b.timeout)
			b.mu.Lock()
			if s.gen == gen {
				s.gen++
				go b.work(s, s.gen) // the replacement takes the rest of the queue
			}
			b.mu.Unlock()
			b.finish(j, s.name, "timeout", msg, time.Since(start))
		})
	}
	err := b.safeCall(c, h, j.ev)
	if timer != nil {
		timer.Stop()
	}
	if !state.CompareAndSwap(callRunning, callFinished) {
		return "", "", true
	}
	c.cancel(context.Canceled)
	if err != nil {
		b.reportFailure(s.name, j.ev.Hook, err, j.ev.Payload, "event_id", j.ev.ID)
		return "failed", err.Error(), false
	}
	return "ok", "", false
}

func (b *Bus) safeCall(ctx context.Context, h Handler, ev Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return h(ctx, ev)
}

// finish records one subscriber's outcome for an event.
func (b *Bus) finish(j job, sub, status, errText string, dur time.Duration) {
	done := j.state.remaining.Add(-1) == 0
	b.pushOutcome(outcome{seq: j.ev.Seq, subscriber: sub, status: status, err: errText,
		redelivery: j.ev.Redelivery, at: b.db.Now(), dur: dur, eventDone: done})
	b.mu.Lock()
	obs := b.observers
	b.mu.Unlock()
	for _, fn := range obs {
		fn(Activity{EventID: j.ev.ID, Seq: j.ev.Seq, Hook: j.ev.Hook, Subscriber: sub, Status: status, Error: errText, Redelivery: j.ev.Redelivery})
	}
}

func (b *Bus) pushOutcome(o outcome) {
	b.outMu.Lock()
	b.outQueue = append(b.outQueue, o)
	b.outMu.Unlock()
	select {
	case b.outReady <- struct{}{}:
	default:
	}
}

// recorder writes outcomes in batches: whatever arrived while the previous
// batch was being written goes in the next single transaction.
func (b *Bus) recorder() {
	defer close(b.recDone)
	for range b.outReady {
		for {
			b.outMu.Lock()
			batch := b.outQueue
			if len(batch) > 512 {
				batch = batch[:512]
			}
			b.outQueue = b.outQueue[len(batch):]
			b.outMu.Unlock()
			if len(batch) == 0 {
				break
			}
			b.recordBatch(batch)
		}
	}
}

func (b *Bus) recordBatch(batch []outcome) {
	if err := b.record(batch); err != nil {
		b.log.Error("record hook deliveries", "error", err)
	}
	done := 0
	for _, o := range batch {
		if o.eventDone {
			done++
		}
	}
	if done > 0 {
		b.mu.Lock()
		b.pending -= done
		if b.pending == 0 {
			close(b.idle)
		}
		b.mu.Unlock()
	}
}

func (b *Bus) record(batch []outcome) error {
	return b.db.InTx(b.base, func(tx *db.Tx) error {
		for _, o := range batch {
			if o.subscriber != "" {
				if err := tx.G.Exec(`INSERT OR REPLACE INTO hook_deliveries (seq, subscriber, status, error, redelivery, delivered_at, duration_us)
					VALUES (?, ?, ?, ?, ?, ?, ?)`, o.seq, o.subscriber, o.status, o.err, o.redelivery, db.Ms(o.at), o.dur.Microseconds()).Error; err != nil {
					return err
				}
			}
			if o.eventDone {
				if err := tx.G.Exec(`UPDATE hook_events SET delivered_at = ? WHERE seq = ?`, db.Ms(o.at), o.seq).Error; err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Flush waits until every event handed to delivery so far has reached each of
// its subscribers (or timed out) and been recorded.
func (b *Bus) Flush(ctx context.Context) error {
	b.mu.Lock()
	ch := b.idle
	b.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flush hook deliveries: %w", ctx.Err())
	}
}

// Subscribers lists the plugins subscribed to hook, in registration order.
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

// RunCommand runs a slash command bounded by the callback timeout.
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
