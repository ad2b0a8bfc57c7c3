package hooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The delivery engine of a bus that delivers (the plugin host, or every
// process in inline mode). Each subscriber (plugin) has one worker at a time:
// it claims the subscriber's row in hook_subscribers (unless another live
// process delivers to it), reads the log after the subscriber's position,
// only the hooks it takes, and hands each event to its callbacks in seq
// order. Outcomes go to the recorder, which moves the position. The log is
// the only queue: an event committed by any process, while no process
// delivered, or while the plugin was down, is delivered from it.

// subscriber is one plugin's delivery state here. Fields are guarded by
// Bus.mu, except wake.
type subscriber struct {
	name string
	wake chan struct{} // capacity 1: "look again"

	running    bool   // a worker goroutine runs
	gen        uint64 // bumped to retire a worker stuck in a hung callback
	claimed    bool   // this process delivers to it
	tried      bool   // a claim was attempted
	since      int64  // the head of the log when it first registered here
	sinceSet   bool
	position   int64  // recorded: every event up to here is handled
	through    int64  // handled here, recorded or not (>= position)
	unrecorded int    // outcomes handed to the recorder, not yet written
	inflight   int64  // events up to here were handed out (written at release)
	redeliver  int64  // events up to here go out flagged as redeliveries
	hooksSaved string // the hooks list last written to its row
	waiting    bool   // its plugin is unavailable; retrying
	later      bool   // its receiver is elsewhere and retrying (a webhook): nobody waits for it
	suspended  bool   // its plugin is in error; resumes at its next registration
	lastErr    string
	retireMark bool // runtime said it no longer exists
	// retries are its receiver's attempts at the events it keeps trying
	// (LaterAt), by seq: read from the log once it is claimed here.
	retries       map[int64]retryState
	retriesLoaded bool
}

// retryState is the attempts at one event so far, and when the next may
// be made.
type retryState struct {
	attempts int
	next     time.Time
}

func (s *subscriber) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Batch and retry sizes of the engine.
const (
	readBatch     = 64
	claimRetry    = 500 * time.Millisecond // a subscriber another live process delivers to
	retryDown     = time.Second            // a plugin that was unavailable
	waitPollEvery = 20 * time.Millisecond  // WaitDelivered, for subscribers of other processes
)

// runLocked starts s's worker if this bus delivers, s has observer
// callbacks here and no worker runs.
func (b *Bus) runLocked(s *subscriber) {
	if !b.engine || b.closed || s.running || len(b.hooksOfLocked(s.name)) == 0 {
		return
	}
	s.running = true
	s.gen++
	b.workWG.Add(1)
	go b.work(s, s.gen)
}

// hooksOfLocked lists the observer hooks plugin has callbacks for here, sorted.
func (b *Bus) hooksOfLocked(plugin string) []string {
	var out []string
	for _, h := range Names() {
		for _, r := range b.byHook[h] {
			if r.plugin == plugin {
				out = append(out, h)
				break
			}
		}
	}
	return out
}

func (b *Bus) handlersLocked(plugin, hook string) []Handler {
	var out []Handler
	for _, r := range b.byHook[hook] {
		if r.plugin == plugin {
			out = append(out, r.fn)
		}
	}
	return out
}

// stillMine tells a worker whether it is the current one; if not, or if the
// bus is closing, it must return.
func (b *Bus) stillMine(s *subscriber, gen uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return s.gen == gen && !b.closed && b.base.Err() == nil && !b.dropAll.Load()
}

// sleep waits for a poke, d (0: no timer) or the end of the bus. It reports
// false when the bus is closing.
func (b *Bus) sleep(s *subscriber, d time.Duration) bool {
	var tc <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-s.wake:
	case <-tc:
	case <-b.base.Done():
		return false
	}
	return true
}

