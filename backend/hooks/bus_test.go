package hooks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/db/dbtest"
	"atrium/backend/hooks"
	"atrium/backend/hooks/hookstest"
)

var bg = context.Background()

// wait bounds every wait on a delivery, so a bug fails the test instead of
// hanging it.
const wait = 10 * time.Second

type payload struct {
	N int `json:"n"`
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newStore opens a fresh store on a fake clock.
func newStore(t *testing.T) (*dbtest.Clock, *db.DB) {
	t.Helper()
	clock := dbtest.NewClock()
	return clock, dbtest.Open(t, clock.Now)
}

// reopen opens a second handle on the same store file, as another process would.
func reopen(t *testing.T, d *db.DB, clock *dbtest.Clock) *db.DB {
	t.Helper()
	d2, err := db.Open(bg, d.Path, db.Options{Clock: clock.Now})
	if err != nil {
		t.Fatalf("reopen %s: %v", d.Path, err)
	}
	t.Cleanup(func() { _ = d2.Close() })
	return d2
}

// newBus builds a bus that is closed (bounded) when the test ends, before its
// store is closed.
func newBus(t *testing.T, d *db.DB, opts hooks.Options) *hooks.Bus {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet()
	}
	b := hooks.NewBus(d, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(bg, wait)
		defer cancel()
		_ = b.Close(ctx)
	})
	return b
}

func mustStart(t *testing.T, b *hooks.Bus) {
	t.Helper()
	if err := b.Start(bg); err != nil {
		t.Fatalf("start bus: %v", err)
	}
}

// mustEnqueue commits one event in its own transaction.
func mustEnqueue(t *testing.T, d *db.DB, b *hooks.Bus, hook string, p any) hooks.Event {
	t.Helper()
	var ev hooks.Event
	err := d.InTx(bg, func(tx *db.Tx) error {
		var err error
		ev, err = b.EnqueueTx(bg, tx, hook, p)
		return err
	})
	if err != nil {
		t.Fatalf("enqueue %s: %v", hook, err)
	}
	return ev
}

func mustFlush(t *testing.T, b *hooks.Bus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, wait)
	defer cancel()
	if err := b.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

func mustList(t *testing.T, d *db.DB, f hooks.LogFilter) []hooks.LoggedEvent {
	t.Helper()
	evs, err := hooks.ListEvents(bg, d, f)
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	return evs
}

// mustEvent returns the logged event with the given seq.
func mustEvent(t *testing.T, d *db.DB, seq int64) hooks.LoggedEvent {
	t.Helper()
	evs := mustList(t, d, hooks.LogFilter{AfterSeq: seq - 1, Limit: 1})
	if len(evs) != 1 || evs[0].Seq != seq {
		t.Fatalf("event %d not in the log: %+v", seq, evs)
	}
	return evs[0]
}

func count(t *testing.T, d *db.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := d.Read.Raw(q, args...).Scan(&n).Error; err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// statuses maps subscriber to delivery status.
func statuses(e hooks.LoggedEvent) map[string]string {
	out := map[string]string{}
	for _, d := range e.Deliveries {
		out[d.Subscriber] = d.Status
	}
	return out
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// sink records what one plugin received.
type sink struct {
	mu     sync.Mutex
	events []hooks.Event
	got    chan hooks.Event // buffered; a receive per event, for waiting
}

func (s *sink) handle(_ context.Context, ev hooks.Event) error {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	select {
	case s.got <- ev:
	default:
	}
	return nil
}

func (s *sink) Events() []hooks.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hooks.Event(nil), s.events...)
}

func (s *sink) Seqs() []int64 {
	var out []int64
	for _, e := range s.Events() {
		out = append(out, e.Seq)
	}
	return out
}

// subscribe registers a sink as plugin on hook.
func subscribe(t *testing.T, b *hooks.Bus, plugin, hook string) *sink {
	t.Helper()
	s := &sink{got: make(chan hooks.Event, 1024)}
	if _, err := b.RegisterHook(plugin, hook, s.handle); err != nil {
		t.Fatalf("register %s on %s: %v", plugin, hook, err)
	}
	return s
}

// gate is a channel closed exactly once, at the latest when the test ends.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate(t *testing.T) *gate {
	g := &gate{ch: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// syncBuffer is a concurrency-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records decodes the JSON log lines.
func (b *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b.buf.Bytes()))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("decode log: %v", err)
		}
		out = append(out, m)
	}
	return out
}

func TestRegisterHookRefusals(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	ok := func(context.Context, hooks.Event) error { return nil }
	scenarios := []struct {
		name   string
		plugin string
		hook   string
		fn     hooks.Handler
		code   apperr.Code
	}{
		{"unknown hook", "p", "on_session_explode", ok, apperr.Invalid},
		{"empty hook", "p", "", ok, apperr.Invalid},
		{"hook name is case sensitive", "p", "On_Session_Delete", ok, apperr.Invalid},
		{"nil callback", "p", hooks.OnSessionDelete, nil, apperr.Invalid},
		{"empty plugin name", "", hooks.OnSessionDelete, ok, apperr.Invalid},
		{"blank plugin name", "  \t", hooks.OnSessionDelete, ok, apperr.Invalid},
		{"sync hook", "p", hooks.PreLLMCall, ok, apperr.Invalid},
		{"observer hook", "p", hooks.PostCompaction, ok, ""},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			_, err := b.RegisterHook(sc.plugin, sc.hook, sc.fn)
			if got := apperr.CodeOf(err); got != sc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, sc.code)
			}
		})
	}
	// The plugin context refuses the same way and records no handle.
	pc := b.Plugin("ctx")
	if err := pc.RegisterHook(hooks.PreLLMCall, ok); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("context register of a sync hook: %v", err)
	}
	if err := pc.RegisterHook("nope", ok); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("context register of an unknown hook: %v", err)
	}
	for _, h := range []string{hooks.OnSessionDelete, hooks.PreLLMCall} {
		if subs := b.Subscribers(h); len(subs) != 0 {
			t.Fatalf("refused registrations left subscribers on %s: %v", h, subs)
		}
	}
	if subs := b.Subscribers(hooks.PostCompaction); fmt.Sprint(subs) != "[p]" {
		t.Fatalf("subscribers of post_compaction = %v, want [p]", subs)
	}
}

