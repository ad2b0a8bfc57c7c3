package hooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/hooks/hookstest"
)

// A client commits while no process delivers; the next process that runs
// the subscriber delivers from the subscriber's own position, in order,
// once, as first deliveries. A subscriber never seen before starts at the
// head of the log.
func TestEventsCommittedWhileNobodyDeliversAreDeliveredByTheNextProcess(t *testing.T) {
	t.Parallel()
	clock, d := newStore(t)
	a := newBus(t, d, hooks.Options{})
	first := subscribe(t, a, "idx", hooks.OnSessionDelete)
	mustStart(t, a)
	e1 := mustEnqueue(t, d, a, hooks.OnSessionDelete, payload{N: 1})
	mustFlush(t, a)
	if err := a.Close(bg); err != nil {
		t.Fatal(err)
	}
	if got := first.Seqs(); fmt.Sprint(got) != fmt.Sprint([]int64{e1.Seq}) {
		t.Fatalf("A got %v", got)
	}

	client := newBus(t, d, hooks.Options{}) // no subscriber: a command of a client
	mustStart(t, client)
	e2 := mustEnqueue(t, d, client, hooks.OnSessionDelete, payload{N: 2})
	e3 := mustEnqueue(t, d, client, hooks.OnSessionDelete, payload{N: 3})
	if le := mustEvent(t, d, e2.Seq); le.Delivered || fmt.Sprint(le.Pending) != "[idx]" {
		t.Fatalf("e2 while nobody delivers: %+v", le)
	}

	b := newBus(t, reopen(t, d, clock), hooks.Options{})
	again := subscribe(t, b, "idx", hooks.OnSessionDelete)
	fresh := subscribe(t, b, "fresh", hooks.OnSessionDelete)
	mustStart(t, b)
	mustFlush(t, b)
	if got := again.Seqs(); fmt.Sprint(got) != fmt.Sprint([]int64{e2.Seq, e3.Seq}) {
		t.Fatalf("idx in B got %v, want [%d %d]", got, e2.Seq, e3.Seq)
	}
	for _, ev := range again.Events() {
		if ev.Redelivery {
			t.Fatalf("never handed out, yet flagged: %+v", ev)
		}
	}
	if got := fresh.Seqs(); len(got) != 0 {
		t.Fatalf("a new subscriber got history: %v", got)
	}
	for _, seq := range []int64{e2.Seq, e3.Seq} {
		if le := mustEvent(t, d, seq); !le.Delivered || le.Redelivery || fmt.Sprint(statuses(le)) != "map[idx:ok]" {
			t.Fatalf("event %d after B: %+v", seq, le)
		}
	}
	if err := b.Close(bg); err != nil {
		t.Fatal(err)
	}
	c := newBus(t, d, hooks.Options{})
	later := subscribe(t, c, "idx", hooks.OnSessionDelete)
	mustStart(t, c)
	mustFlush(t, c)
	if got := later.Seqs(); len(got) != 0 {
		t.Fatalf("C delivered again: %v", got)
	}
}