// work is s's worker.
func (b *Bus) work(s *subscriber, gen uint64) {
	defer b.workWG.Done()
	exit := func() {
		b.mu.Lock()
		if s.gen == gen {
			s.running = false
		}
		b.mu.Unlock()
	}
	for {
		if !b.stillMine(s, gen) || b.dropAll.Load() {
			exit()
			return
		}
		b.mu.Lock()
		hooks := b.hooksOfLocked(s.name)
		claimed, suspended := s.claimed, s.suspended
		b.mu.Unlock()
		if len(hooks) == 0 {
			// Unregistered (stopped, restarting or removed): the events
			// after its position wait in the log for its next registration.
			b.release(s)
			b.mu.Lock()
			if s.gen == gen {
				s.running = false
			}
			again := len(b.hooksOfLocked(s.name)) > 0
			b.mu.Unlock()
			if again {
				b.mu.Lock()
				b.runLocked(s)
				b.mu.Unlock()
			}
			return
		}
		if !claimed {
			ok, err := b.claim(b.base, s, hooks)
			if err != nil && b.base.Err() == nil {
				b.log.Warn("claim hook subscriber", "plugin", s.name, "error", err)
			}
			if !ok {
				if !b.sleep(s, claimRetry) {
					exit()
					return
				}
				continue
			}
			continue
		}
		if suspended {
			if !b.sleep(s, 0) {
				exit()
				return
			}
			continue
		}
		if err := b.saveHooks(s, hooks); err != nil && b.base.Err() == nil {
			b.log.Warn("record hook subscriber", "plugin", s.name, "error", err)
		}
		b.mu.Lock()
		from := s.through
		b.mu.Unlock()
		evs, upto, err := b.cache.after(b, from, hooks)
		if err != nil {
			if b.base.Err() == nil {
				b.log.Warn("read hook events", "plugin", s.name, "error", err)
			}
			if !b.sleep(s, retryDown) {
				exit()
				return
			}
			continue
		}
		if len(evs) == 0 {
			b.mu.Lock()
			if s.gen == gen && upto > s.through {
				s.through = upto
			}
			b.notifyProgressLocked()
			b.mu.Unlock()
			if !b.sleep(s, 0) {
				exit()
				return
			}
			continue
		}
		cont, all := b.deliverBatch(s, gen, evs)
		if !cont {
			exit()
			return
		}
		if all {
			// Nothing else for it up to where the read looked.
			b.mu.Lock()
			if s.gen == gen && upto > s.through {
				s.through = upto
				b.notifyProgressLocked()
			}
			b.mu.Unlock()
		}
	}
}

// deliverBatch hands evs to s's callbacks in order. cont is false when
// this worker must end (replaced after a hang, or the bus is closing); all
// is true when every event of the batch was handled.
func (b *Bus) deliverBatch(s *subscriber, gen uint64, evs []Event) (cont, all bool) {
	b.loadRetries(s)
	for _, ev := range evs {
		if !b.stillMine(s, gen) {
			return false, false
		}
		b.mu.Lock()
		handlers := b.handlersLocked(s.name, ev.Hook)
		ev.Redelivery = ev.Seq <= s.redeliver
		if r, ok := s.retries[ev.Seq]; ok {
			ev.Attempts, ev.RetryAt = r.attempts, r.next
		}
		if len(handlers) > 0 {
			s.inflight = max(s.inflight, ev.Seq) // handed out from here on
		}
		b.mu.Unlock()
		if len(handlers) == 0 {
			return true, false // its registrations changed: read again
		}
		res := b.invokeAll(s, gen, ev, handlers)
		switch res.kind {
		case resAbandoned:
			return false, false
		case resUnavailable:
			b.mu.Lock()
			if res.handedOut {
				s.redeliver = max(s.redeliver, ev.Seq)
			}
			first := !s.waiting
			s.waiting, s.lastErr, s.later = true, res.err, res.later
			obs := b.observers
			b.notifyProgressLocked()
			b.mu.Unlock()
			if res.attempted {
				// A receiver's failed attempt: on record, without moving on.
				if res.attempt > 0 {
					b.mu.Lock()
					if s.retries == nil {
						s.retries = map[int64]retryState{}
					}
					s.retries[ev.Seq] = retryState{attempts: res.attempt, next: res.next}
					b.mu.Unlock()
				}
				for _, fn := range obs {
					fn(Activity{EventID: ev.ID, Seq: ev.Seq, Hook: ev.Hook, Subscriber: s.name, Status: StatusRetrying, Error: res.err, Redelivery: ev.Redelivery})
				}
				b.rec.push(outcome{seq: ev.Seq, subscriber: s.name, status: StatusRetrying, err: res.err, redelivery: ev.Redelivery,
					at: b.db.Now(), dur: res.dur, attempt: true, attempts: res.attempt, nextAt: res.next})
			}
			if first && !res.later {
				b.log.Info("plugin unavailable; its events wait in the log", "plugin", s.name, "seq", ev.Seq, "error", res.err)
			}
			return b.sleep(s, retryDown), false
		case resSuspended:
			b.mu.Lock()
			s.suspended, s.lastErr = true, res.err
			b.notifyProgressLocked()
			b.mu.Unlock()
			b.log.Warn("plugin in error; its events wait in the log until it is back", "plugin", s.name, "error", res.err)
			b.rec.push(outcome{subscriber: s.name, suspend: true, err: res.err})
			return true, false
		default:
			b.mu.Lock()
			s.waiting, s.later = false, false
			b.mu.Unlock()
			b.finish(s, ev, res.status, res.err, res.dur)
		}
	}
	return true, true
}