func TestHookTableIsStable(t *testing.T) {
	t.Parallel()
	// These names are frozen by the spec.
	for name, want := range map[string]hooks.Kind{
		"on_session_delete": hooks.Observer,
		"post_compaction":   hooks.Observer,
		"pre_llm_call":      hooks.Sync,
	} {
		got, err := hooks.Lookup(name)
		if err != nil || got != want {
			t.Errorf("Lookup(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	if _, err := hooks.Lookup("post_compact"); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("unknown name: %v", err)
	}
	// Names are only ever added: every shipped one must still be listed.
	names := hooks.Names()
	if !sort.StringsAreSorted(names) {
		t.Fatalf("Names() = %v, want them sorted", names)
	}
	for _, n := range []string{
		hooks.OnSessionStart, hooks.OnSessionEnd, hooks.OnSessionFinalize, hooks.OnSessionReset, hooks.OnSessionDelete,
		hooks.PostCompaction, hooks.PreLLMCall, hooks.PostLLMCall, hooks.PreToolCall, hooks.PostToolCall,
	} {
		if _, found := slices.BinarySearch(names, n); !found {
			t.Errorf("Names() lost %q", n)
		}
	}
}

func TestEnqueueBeforeStartIsRefused(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	err := d.InTx(bg, func(tx *db.Tx) error {
		_, err := b.EnqueueTx(bg, tx, hooks.OnSessionDelete, payload{})
		return err
	})
	if apperr.CodeOf(err) != apperr.Internal {
		t.Fatalf("enqueue on an unstarted bus: %v, want internal", err)
	}
	if n := count(t, d, `SELECT COUNT(*) FROM hook_events`); n != 0 {
		t.Fatalf("hook_events = %d, want 0", n)
	}
}

func TestEventsFireOnlyAfterCommit(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	scenarios := []struct {
		name string
		fn   func(tx *db.Tx, b *hooks.Bus) error
		// code is the InTx error's code; "" for success, "panic" for a panic.
		code apperr.Code
		rows int64
		want map[string]int
	}{
		{
			name: "commit",
			fn: func(tx *db.Tx, b *hooks.Bus) error {
				_, err := b.EnqueueTx(bg, tx, hooks.OnSessionDelete, payload{N: 1})
				return err
			},
			rows: 1, want: map[string]int{hooks.OnSessionDelete: 1, "*": 0},
		},
		{
			name: "two hooks in one commit",
			fn: func(tx *db.Tx, b *hooks.Bus) error {
				if _, err := b.EnqueueTx(bg, tx, hooks.OnSessionDelete, payload{N: 1}); err != nil {
					return err
				}
				_, err := b.EnqueueTx(bg, tx, hooks.PostCompaction, payload{N: 2})
				return err
			},
			rows: 2, want: map[string]int{hooks.OnSessionDelete: 1, hooks.PostCompaction: 1, "*": 0},
		},
		{
			name: "the transaction returns an error",
			fn: func(tx *db.Tx, b *hooks.Bus) error {
				if _, err := b.EnqueueTx(bg, tx, hooks.OnSessionDelete, payload{N: 1}); err != nil {
					return err
				}
				return boom
			},
			code: apperr.Internal, rows: 0, want: map[string]int{"*": 0},
		},
		{
			name: "unknown hook after a good one",
			fn: func(tx *db.Tx, b *hooks.Bus) error {
				if _, err := b.EnqueueTx(bg, tx, hooks.OnSessionDelete, payload{N: 1}); err != nil {
					return err
				}
				_, err := b.EnqueueTx(bg, tx, "on_session_vanish", payload{N: 2})
				return err
			},
			code: apperr.Invalid, rows: 0, want: map[string]int{"*": 0},
		},
		{
			name: "payload that cannot be encoded",
			fn: func(tx *db.Tx, b *hooks.Bus) error {
				if _, err := b.EnqueueTx(bg, tx, hooks.OnSessionDelete, payload{N: 1}); err != nil {
					return err
				}
				_, err := b.EnqueueTx(bg, tx, hooks.PostCompaction, map[string]any{"f": func() {}})
				return err
			},
			code: apperr.Internal, rows: 0, want: map[string]int{"*": 0},
		},
		{
			name: "the transaction panics",
			fn: func(tx *db.Tx, b *hooks.Bus) error {
				if _, err := b.EnqueueTx(bg, tx, hooks.OnSessionDelete, payload{N: 1}); err != nil {
					return err
				}
				panic("mid-transaction")
			},
			code: "panic", rows: 0, want: map[string]int{"*": 0},
		},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			_, d := newStore(t)
			b := newBus(t, d, hooks.Options{})
			rec := hookstest.Record(t, b)
			// Rule 1: the change is committed when the hook fires.
			var uncommitted atomic.Int32
			if _, err := b.RegisterHook("reader", hooks.OnSessionDelete, func(_ context.Context, ev hooks.Event) error {
				var n int64
				if err := d.Read.Raw(`SELECT COUNT(*) FROM hook_events WHERE event_id = ?`, ev.ID).Scan(&n).Error; err != nil || n != 1 {
					uncommitted.Add(1)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			mustStart(t, b)
			var code apperr.Code
			func() {
				defer func() {
					if r := recover(); r != nil {
						code = "panic"
					}
				}()
				code = apperr.CodeOf(d.InTx(bg, func(tx *db.Tx) error { return sc.fn(tx, b) }))
			}()
			if code != sc.code {
				t.Fatalf("InTx code = %q, want %q", code, sc.code)
			}
			rec.Expect(t, b, sc.want)
			if n := count(t, d, `SELECT COUNT(*) FROM hook_events`); n != sc.rows {
				t.Fatalf("hook_events = %d, want %d", n, sc.rows)
			}
			if n := uncommitted.Load(); n != 0 {
				t.Fatalf("%d callbacks ran before their event was visible to readers", n)
			}
			for _, e := range mustList(t, d, hooks.LogFilter{}) {
				if !e.Delivered || e.Redelivery {
					t.Fatalf("event %d: delivered=%v redelivery=%v", e.Seq, e.Delivered, e.Redelivery)
				}
			}
		})
	}
}

func TestEnqueueReturnsTheDeliveredEvent(t *testing.T) {
	t.Parallel()
	clock, d := newStore(t)
	// Not on a millisecond: the live event and the log must still agree.
	clock.Advance(1500 * time.Microsecond)
	b := newBus(t, d, hooks.Options{})
	s := subscribe(t, b, "p", hooks.OnSessionDelete)
	mustStart(t, b)
	want := hooks.SessionDelete{SessionID: "s1", Reason: hooks.ReasonDelete, Profile: "default", DeletedIDs: []string{"s1", "s2"}}
	ev := mustEnqueue(t, d, b, hooks.OnSessionDelete, want)
	mustFlush(t, b)
	got := s.Events()
	if len(got) != 1 {
		t.Fatalf("deliveries = %d, want 1", len(got))
	}
	g := got[0]
	if g.ID != ev.ID || g.Seq != ev.Seq || g.Hook != hooks.OnSessionDelete || g.Redelivery || !g.CreatedAt.Equal(ev.CreatedAt) {
		t.Fatalf("delivered %+v, enqueued %+v", g, ev)
	}
	var p hooks.SessionDelete
	if err := g.Decode(&p); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Fatalf("payload = %+v, want %+v", p, want)
	}
	logged := mustEvent(t, d, ev.Seq)
	if logged.EventID != ev.ID || !logged.CreatedAt.Equal(ev.CreatedAt) || string(logged.Payload) != string(ev.Payload) {
		t.Fatalf("logged %+v, enqueued %+v", logged, ev)
	}
}

func TestDeliveryIsInSeqOrderPerSubscriber(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{Timeout: 5 * time.Second})
	alpha := subscribe(t, b, "alpha", hooks.PostToolCall)
	beta := subscribe(t, b, "beta", hooks.PostToolCall)
	mustStart(t, b)
	var want []int64
	// 200 events: 40 transactions of 5.
	for i := 0; i < 40; i++ {
		err := d.InTx(bg, func(tx *db.Tx) error {
			for j := 0; j < 5; j++ {
				ev, err := b.EnqueueTx(bg, tx, hooks.PostToolCall, payload{N: i*5 + j})
				if err != nil {
					return err
				}
				want = append(want, ev.Seq)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	mustFlush(t, b)
	for name, s := range map[string]*sink{"alpha": alpha, "beta": beta} {
		if got := s.Seqs(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s got %d events in order\n%v\nwant\n%v", name, len(got), got, want)
		}
		for i, ev := range s.Events() {
			var p payload
			if err := ev.Decode(&p); err != nil || p.N != i {
				t.Fatalf("%s event %d carries n=%d (%v)", name, i, p.N, err)
			}
		}
	}
	if n := count(t, d, `SELECT COUNT(*) FROM hook_events WHERE delivered_at IS NULL`); n != 0 {
		t.Fatalf("%d events left undelivered", n)
	}
	if n := count(t, d, `SELECT COUNT(*) FROM hook_deliveries WHERE status = 'ok'`); n != 400 {
		t.Fatalf("ok deliveries = %d, want 400", n)
	}
}

func TestOneEventReachesEveryPluginInRegistrationOrder(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	var mu sync.Mutex
	calls := map[string][]string{}
	record := func(plugin, label string) hooks.Handler {
		return func(_ context.Context, ev hooks.Event) error {
			mu.Lock()
			calls[plugin] = append(calls[plugin], fmt.Sprintf("%s#%d", label, ev.Seq))
			mu.Unlock()
			return nil
		}
	}
	for _, r := range []struct{ plugin, label string }{
		{"p1", "first"}, {"p2", "only"}, {"p1", "second"}, {"p1", "third"},
	} {
		if _, err := b.RegisterHook(r.plugin, hooks.OnSessionEnd, record(r.plugin, r.label)); err != nil {
			t.Fatal(err)
		}
	}
	p3 := b.Plugin("p3")
	if err := p3.RegisterHook(hooks.OnSessionEnd, record("p3", "ctx")); err != nil {
		t.Fatal(err)
	}
	other := subscribe(t, b, "p4", hooks.PostCompaction)
	if subs := b.Subscribers(hooks.OnSessionEnd); fmt.Sprint(subs) != "[p1 p2 p3]" {
		t.Fatalf("subscribers = %v, want [p1 p2 p3]", subs)
	}
	mustStart(t, b)
	e1 := mustEnqueue(t, d, b, hooks.OnSessionEnd, payload{N: 1})
	e2 := mustEnqueue(t, d, b, hooks.OnSessionEnd, payload{N: 2})
	mustFlush(t, b)
	want := map[string][]string{
		"p1": {
			fmt.Sprintf("first#%d", e1.Seq), fmt.Sprintf("second#%d", e1.Seq), fmt.Sprintf("third#%d", e1.Seq),
			fmt.Sprintf("first#%d", e2.Seq), fmt.Sprintf("second#%d", e2.Seq), fmt.Sprintf("third#%d", e2.Seq),
		},
		"p2": {fmt.Sprintf("only#%d", e1.Seq), fmt.Sprintf("only#%d", e2.Seq)},
		"p3": {fmt.Sprintf("ctx#%d", e1.Seq), fmt.Sprintf("ctx#%d", e2.Seq)},
	}
	mu.Lock()
	got := fmt.Sprint(calls)
	mu.Unlock()
	if got != fmt.Sprint(want) {
		t.Fatalf("calls\n got %s\nwant %v", got, want)
	}
	if n := len(other.Events()); n != 0 {
		t.Fatalf("a plugin on another hook got %d events", n)
	}
	for _, e := range []hooks.Event{e1, e2} {
		le := mustEvent(t, d, e.Seq)
		// One delivery row per plugin, not per callback.
		if !le.Delivered || fmt.Sprint(statuses(le)) != "map[p1:ok p2:ok p3:ok]" || len(le.Deliveries) != 3 {
			t.Fatalf("event %d: delivered=%v deliveries=%+v", e.Seq, le.Delivered, le.Deliveries)
		}
	}
}

func TestFailingCallbacksAreIsolatedAndRecorded(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	logs := &syncBuffer{}
	b := newBus(t, d, hooks.Options{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	var panicky, erroring atomic.Int32
	must := func(_ hooks.Handle, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.RegisterHook("panicky", hooks.OnSessionDelete, func(context.Context, hooks.Event) error {
		panicky.Add(1)
		panic("plugin bug")
	}))
	must(b.RegisterHook("erroring", hooks.OnSessionDelete, func(context.Context, hooks.Event) error {
		erroring.Add(1)
		return errors.New("disk full")
	}))
	// A plugin whose first callback panics still gets its second one called.
	must(b.RegisterHook("mixed", hooks.OnSessionDelete, func(context.Context, hooks.Event) error {
		panic(errors.New("first callback"))
	}))
	mixed := &sink{got: make(chan hooks.Event, 16)}
	must(b.RegisterHook("mixed", hooks.OnSessionDelete, mixed.handle))
	good := subscribe(t, b, "good", hooks.OnSessionDelete)
	var actMu sync.Mutex
	activity := map[string]int{}
	b.OnActivity(func(a hooks.Activity) {
		actMu.Lock()
		activity[a.Subscriber+":"+a.Status]++
		actMu.Unlock()
	})
	mustStart(t, b)
	e1 := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 1})
	e2 := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 2})
	mustFlush(t, b)

	if panicky.Load() != 2 || erroring.Load() != 2 {
		t.Fatalf("calls: panicky=%d erroring=%d, want 2 each (a failure must not stop a plugin's later events)", panicky.Load(), erroring.Load())
	}
	for name, s := range map[string]*sink{"good": good, "mixed": mixed} {
		if got := s.Seqs(); fmt.Sprint(got) != fmt.Sprint([]int64{e1.Seq, e2.Seq}) {
			t.Fatalf("%s got %v", name, got)
		}
	}
	for _, e := range []hooks.Event{e1, e2} {
		le := mustEvent(t, d, e.Seq)
		if !le.Delivered {
			t.Fatalf("event %d not marked delivered", e.Seq)
		}
		want := "map[erroring:failed good:ok mixed:failed panicky:failed]"
		if got := fmt.Sprint(statuses(le)); got != want {
			t.Fatalf("event %d statuses = %s, want %s", e.Seq, got, want)
		}
		for _, dl := range le.Deliveries {
			if (dl.Status == "failed") != (dl.Error != "") {
				t.Fatalf("event %d delivery %+v: a failure carries its error, a success none", e.Seq, dl)
			}
		}
	}
	actMu.Lock()
	gotAct := fmt.Sprint(activity)
	actMu.Unlock()
	if want := "map[erroring:failed:2 good:ok:2 mixed:failed:2 panicky:failed:2]"; gotAct != want {
		t.Fatalf("activity = %s, want %s", gotAct, want)
	}
	// Rule 2: each failure is logged with the plugin's name: a warning the
	// first time (naming the fields the hook provides), identical repeats at
	// debug.
	logged, warned := map[string]int{}, map[string]int{}
	for _, r := range logs.records(t) {
		if p, ok := r["plugin"].(string); ok && r["event_id"] != nil {
			logged[p]++
			if r["level"] == "WARN" {
				warned[p]++
				if r["provides"] == nil {
					t.Fatalf("the first warning does not say which fields the hook provides: %v", r)
				}
			}
		}
	}
	// mixed has one failing callback per event.
	if want := "map[erroring:2 mixed:2 panicky:2]"; fmt.Sprint(logged) != want {
		t.Fatalf("failures logged per plugin = %v, want %s", logged, want)
	}
	if want := "map[erroring:1 mixed:1 panicky:1]"; fmt.Sprint(warned) != want {
		t.Fatalf("warnings per plugin = %v, want one per distinct failure: %s", warned, want)
	}
}

func TestHangingCallbackIsCutOffAndReplaced(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{Timeout: timeout})
	if b.Timeout() != timeout {
		t.Fatalf("Timeout() = %s", b.Timeout())
	}
	release := newGate(t) // opened at test end, after the assertions
	entered := make(chan struct{})
	var hungCalls atomic.Int32
	hung := &sink{got: make(chan hooks.Event, 16)}
	if _, err := b.RegisterHook("hung", hooks.OnSessionDelete, func(ctx context.Context, ev hooks.Event) error {
		if hungCalls.Add(1) == 1 {
			close(entered)
			<-release.ch // ignores its ctx: only the bus's timeout frees the plugin
			return nil
		}
		return hung.handle(ctx, ev)
	}); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		err         error
		hasDeadline bool
		deadline    time.Time
	}
	coop := make(chan seen, 1)
	var coopCalls atomic.Int32
	if _, err := b.RegisterHook("cooperative", hooks.OnSessionDelete, func(ctx context.Context, ev hooks.Event) error {
		if coopCalls.Add(1) > 1 {
			return nil
		}
		dl, ok := ctx.Deadline()
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		coop <- seen{err: ctx.Err(), hasDeadline: ok, deadline: dl}
		return ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	fast := subscribe(t, b, "fast", hooks.OnSessionDelete)
	mustStart(t, b)

	start := time.Now()
	e1 := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 1})
	if elapsed := time.Since(start); elapsed >= timeout {
		t.Fatalf("enqueue+commit took %s: the caller waited for callbacks", elapsed)
	}
	recv(t, entered, "the hung callback")
	if ev := recv(t, fast.got, "the fast plugin"); ev.ID != e1.ID {
		t.Fatalf("fast plugin got %s first, want %s", ev.ID, e1.ID)
	}
	e2 := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 2})
	e3 := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 3})
	mustFlush(t, b) // returns although the hung callback never does

	s := recv(t, coop, "the cooperative callback")
	if !errors.Is(s.err, context.DeadlineExceeded) {
		t.Fatalf("cooperative callback saw ctx.Err() = %v, want deadline exceeded", s.err)
	}
	if !s.hasDeadline || s.deadline.Before(start) || s.deadline.After(time.Now()) {
		t.Fatalf("callback deadline = %v (set %v)", s.deadline, s.hasDeadline)
	}
	// The hung plugin's worker was replaced: its later events arrive, in order.
	if got := hung.Seqs(); fmt.Sprint(got) != fmt.Sprint([]int64{e2.Seq, e3.Seq}) {
		t.Fatalf("hung plugin later got %v, want [%d %d]", got, e2.Seq, e3.Seq)
	}
	if got := fast.Seqs(); fmt.Sprint(got) != fmt.Sprint([]int64{e1.Seq, e2.Seq, e3.Seq}) {
		t.Fatalf("fast plugin got %v", got)
	}
	le := mustEvent(t, d, e1.Seq)
	if got := fmt.Sprint(statuses(le)); !le.Delivered || got != "map[cooperative:timeout fast:ok hung:timeout]" {
		t.Fatalf("event 1: delivered=%v statuses=%s", le.Delivered, got)
	}
	for _, dl := range le.Deliveries {
		if dl.Status == "timeout" && dl.Error == "" {
			t.Fatalf("timed-out delivery without an error: %+v", dl)
		}
	}
	for _, e := range []hooks.Event{e2, e3} {
		le := mustEvent(t, d, e.Seq)
		if got := fmt.Sprint(statuses(le)); !le.Delivered || got != "map[cooperative:ok fast:ok hung:ok]" {
			t.Fatalf("event %d: delivered=%v statuses=%s", e.Seq, le.Delivered, got)
		}
	}
	if n := hungCalls.Load(); n != 3 {
		t.Fatalf("hung plugin called %d times, want 3", n)
	}
}