// A process that dies while a plugin has an event in hand: the next
// process redelivers it flagged, with its event_id; what was committed
// before it took over is flagged too (the dead process's hand-outs are not
// written down), what comes after is not.
func TestACrashMidDeliveryIsRedeliveredFlagged(t *testing.T) {
	t.Parallel()
	clock, d := newStore(t)
	clock.Advance(1500 * time.Microsecond) // not on a millisecond
	a := newBus(t, d, hooks.Options{})
	release := newGate(t)
	entered := make(chan hooks.Event, 4)
	if _, err := a.RegisterHook("idx", hooks.OnSessionDelete, func(_ context.Context, ev hooks.Event) error {
		entered <- ev
		<-release.ch
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, a)
	want := hooks.SessionDelete{SessionID: "s1", Reason: hooks.ReasonArchive, Profile: "default", DeletedIDs: []string{"s1"}}
	e1 := mustEnqueue(t, d, a, hooks.OnSessionDelete, want)
	recv(t, entered, "the event in A's hands")
	a.SimulateCrash()
	e2 := mustEnqueue(t, d, a, hooks.OnSessionDelete, payload{N: 2})

	b := newBus(t, reopen(t, d, clock), hooks.Options{})
	got := subscribe(t, b, "idx", hooks.OnSessionDelete)
	mustStart(t, b)
	mustFlush(t, b)
	evs := got.Events()
	if len(evs) != 2 {
		t.Fatalf("B got %+v", evs)
	}
	g := evs[0]
	if !g.Redelivery || g.ID != e1.ID || g.Seq != e1.Seq || g.Hook != e1.Hook || string(g.Payload) != string(e1.Payload) || !g.CreatedAt.Equal(e1.CreatedAt) {
		t.Fatalf("got %+v, want a redelivery of %+v", g, e1)
	}
	if evs[1].ID != e2.ID || !evs[1].Redelivery {
		t.Fatalf("the event committed before the takeover: %+v", evs[1])
	}
	e3 := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 3})
	mustFlush(t, b)
	if evs := got.Events(); len(evs) != 3 || evs[2].ID != e3.ID || evs[2].Redelivery {
		t.Fatalf("an event after the takeover: %+v", evs)
	}
	le := mustEvent(t, d, e1.Seq)
	if !le.Delivered || !le.Redelivery || len(le.Deliveries) != 1 || !le.Deliveries[0].Redelivery {
		t.Fatalf("after the redelivery: %+v", le)
	}
	// The dead process's row is gone; B's is there.
	if n := count(t, d, `SELECT COUNT(*) FROM processes WHERE id = ?`, a.ProcessID()); n != 0 {
		t.Fatal("the crashed process's row is still there")
	}
	if n := count(t, d, `SELECT COUNT(*) FROM processes WHERE id = ?`, b.ProcessID()); n != 1 {
		t.Fatal("the live process's row is missing")
	}
	release.open()
}

// Several processes run the same subscriber: one delivers to it at a time,
// every event reaches it once and in order, and when that process ends
// another takes over from where it stood.
func TestOneProcessAtATimeDeliversToASubscriber(t *testing.T) {
	t.Parallel()
	clock, d := newStore(t)
	client := newBus(t, d, hooks.Options{})
	mustStart(t, client)
	const buses = 4
	var bs []*hooks.Bus
	var recs []*hookstest.Recorder
	for range buses {
		b := newBus(t, reopen(t, d, clock), hooks.Options{})
		recs = append(recs, hookstest.Record(t, b))
		bs = append(bs, b)
	}
	var wg sync.WaitGroup
	for _, b := range bs {
		wg.Go(func() { mustStart(t, b) })
	}
	for i := range 20 {
		mustEnqueue(t, d, client, hooks.OnSessionEnd, payload{N: i})
	}
	wg.Wait()
	tally := func() (map[string]int, int) {
		got, busy := map[string]int{}, 0
		for _, r := range recs {
			evs := r.Events("")
			if len(evs) > 0 {
				busy++
			}
			for i, ev := range evs {
				got[ev.ID]++
				if i > 0 && ev.Seq <= evs[i-1].Seq {
					t.Fatalf("out of order: %d after %d", ev.Seq, evs[i-1].Seq)
				}
			}
		}
		return got, busy
	}
	waitFor(t, "20 deliveries", func() bool { got, _ := tally(); return len(got) == 20 })
	for _, b := range bs {
		mustFlush(t, b)
	}
	got, busy := tally()
	if busy != 1 {
		t.Fatalf("%d processes delivered, want 1", busy)
	}
	for id, n := range got {
		if n != 1 {
			t.Fatalf("event %s delivered %d times", id, n)
		}
	}
	// The one delivering ends; another continues after the last event.
	var owner int
	for i, r := range recs {
		if len(r.Events("")) > 0 {
			owner = i
		}
	}
	if err := bs[owner].Close(bg); err != nil {
		t.Fatal(err)
	}
	last := mustEnqueue(t, d, client, hooks.OnSessionEnd, payload{N: 99})
	waitFor(t, "the next owner", func() bool { got, _ := tally(); return got[last.ID] == 1 })
	for i, b := range bs {
		if i != owner {
			mustFlush(t, b)
		}
	}
	got, _ = tally()
	if len(got) != 21 {
		t.Fatalf("%d distinct events, want 21", len(got))
	}
	for id, n := range got {
		if n != 1 {
			t.Fatalf("event %s delivered %d times", id, n)
		}
	}
	if left := count(t, d, `SELECT COUNT(*) FROM hook_events WHERE delivered_at IS NULL`); left != 0 {
		t.Fatalf("%d events left undelivered", left)
	}
}