// Result kinds of one delivery.
const (
	resDone        = iota // ok, failed or timeout: recorded, the position moves
	resUnavailable        // not delivered: try again
	resSuspended          // the plugin is in error: stop until it registers again
	resAbandoned          // this worker hung and was replaced
)

type result struct {
	kind      int
	status    string
	err       string
	dur       time.Duration
	handedOut bool
	later     bool // a receiver elsewhere: nobody waits for it
	attempted bool // a later one that made an attempt (recorded)
	attempt   int  // its number, and when the next may be (LaterAt)
	next      time.Time
}

// StatusRetrying is a delivery's status while its receiver has not taken
// it and it is tried again (a webhook).
const StatusRetrying = "retrying"

// ErrNotYet, wrapped by Later, says no attempt was made this time (the
// handler's backoff has not run out): nothing is recorded.
var ErrNotYet = errors.New("not yet")

// invokeAll runs every callback of s for ev; the first failure is the
// outcome.
func (b *Bus) invokeAll(s *subscriber, gen uint64, ev Event, handlers []Handler) result {
	start := time.Now()
	out := result{kind: resDone, status: "ok"}
	for _, h := range handlers {
		r := b.invoke(s, gen, ev, h, start)
		switch {
		case r.kind != resDone:
			return r
		case r.status != "ok" && out.status == "ok":
			out.status, out.err = r.status, r.err
		}
	}
	out.dur = time.Since(start)
	return out
}

const (
	callRunning int32 = iota
	callFinished
	callTimedOut
)

// invoke runs one callback with the timeout, recovering panics. If it
// overruns, its timer records the timeout, moves the subscriber past the
// event and starts a replacement worker, so the hung callback holds only
// itself.
func (b *Bus) invoke(s *subscriber, gen uint64, ev Event, h Handler, start time.Time) result {
	c := &callCtx{Context: b.base}
	var state atomic.Int32
	var timer *time.Timer
	if timeout := b.Timeout(); timeout > 0 {
		c.deadline = time.Now().Add(timeout)
		timer = time.AfterFunc(timeout, func() {
			if !state.CompareAndSwap(callRunning, callTimedOut) {
				return
			}
			c.cancel(context.DeadlineExceeded)
			msg := fmt.Sprintf("callback did not return within %s", timeout)
			b.log.Warn("hook callback timed out", "plugin", s.name, "hook", ev.Hook, "event_id", ev.ID, "timeout", timeout)
			b.mu.Lock()
			replace := s.gen == gen
			if replace {
				s.gen++
				s.running = false
			}
			b.mu.Unlock()
			b.finish(s, ev, "timeout", msg, time.Since(start))
			if replace {
				b.mu.Lock()
				b.runLocked(s) // the replacement continues after the event
				b.mu.Unlock()
			}
		})
	}
	err := b.safeCall(c, h, ev)
	if timer != nil {
		timer.Stop()
	}
	if !state.CompareAndSwap(callRunning, callFinished) {
		return result{kind: resAbandoned}
	}
	c.cancel(context.Canceled)
	var un *UnavailableError
	switch {
	case err == nil:
		return result{kind: resDone, status: "ok"}
	case errors.As(err, &un):
		return result{kind: resUnavailable, err: un.Err.Error(), handedOut: un.HandedOut, later: un.Later,
			attempted: un.Later && !errors.Is(un.Err, ErrNotYet), attempt: un.Attempt, next: un.NextAt, dur: time.Since(start)}
	case errors.Is(err, ErrSuspended):
		return result{kind: resSuspended, err: err.Error()}
	case errors.Is(err, ErrTimedOut):
		// A handler that gave up on its own bound (a plugin process's
		// callback, cancelled there, which logged it): a timeout, as the
		// bus's own.
		return result{kind: resDone, status: "timeout", err: err.Error(), dur: time.Since(start)}
	case b.base.Err() != nil:
		// Cut short by the bus closing: not an outcome. The event stays
		// after the position, flagged for whoever delivers next.
		return result{kind: resUnavailable, err: err.Error(), handedOut: true}
	}
	b.reportFailure(s.name, ev.Hook, err, ev.Payload, "event_id", ev.ID)
	return result{kind: resDone, status: "failed", err: err.Error()}
}