func TestNormalizeTimeout(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name string
		in   time.Duration
		want time.Duration
	}{
		{"negative disables", -time.Second, 0},
		{"zero disables", 0, 0},
		{"small kept", time.Millisecond, time.Millisecond},
		{"default kept", hooks.DefaultTimeout, 30 * time.Second},
		{"cap kept", 600 * time.Second, 600 * time.Second},
		{"just above the cap", 600*time.Second + time.Nanosecond, 600 * time.Second},
		{"hour capped", time.Hour, 600 * time.Second},
	}
	_, d := newStore(t)
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if got := hooks.NormalizeTimeout(sc.in); got != sc.want {
				t.Fatalf("NormalizeTimeout(%s) = %s, want %s", sc.in, got, sc.want)
			}
			if got := newBus(t, d, hooks.Options{Timeout: sc.in}).Timeout(); got != sc.want {
				t.Fatalf("bus Timeout() = %s, want %s", got, sc.want)
			}
		})
	}
}

func TestDisabledTimeoutRunsCallbacksUnbounded(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{Timeout: -1})
	release := newGate(t)
	type seen struct {
		hasDeadline bool
		errBefore   error
		errAfter    error
	}
	slow := make(chan seen, 1)
	entered := make(chan struct{})
	if _, err := b.RegisterHook("slow", hooks.PostCompaction, func(ctx context.Context, ev hooks.Event) error {
		_, ok := ctx.Deadline()
		before := ctx.Err()
		close(entered)
		select {
		case <-release.ch:
		case <-ctx.Done():
		}
		slow <- seen{hasDeadline: ok, errBefore: before, errAfter: ctx.Err()}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	fast := subscribe(t, b, "fast", hooks.PostCompaction)
	mustStart(t, b)
	// The commit returns although a callback blocks indefinitely.
	ev := mustEnqueue(t, d, b, hooks.PostCompaction, payload{N: 1})
	recv(t, entered, "the slow callback")
	if got := recv(t, fast.got, "the fast plugin"); got.ID != ev.ID {
		t.Fatalf("fast got %s", got.ID)
	}
	// Nothing cuts the slow callback off: Flush waits for it.
	short, cancel := context.WithTimeout(bg, 150*time.Millisecond)
	err := b.Flush(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("flush while a callback runs unbounded: %v, want deadline exceeded", err)
	}
	if le := mustEvent(t, d, ev.Seq); le.Delivered {
		t.Fatal("event marked delivered while a callback is still running")
	}
	release.open()
	s := recv(t, slow, "the slow callback's return")
	if s.hasDeadline || s.errBefore != nil || s.errAfter != nil {
		t.Fatalf("unbounded callback ctx: deadline=%v err before=%v after=%v", s.hasDeadline, s.errBefore, s.errAfter)
	}
	mustFlush(t, b)
	if le := mustEvent(t, d, ev.Seq); !le.Delivered || fmt.Sprint(statuses(le)) != "map[fast:ok slow:ok]" {
		t.Fatalf("after release: delivered=%v %+v", le.Delivered, le.Deliveries)
	}
}

func TestUnregisterStopsFutureDeliveries(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	stay := subscribe(t, b, "stay", hooks.OnSessionDelete)
	gone := &sink{got: make(chan hooks.Event, 16)}
	h, err := b.RegisterHook("gone", hooks.OnSessionDelete, gone.handle)
	if err != nil {
		t.Fatal(err)
	}
	pc := b.Plugin("unloaded")
	if pc.Name() != "unloaded" {
		t.Fatalf("Name() = %q", pc.Name())
	}
	unloaded := &sink{got: make(chan hooks.Event, 16)}
	for _, hook := range []string{hooks.OnSessionDelete, hooks.PostCompaction} {
		if err := pc.RegisterHook(hook, unloaded.handle); err != nil {
			t.Fatal(err)
		}
	}
	mustStart(t, b)
	e1 := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 1})
	c1 := mustEnqueue(t, d, b, hooks.PostCompaction, payload{N: 1})
	mustFlush(t, b)

	h.Unregister()
	h.Unregister()              // twice is harmless
	hooks.Handle{}.Unregister() // so is the zero handle
	pc.Unload()
	pc.Unload()
	if subs := b.Subscribers(hooks.OnSessionDelete); fmt.Sprint(subs) != "[stay]" {
		t.Fatalf("subscribers after unregister = %v", subs)
	}
	if subs := b.Subscribers(hooks.PostCompaction); len(subs) != 0 {
		t.Fatalf("post_compaction subscribers after unload = %v", subs)
	}
	e2 := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 2})
	c2 := mustEnqueue(t, d, b, hooks.PostCompaction, payload{N: 2})
	mustFlush(t, b)

	if got := gone.Seqs(); fmt.Sprint(got) != fmt.Sprint([]int64{e1.Seq}) {
		t.Fatalf("unregistered plugin got %v, want only [%d]", got, e1.Seq)
	}
	if got := unloaded.Seqs(); fmt.Sprint(got) != fmt.Sprint([]int64{e1.Seq, c1.Seq}) {
		t.Fatalf("unloaded plugin got %v, want [%d %d]", got, e1.Seq, c1.Seq)
	}
	if got := stay.Seqs(); fmt.Sprint(got) != fmt.Sprint([]int64{e1.Seq, e2.Seq}) {
		t.Fatalf("remaining plugin got %v", got)
	}
	// An unloaded plugin may be restarting: its events wait for it.
	if le := mustEvent(t, d, c2.Seq); le.Delivered || fmt.Sprint(le.Pending) != "[unloaded]" {
		t.Fatalf("event of an unloaded plugin: %+v", le)
	}
	// Once the runtime says it is gone (disabled, removed), nothing waits
	// for it: the event without a subscriber is delivered.
	if err := b.Retire(bg, []string{"stay"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the event without subscribers settled", func() bool { return mustEvent(t, d, c2.Seq).Delivered })
	if le := mustEvent(t, d, c2.Seq); len(le.Deliveries) != 0 || len(le.Pending) != 0 {
		t.Fatalf("event without subscribers: %+v", le)
	}
	// Registering again (enabled again) resumes from the position it kept:
	// it catches up on what it missed, in order, as first deliveries.
	again := &sink{got: make(chan hooks.Event, 4)}
	if err := pc.RegisterHook(hooks.PostCompaction, again.handle); err != nil {
		t.Fatal(err)
	}
	c3 := mustEnqueue(t, d, b, hooks.PostCompaction, payload{N: 3})
	mustFlush(t, b)
	if got := again.Seqs(); fmt.Sprint(got) != fmt.Sprint([]int64{c2.Seq, c3.Seq}) {
		t.Fatalf("re-registered plugin got %v, want [%d %d]", got, c2.Seq, c3.Seq)
	}
	for _, ev := range again.Events() {
		if ev.Redelivery {
			t.Fatalf("a catch-up is not a redelivery: %+v", ev)
		}
	}
}

// A plugin disabled and enabled again before its worker runs (here: busy in
// a callback through both) keeps its claim; its row must still become
// active again, or events would stop waiting for a plugin that runs.
func TestRetiredThenReRegisteredBeforeItsWorkerRunsIsActiveAgain(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	pc := b.Plugin("p")
	if err := pc.RegisterHook(hooks.OnSessionDelete, func(context.Context, hooks.Event) error {
		once.Do(func() { close(entered); <-release })
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, b)
	mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 1})
	recv(t, entered, "the callback entered")
	active := func() bool {
		states, err := b.SubscriberStates(bg)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range states {
			if s.Name == "p" {
				return s.Active
			}
		}
		return false
	}
	if !active() {
		t.Fatal("the registered plugin is not active")
	}
	pc.Unload()
	if err := b.Retire(bg, nil); err != nil {
		t.Fatal(err)
	}
	if active() {
		t.Fatal("a retired plugin is still active")
	}
	again := &sink{got: make(chan hooks.Event, 4)}
	if err := b.Plugin("p").RegisterHook(hooks.OnSessionDelete, again.handle); err != nil {
		t.Fatal(err)
	}
	close(release)
	waitFor(t, "the plugin registered again is active again", active)
	ev := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 2})
	mustFlush(t, b)
	if got := again.Seqs(); fmt.Sprint(got) != fmt.Sprint([]int64{ev.Seq}) {
		t.Fatalf("registered again: got %v, want [%d]", got, ev.Seq)
	}
}