// While the process delivering to a subscriber lives, another leaves it
// alone, and its Flush waits for that delivery.
func TestALiveProcessKeepsItsClaimAndOthersWaitForIt(t *testing.T) {
	t.Parallel()
	clock, d := newStore(t)
	a := newBus(t, d, hooks.Options{})
	release := newGate(t)
	entered := make(chan struct{}, 1)
	slow := &sink{got: make(chan hooks.Event, 4)}
	if _, err := a.RegisterHook("slow", hooks.OnSessionDelete, func(ctx context.Context, ev hooks.Event) error {
		entered <- struct{}{}
		<-release.ch
		return slow.handle(ctx, ev)
	}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, a)
	mustFlush(t, a) // its claim is made
	b := newBus(t, reopen(t, d, clock), hooks.Options{})
	other := subscribe(t, b, "slow", hooks.OnSessionDelete)
	mustStart(t, b)
	ev := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 1})
	recv(t, entered, "A's subscriber")
	short, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	err := b.Flush(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("B's flush while A delivers: %v, want deadline exceeded", err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- b.Flush(bg) }()
	release.open()
	if err := recv(t, flushed, "B's flush"); err != nil {
		t.Fatal(err)
	}
	if got := slow.Events(); len(got) != 1 || got[0].ID != ev.ID || got[0].Redelivery {
		t.Fatalf("A's subscriber got %+v", got)
	}
	if got := other.Events(); len(got) != 0 {
		t.Fatalf("B delivered too: %+v", got)
	}
}

