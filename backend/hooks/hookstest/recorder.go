// Package hookstest gives tests a recording observer for exact hook accounting.
package hookstest

import (
	"context"
	"sort"
	"sync"
	"testing"

	"atrium/backend/hooks"
)

// Recorder records every observer event it receives.
type Recorder struct {
	bus    *hooks.Bus
	mu     sync.Mutex
	events []hooks.Event
}

// Record subscribes a recorder, as plugin "recorder", to every observer hook.
// Call it before bus.Start.
func Record(t testing.TB, bus *hooks.Bus) *Recorder {
	t.Helper()
	r := &Recorder{bus: bus}
	for _, name := range hooks.Names() {
		if k, _ := hooks.Lookup(name); k != hooks.Observer {
			continue
		}
		if _, err := bus.RegisterHook("recorder", name, func(_ context.Context, ev hooks.Event) error {
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
			return nil
		}); err != nil {
			t.Fatalf("register recorder: %v", err)
		}
	}
	return r
}

// Events returns what was recorded for hook ("" for all), in arrival order.
func (r *Recorder) Events(hook string) []hooks.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hooks.Event
	for _, e := range r.events {
		if hook == "" || e.Hook == hook {
			out = append(out, e)
		}
	}
	return out
}

// Counts maps hook name to number of events received.
func (r *Recorder) Counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, e := range r.events {
		out[e.Hook]++
	}
	return out
}

// Deletes decodes every on_session_delete payload received.
func (r *Recorder) Deletes(t testing.TB) []hooks.SessionDelete {
	t.Helper()
	var out []hooks.SessionDelete
	for _, e := range r.Events(hooks.OnSessionDelete) {
		var p hooks.SessionDelete
		if err := e.Decode(&p); err != nil {
			t.Fatalf("decode payload: %v", err)
		}
		out = append(out, p)
	}
	return out
}

// Reset waits for pending deliveries, then forgets what was recorded.
// Forget flushes the bus and drops what was recorded for hook, so a
// fixture's own events (a delegate child's subagent_start) are not counted
// with what a test asserts.
func (r *Recorder) Forget(hook string) {
	_ = r.bus.Flush(context.Background())
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.events[:0]
	for _, e := range r.events {
		if e.Hook != hook {
			kept = append(kept, e)
		}
	}
	r.events = kept
}

func (r *Recorder) Reset() {
	_ = r.bus.Flush(context.Background())
	r.mu.Lock()
	r.events = nil
	r.mu.Unlock()
}

// Expect flushes the bus and asserts exact counts. want lists hooks with
// their counts; every hook not listed must have fired zero times (write
// "*": 0 in want to make that intent visible).
func (r *Recorder) Expect(t testing.TB, bus *hooks.Bus, want map[string]int) {
	t.Helper()
	if err := bus.Flush(context.Background()); err != nil {
		t.Fatalf("flush: %v", err)
	}
	got := r.Counts()
	var bad []string
	for _, name := range hooks.Names() {
		if got[name] != want[name] {
			bad = append(bad, name)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		t.Fatalf("hook counts: got %v, want %v (differ on %v)", got, want, bad)
	}
}