// waitFor polls cond until it holds, failing the test after wait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestListEventsAndPruneDelivered(t *testing.T) {
	t.Parallel()
	clock, d := newStore(t)
	day := 24 * time.Hour
	b := newBus(t, d, hooks.Options{Lease: time.Hour})
	rec := hookstest.Record(t, b)
	mustStart(t, b)
	// "idx" takes on_session_delete in a process that dies after the first one.
	crashed := newBus(t, d, hooks.Options{Lease: time.Hour})
	idx := subscribe(t, crashed, "idx", hooks.OnSessionDelete)
	mustStart(t, crashed)

	t0 := clock.Now()
	oldDel := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 1})
	oldComp := mustEnqueue(t, d, b, hooks.PostCompaction, payload{N: 2})
	mustFlush(t, b)
	mustFlush(t, crashed)
	crashed.SimulateCrash()
	pending := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 3})
	mustFlush(t, b)
	clock.Advance(20 * day)
	recent := mustEnqueue(t, d, b, hooks.PostCompaction, payload{N: 4})
	mustFlush(t, b)
	rec.Expect(t, b, map[string]int{hooks.OnSessionDelete: 2, hooks.PostCompaction: 2, "*": 0})
	if got := idx.Seqs(); fmt.Sprint(got) != fmt.Sprint([]int64{oldDel.Seq}) {
		t.Fatalf("idx got %v", got)
	}

	seqs := func(evs []hooks.LoggedEvent) string {
		var out []int64
		for _, e := range evs {
			out = append(out, e.Seq)
		}
		return fmt.Sprint(out)
	}
	all := mustList(t, d, hooks.LogFilter{})
	if got, want := seqs(all), fmt.Sprint([]int64{oldDel.Seq, oldComp.Seq, pending.Seq, recent.Seq}); got != want {
		t.Fatalf("log order = %s, want %s (oldest first)", got, want)
	}
	for i, want := range []bool{true, true, false, true} {
		if all[i].Delivered != want {
			t.Fatalf("event %d delivered = %v, want %v", all[i].Seq, all[i].Delivered, want)
		}
	}
	if !all[0].CreatedAt.Equal(t0) || !all[3].CreatedAt.Equal(t0.Add(20*day)) {
		t.Fatalf("created_at = %v, %v", all[0].CreatedAt, all[3].CreatedAt)
	}
	if fmt.Sprint(statuses(all[2])) != "map[recorder:ok]" || fmt.Sprint(all[2].Pending) != "[idx]" {
		t.Fatalf("undelivered event: deliveries %+v, pending %v", all[2].Deliveries, all[2].Pending)
	}
	if fmt.Sprint(statuses(all[0])) != "map[idx:ok recorder:ok]" || !all[0].Deliveries[0].DeliveredAt.Equal(t0) || len(all[0].Pending) != 0 {
		t.Fatalf("deliveries of the first event = %+v", all[0].Deliveries)
	}
	filters := []struct {
		name string
		f    hooks.LogFilter
		want []int64
	}{
		{"by hook", hooks.LogFilter{Hook: hooks.PostCompaction}, []int64{oldComp.Seq, recent.Seq}},
		{"by other hook", hooks.LogFilter{Hook: hooks.OnSessionDelete}, []int64{oldDel.Seq, pending.Seq}},
		{"hook nobody used", hooks.LogFilter{Hook: hooks.OnSessionReset}, nil},
		{"after seq", hooks.LogFilter{AfterSeq: oldComp.Seq}, []int64{pending.Seq, recent.Seq}},
		{"limit", hooks.LogFilter{Limit: 2}, []int64{oldDel.Seq, oldComp.Seq}},
		{"hook after seq with limit", hooks.LogFilter{Hook: hooks.OnSessionDelete, AfterSeq: oldDel.Seq, Limit: 5}, []int64{pending.Seq}},
	}
	for _, sc := range filters {
		t.Run(sc.name, func(t *testing.T) {
			if got := seqs(mustList(t, d, sc.f)); got != fmt.Sprint(sc.want) {
				t.Fatalf("got %s, want %v", got, sc.want)
			}
		})
	}
	if _, err := hooks.ListEvents(bg, d, hooks.LogFilter{Hook: "on_everything"}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("unknown hook filter: %v", err)
	}

	// Day 31: the two day-0 deliveries are past the 30-day retention, and
	// so is idx's position (nobody has delivered to it since day 0): it is
	// dropped, and the event it held back is delivered to nobody more.
	clock.Advance(11 * day)
	n, err := hooks.PruneDelivered(bg, d, hooks.DefaultEventRetention)
	if err != nil || n != 2 {
		t.Fatalf("prune = %d, %v; want 2", n, err)
	}
	if got := seqs(mustList(t, d, hooks.LogFilter{})); got != fmt.Sprint([]int64{pending.Seq, recent.Seq}) {
		t.Fatalf("after prune: %s", got)
	}
	if c := count(t, d, `SELECT COUNT(*) FROM hook_deliveries WHERE seq IN (?, ?)`, oldDel.Seq, oldComp.Seq); c != 0 {
		t.Fatalf("%d delivery rows of pruned events left", c)
	}
	if c := count(t, d, `SELECT COUNT(*) FROM hook_subscribers WHERE name = 'idx'`); c != 0 {
		t.Fatal("the stale position of idx was kept")
	}
	if le := mustEvent(t, d, pending.Seq); !le.Delivered || len(le.Pending) != 0 {
		t.Fatalf("event held back by a dropped subscriber: %+v", le)
	}
	// A year on, everything delivered goes.
	clock.Advance(365 * day)
	if n, err := hooks.PruneDelivered(bg, d, hooks.DefaultEventRetention); err != nil || n != 2 {
		t.Fatalf("second prune = %d, %v; want 2", n, err)
	}
	if left := mustList(t, d, hooks.LogFilter{}); len(left) != 0 {
		t.Fatalf("left: %+v", left)
	}
	// The recorder's position is claimed by a live process: kept.
	if c := count(t, d, `SELECT COUNT(*) FROM hook_subscribers WHERE name = 'recorder'`); c != 1 {
		t.Fatal("the position of a live subscriber was dropped")
	}
	// The log is empty, yet the next event is given a seq past every one it
	// held, so the recorder (standing at recent's) takes it.
	next := mustEnqueue(t, d, b, hooks.PostCompaction, payload{N: 5})
	if next.Seq != recent.Seq+1 {
		t.Fatalf("the event after an emptied log has seq %d, want %d", next.Seq, recent.Seq+1)
	}
	mustFlush(t, b)
	rec.Expect(t, b, map[string]int{hooks.OnSessionDelete: 2, hooks.PostCompaction: 3, "*": 0})
}