func (b *Bus) safeCall(ctx context.Context, h Handler, ev Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return h(ctx, ev)
}

// loadRetries reads, once s is claimed here, the attempts its receiver
// made at the events it still tries (status retrying, LaterAt): a process
// started again goes on from them. Only a subscriber that made such
// attempts has any; a failed read is tried again at the next event.
func (b *Bus) loadRetries(s *subscriber) {
	b.mu.Lock()
	loaded, name := s.retriesLoaded, s.name
	b.mu.Unlock()
	if loaded {
		return
	}
	var rows []struct {
		Seq      int64
		Attempts int
		NextAt   int64
	}
	if err := b.db.Read.Raw(`SELECT seq, attempts, next_at FROM hook_deliveries WHERE subscriber = ? AND status = ? AND attempts > 0`,
		name, StatusRetrying).Scan(&rows).Error; err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.retries == nil {
		s.retries = map[int64]retryState{}
	}
	for _, r := range rows {
		if _, ok := s.retries[r.Seq]; !ok {
			s.retries[r.Seq] = retryState{attempts: r.Attempts, next: time.UnixMilli(r.NextAt)}
		}
	}
	s.retriesLoaded = true
}

// finish records s's outcome for ev and moves it past ev (after attempts
// on record, LaterAt's, this outcome is one more).
func (b *Bus) finish(s *subscriber, ev Event, status, errText string, dur time.Duration) {
	b.mu.Lock()
	if ev.Seq > s.through {
		s.through = ev.Seq
	}
	delete(s.retries, ev.Seq) // its outcome, however it came (a timeout too)
	s.unrecorded++
	obs := b.observers
	b.mu.Unlock()
	// Observers first: once the recorder has written the outcome, a Flush
	// may return, and what it waited for includes the observers' calls.
	for _, fn := range obs {
		fn(Activity{EventID: ev.ID, Seq: ev.Seq, Hook: ev.Hook, Subscriber: s.name, Status: status, Error: errText, Redelivery: ev.Redelivery})
	}
	o := outcome{seq: ev.Seq, subscriber: s.name, status: status, err: errText, redelivery: ev.Redelivery, at: b.db.Now(), dur: dur}
	if ev.Attempts > 0 {
		o.attempts = ev.Attempts + 1 // the attempts on record, and this last one
	}
	b.rec.push(o)
}

// recorded is the recorder's acknowledgement of n outcomes of s up to seq.
func (b *Bus) recorded(name string, seq int64, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.subs[name]
	if s == nil {
		return
	}
	s.unrecorded -= n
	if seq > s.position {
		s.position = seq
	}
	b.notifyProgressLocked()
}

// logCache holds the newest events of the log, read once for all the
// subscribers (one commit wakes them all): every event with from < seq <=
// to. A subscriber behind it reads the log itself.
type logCache struct {
	mu       sync.Mutex
	filled   bool
	from, to int64
	evs      []Event
	gen      uint64 // the bus's commit generation the cache has read up to
}

const cacheMax = 4096