// A handler's coded statuses: unavailable keeps the event for a retry
// (flagged when it may have been seen); suspended stops the subscriber,
// which holds no event back, until it registers again.
func TestUnavailableAndSuspendedSubscribers(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	var mode atomic.Int32 // 0 ok, 1 unavailable (handed out), 2 suspended
	var refused atomic.Int32
	var mu sync.Mutex
	var got []hooks.Event
	h, err := b.RegisterHook("flaky", hooks.OnSessionEnd, func(_ context.Context, ev hooks.Event) error {
		switch mode.Load() {
		case 1:
			refused.Add(1)
			return hooks.Unavailable(errors.New("restarting"), true)
		case 2:
			return fmt.Errorf("plugin flaky is in error: %w", hooks.ErrSuspended)
		}
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mustStart(t, b)
	mode.Store(1)
	e1 := mustEnqueue(t, d, b, hooks.OnSessionEnd, payload{N: 1})
	waitFor(t, "a first refusal", func() bool { return refused.Load() > 0 })
	if le := mustEvent(t, d, e1.Seq); le.Delivered || len(le.Deliveries) != 0 || fmt.Sprint(le.Pending) != "[flaky]" {
		t.Fatalf("an unavailable plugin's event: %+v", le)
	}
	mode.Store(0)
	b.Wake("flaky")
	mustFlush(t, b)
	mu.Lock()
	if len(got) != 1 || got[0].ID != e1.ID || !got[0].Redelivery {
		t.Fatalf("after the plugin came back: %+v", got)
	}
	mu.Unlock()

	mode.Store(2)
	e2 := mustEnqueue(t, d, b, hooks.OnSessionEnd, payload{N: 2})
	waitFor(t, "the subscriber suspended", func() bool {
		le := mustEvent(t, d, e2.Seq)
		return le.Delivered && len(le.Pending) == 0
	})
	mustFlush(t, b) // nobody waits for a suspended subscriber
	states, err := b.SubscriberStates(bg)
	if err != nil || len(states) != 1 || states[0].Active || states[0].Backlog != 1 || states[0].LastError == "" {
		t.Fatalf("suspended state: %+v %v", states, err)
	}
	// Fixed and registered again: it catches up from its position.
	mode.Store(0)
	h.Unregister()
	mustFlush(t, b)
	if _, err := b.RegisterHook("flaky", hooks.OnSessionEnd, func(_ context.Context, ev hooks.Event) error {
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustFlush(t, b)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[1].ID != e2.ID {
		t.Fatalf("after the fix: %+v", got)
	}
	states, _ = b.SubscriberStates(bg)
	if !states[0].Active || states[0].Backlog != 0 || states[0].Position != e2.Seq {
		t.Fatalf("state after the fix: %+v", states)
	}
}

// Tail reports new events and events whose deliveries changed, whichever
// process committed or delivered them.
func TestTailFollowsNewAndChangedEvents(t *testing.T) {
	t.Parallel()
	clock, d := newStore(t)
	host := newBus(t, d, hooks.Options{})
	release := newGate(t)
	if _, err := host.RegisterHook("idx", hooks.OnSessionDelete, func(context.Context, hooks.Event) error {
		<-release.ch
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, host)
	waitFor(t, "idx claimed", func() bool {
		st, _ := host.SubscriberStates(bg)
		return len(st) == 1 && st[0].ClaimedPID > 0
	})
	feed := newBus(t, reopen(t, d, clock), hooks.Options{}) // e.g. a dashboard that is a client
	cur, err := feed.TailStart(bg)
	if err != nil {
		t.Fatal(err)
	}
	ev := mustEnqueue(t, d, host, hooks.OnSessionDelete, payload{N: 1})
	evs, cur, err := feed.Tail(bg, cur, 0)
	if err != nil || len(evs) != 1 || evs[0].EventID != ev.ID || evs[0].Delivered || fmt.Sprint(evs[0].Pending) != "[idx]" {
		t.Fatalf("new event: %+v %v", evs, err)
	}
	if evs, _, _ := feed.Tail(bg, cur, 0); len(evs) != 0 {
		t.Fatalf("nothing changed, yet %+v", evs)
	}
	release.open()
	mustFlush(t, host)
	evs, cur, err = feed.Tail(bg, cur, 0)
	if err != nil || len(evs) != 1 || !evs[0].Delivered || fmt.Sprint(statuses(evs[0])) != "map[idx:ok]" {
		t.Fatalf("changed event: %+v %v", evs, err)
	}
	if evs, _, _ := feed.Tail(bg, cur, 0); len(evs) != 0 {
		t.Fatalf("nothing changed, yet %+v", evs)
	}
}

// The feed's poll reads the new and the changed events by their indexes,
// never the whole log.
func TestTailReadsByIndexes(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	plan, err := d.QueryPlan(bg, hooks.TailQuery+db.Limit(500))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(plan, "\n")
	for _, want := range []string{"SEARCH hook_events USING INTEGER PRIMARY KEY (rowid>?)", "SEARCH hook_events USING COVERING INDEX hook_events_rev (rev>?)"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the feed's plan lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "SCAN hook_events") {
		t.Fatalf("the feed's plan walks the log:\n%s", got)
	}
}

// SetTimeout applies to the callbacks that start after it.
func TestSetTimeoutAppliesToTheNextCallbacks(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{Timeout: time.Minute})
	deadlines := make(chan time.Duration, 4)
	if _, err := b.RegisterHook("p", hooks.OnSessionEnd, func(ctx context.Context, _ hooks.Event) error {
		dl, ok := ctx.Deadline()
		if !ok {
			deadlines <- 0
		} else {
			deadlines <- time.Until(dl)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mustStart(t, b)
	mustEnqueue(t, d, b, hooks.OnSessionEnd, payload{})
	if dl := recv(t, deadlines, "first"); dl < 50*time.Second {
		t.Fatalf("first deadline %s, want about a minute", dl)
	}
	b.SetTimeout(2 * time.Second)
	if b.Timeout() != 2*time.Second {
		t.Fatalf("Timeout() = %s", b.Timeout())
	}
	mustEnqueue(t, d, b, hooks.OnSessionEnd, payload{})
	if dl := recv(t, deadlines, "second"); dl > 2*time.Second || dl <= 0 {
		t.Fatalf("second deadline %s, want at most 2s", dl)
	}
	b.SetTimeout(0)
	mustEnqueue(t, d, b, hooks.OnSessionEnd, payload{})
	if dl := recv(t, deadlines, "third"); dl != 0 {
		t.Fatalf("third deadline %s, want none", dl)
	}
}

// A plugin that registers a synchronous hook before its observer hooks (as
// a Python plugin may) gets its events like any other.
func TestASyncRegistrationFirstStillGetsItsEvents(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	p := b.Plugin("audit")
	if err := p.RegisterSync(hooks.PreLLMCall, func(context.Context, json.RawMessage) (any, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	got := &sink{got: make(chan hooks.Event, 4)}
	if err := p.RegisterHook(hooks.OnSessionEnd, got.handle); err != nil {
		t.Fatal(err)
	}
	mustStart(t, b)
	ev := mustEnqueue(t, d, b, hooks.OnSessionEnd, payload{N: 1})
	mustFlush(t, b)
	if evs := got.Events(); len(evs) != 1 || evs[0].ID != ev.ID {
		t.Fatalf("got %+v", evs)
	}
}