// An event no plugin takes is delivered when it is committed, and goes
// with the log's retention; so does one a store written before that kept
// pending for nobody. An event a plugin takes waits for it.
func TestEventsNobodyTakesAreDeliveredAtOnceAndPruned(t *testing.T) {
	t.Parallel()
	clock, d := newStore(t)
	day := 24 * time.Hour
	b := newBus(t, d, hooks.Options{})
	idx := subscribe(t, b, "idx", hooks.OnSessionDelete)
	release := newGate(t)
	if _, err := b.RegisterHook("slow", hooks.PostCompaction, func(context.Context, hooks.Event) error { <-release.ch; return nil }); err != nil {
		t.Fatal(err)
	}
	mustStart(t, b)
	waitFor(t, "both claimed", func() bool {
		st, _ := b.SubscriberStates(bg)
		return len(st) == 2 && st[0].ClaimedPID > 0 && st[1].ClaimedPID > 0
	})
	nobody := mustEnqueue(t, d, b, hooks.OnSessionFinalize, payload{N: 1})
	taken := mustEnqueue(t, d, b, hooks.PostCompaction, payload{N: 2})
	if le := mustEvent(t, d, nobody.Seq); !le.Delivered || len(le.Pending) != 0 {
		t.Fatalf("an event nobody takes, right after its commit: %+v", le)
	}
	if le := mustEvent(t, d, taken.Seq); le.Delivered || fmt.Sprint(le.Pending) != "[slow]" {
		t.Fatalf("an event a plugin takes, before it did: %+v", le)
	}
	if c := count(t, d, `SELECT count(*) FROM hook_events INDEXED BY hook_events_pending WHERE delivered_at IS NULL`); c != 1 {
		t.Fatalf("%d events pending, want 1", c)
	}
	release.open()
	mustFlush(t, b)
	if got := idx.Seqs(); len(got) != 0 {
		t.Fatalf("idx took %v", got)
	}
	// What an older store holds (after the last delivery, which settles):
	// an event left pending though nobody takes it.
	if err := d.InTx(bg, func(tx *db.Tx) error {
		_, err := tx.Exec(bg, `INSERT INTO hook_events (seq, event_id, hook, payload, created_at) VALUES (?, 'old', ?, '{}', ?)`,
			taken.Seq+1, hooks.OnSessionReset, clock.Now().UnixMilli())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(40 * day)
	if n, err := hooks.PruneDelivered(bg, d, hooks.DefaultEventRetention); err != nil || n != 2 {
		t.Fatalf("prune = %d, %v; want the two delivered events", n, err)
	}
	if le := mustEvent(t, d, taken.Seq+1); !le.Delivered {
		t.Fatalf("the old event nobody takes was not settled by the prune: %+v", le)
	}
	clock.Advance(40 * day)
	if n, err := hooks.PruneDelivered(bg, d, hooks.DefaultEventRetention); err != nil || n != 1 {
		t.Fatalf("second prune = %d, %v; want the old event", n, err)
	}
	if left := mustList(t, d, hooks.LogFilter{}); len(left) != 0 {
		t.Fatalf("left: %+v", left)
	}
}

func TestCloseWaitsForPendingDeliveries(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	release := newGate(t)
	var returned atomic.Bool
	if _, err := b.RegisterHook("slow", hooks.OnSessionDelete, func(context.Context, hooks.Event) error {
		<-release.ch
		returned.Store(true)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, b)
	ev := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 1})
	closed := make(chan error, 1)
	go func() { closed <- b.Close(bg) }()
	release.open()
	if err := recv(t, closed, "Close"); err != nil {
		t.Fatalf("close: %v", err)
	}
	if !returned.Load() {
		t.Fatal("Close returned before the pending callback did")
	}
	if le := mustEvent(t, d, ev.Seq); !le.Delivered || fmt.Sprint(statuses(le)) != "map[slow:ok]" {
		t.Fatalf("after close: %+v", le)
	}
	if n := count(t, d, `SELECT COUNT(*) FROM processes WHERE id = ?`, b.ProcessID()); n != 0 {
		t.Fatal("process row left after Close")
	}
	if err := b.Close(bg); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestCloseIsBoundedAndLeavesUndeliveredEventsForTheNextProcess(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	release := newGate(t)
	entered := make(chan struct{}, 1)
	if _, err := b.RegisterHook("stuck", hooks.OnSessionDelete, func(context.Context, hooks.Event) error {
		entered <- struct{}{}
		<-release.ch
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, b)
	ev := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 1})
	recv(t, entered, "the stuck callback")
	short, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	err := b.Close(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("bounded close: %v, want deadline exceeded", err)
	}
	if n := count(t, d, `SELECT COUNT(*) FROM processes WHERE id = ?`, b.ProcessID()); n != 0 {
		t.Fatal("process row left after Close")
	}
	if le := mustEvent(t, d, ev.Seq); le.Delivered {
		t.Fatal("event marked delivered although its callback never returned")
	}
	// The claim is withdrawn: the next process delivers at once, flagged as
	// a redelivery (the stuck callback had it in hand).
	next := newBus(t, d, hooks.Options{})
	got := subscribe(t, next, "stuck", hooks.OnSessionDelete)
	mustStart(t, next)
	mustFlush(t, next)
	if evs := got.Events(); len(evs) != 1 || evs[0].ID != ev.ID || !evs[0].Redelivery {
		t.Fatalf("next process got %+v", evs)
	}
	if le := mustEvent(t, d, ev.Seq); !le.Delivered || !le.Redelivery {
		t.Fatalf("after the redelivery: %+v", le)
	}
}

func TestStartIsIdempotentAndAProcessWithoutSubscribersWritesNoRow(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	mustStart(t, b)
	mustStart(t, b)
	mustEnqueue(t, d, b, hooks.OnSessionEnd, payload{})
	mustFlush(t, b)
	if n := count(t, d, `SELECT COUNT(*) FROM processes`); n != 0 {
		t.Fatalf("processes = %d, want 0: a process that delivers nothing claims nothing", n)
	}
	s := subscribe(t, b, "late", hooks.OnSessionEnd)
	ev := mustEnqueue(t, d, b, hooks.OnSessionEnd, payload{})
	mustFlush(t, b)
	if n := count(t, d, `SELECT COUNT(*) FROM processes WHERE id = ?`, b.ProcessID()); n != 1 {
		t.Fatalf("processes = %d, want 1 once it delivers", n)
	}
	if got := s.Seqs(); fmt.Sprint(got) != fmt.Sprint([]int64{ev.Seq}) {
		t.Fatalf("a subscriber registered after Start got %v, want only what came after it", got)
	}
}

// Commits racing from many goroutines still reach each plugin in seq order:
// deliveries are queued before the next transaction of the process begins.
func TestConcurrentCommitsAreDeliveredInSeqOrder(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{Timeout: time.Second})
	var mu sync.Mutex
	var seqs []int64
	if _, err := b.RegisterHook("order", hooks.OnSessionEnd, func(_ context.Context, ev hooks.Event) error {
		mu.Lock()
		seqs = append(seqs, ev.Seq)
		mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, b)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				mustEnqueue(t, d, b, hooks.OnSessionEnd, payload{N: i})
			}
		}()
	}
	wg.Wait()
	mustFlush(t, b)
	mu.Lock()
	defer mu.Unlock()
	if len(seqs) != 800 {
		t.Fatalf("delivered %d of 800", len(seqs))
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] <= seqs[i-1] {
			t.Fatalf("out of order at %d: %d after %d", i, seqs[i], seqs[i-1])
		}
	}
}

func TestEnqueueAfterCloseIsRefused(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	mustStart(t, b)
	if err := b.Close(bg); err != nil {
		t.Fatal(err)
	}
	err := d.InTx(bg, func(tx *db.Tx) error {
		_, err := b.EnqueueTx(bg, tx, hooks.OnSessionEnd, payload{})
		return err
	})
	if apperr.CodeOf(err) != apperr.Internal {
		t.Fatalf("enqueue after close: %v", err)
	}
}