// after returns the events after seq of hooks, and how far that looked
// (see readAfter), from the cache when it covers seq.
func (c *logCache) after(b *Bus, seq int64, hooks []string) ([]Event, int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.filled && seq < c.from {
		return b.readAfter(b.base, seq, hooks) // catching up: behind the cache
	}
	if gen := b.commitGen.Load(); !c.filled || gen != c.gen {
		start := c.to
		if !c.filled {
			start = seq
		}
		evs, upto, err := b.readAfter(b.base, start, nil)
		if err != nil {
			return nil, 0, err
		}
		if !c.filled {
			c.from, c.to, c.filled = start, start, true
		}
		c.evs = append(c.evs, evs...)
		c.to = max(c.to, upto)
		if len(evs) < readBatch {
			c.gen = gen // read everything committed before this generation
		}
		if n := len(c.evs); n > cacheMax {
			drop := n - cacheMax/2
			c.from = c.evs[drop-1].Seq
			c.evs = append([]Event(nil), c.evs[drop:]...)
		}
	}
	var out []Event
	for _, ev := range c.evs {
		if ev.Seq > seq && slices.Contains(hooks, ev.Hook) {
			out = append(out, ev)
			if len(out) == readBatch {
				return out, ev.Seq, nil
			}
		}
	}
	return out, c.to, nil
}

// watchCommits wakes every worker when another connection committed
// (PRAGMA data_version moved), and has events nobody takes settled.
func (b *Bus) watchCommits() {
	defer b.bgWG.Done()
	conn, err := b.readConn(b.base)
	if err != nil {
		if b.base.Err() == nil {
			b.log.Warn("watch the store for commits", "error", err)
		}
		return
	}
	defer conn.Close()
	var last int64 = -1
	t := time.NewTicker(b.watch)
	defer t.Stop()
	for {
		select {
		case <-b.base.Done():
			return
		case <-t.C:
		}
		var v int64
		if err := conn.QueryRowContext(b.base, `PRAGMA data_version`).Scan(&v); err != nil {
			continue
		}
		if v != last {
			// The first reading wakes everyone too: a commit made before
			// it and after a worker's last read would otherwise go unseen.
			b.commitGen.Add(1)
			b.WakeAll()
			b.rec.settleSoon()
			last = v
		}
	}
}

// WaitDelivered returns once every event up to seq was delivered (and
// recorded) to each subscriber that takes it and is being delivered to:
// here, or by another live process. Subscribers in error are skipped. A
// client waits through its plugin host.
func (b *Bus) WaitDelivered(ctx context.Context, seq int64) error {
	if r := b.remoteOf(); r != nil {
		return r.Wait(ctx, seq)
	}
	// A subscriber not known to have looked up to seq looks again (events
	// a process committed without a poke the watcher has not seen yet).
	b.mu.Lock()
	behind := false
	for _, s := range b.subs {
		behind = behind || (s.claimed && s.through < seq)
	}
	b.mu.Unlock()
	if behind {
		b.WakeAll()
	}
	for {
		b.mu.Lock()
		done := true
		local := map[string]bool{}
		for name, s := range b.subs {
			if !s.claimed {
				if !s.tried && len(b.hooksOfLocked(name)) > 0 {
					done = false // its first claim is on the way
				}
				continue
			}
			local[name] = true
			if s.suspended || s.later || len(b.hooksOfLocked(name)) == 0 {
				continue
			}
			if s.through < seq || s.unrecorded > 0 {
				done = false
			}
		}
		ch := b.progress
		b.mu.Unlock()
		if done {
			others, err := b.pendingElsewhere(ctx, seq)
			if err != nil {
				return err
			}
			if len(others) == 0 {
				return nil
			}
		}
		t := time.NewTimer(waitPollEvery)
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for hook delivery through seq %d: %w", seq, ctx.Err())
		}
		t.Stop()
	}
}

// waitDrained waits until plugin has taken every event up to seq (bounded
// by the callback timeout and ctx), so a synchronous call never overtakes
// an observer event committed before it.
func (b *Bus) waitDrained(ctx context.Context, plugin string, seq int64) {
	limit := b.Timeout()
	if limit <= 0 {
		limit = DefaultTimeout
	}
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		s := b.subs[plugin]
		ready := s == nil || s.suspended || len(b.hooksOfLocked(plugin)) == 0 || s.through >= seq ||
			(!s.claimed && s.tried) // another process delivers to it
		if !ready {
			s.poke()
		}
		ch := b.progress
		b.mu.Unlock()
		if ready {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
