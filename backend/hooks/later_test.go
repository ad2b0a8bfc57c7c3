package hooks_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"atrium/backend/hooks"
)

// A receiver elsewhere (a webhook) that does not take an event: each
// failed attempt is on record as "retrying" without the subscriber moving
// on, nobody waits for it meanwhile, the next attempt gets the same event
// (flagged a redelivery), and the final outcome replaces the attempts; a
// handler that gives up records "failed" and moves on.
func TestLaterRecordsEachAttemptAndWaitsForNobody(t *testing.T) {
	t.Parallel()
	_, d := newStore(t)
	b := newBus(t, d, hooks.Options{})
	var mu sync.Mutex
	var seen []hooks.Event
	var fail atomic.Int32
	fail.Store(2)
	if err := b.Plugin("webhook:x").RegisterHook(hooks.OnSessionDelete, func(_ context.Context, ev hooks.Event) error {
		mu.Lock()
		seen = append(seen, ev)
		mu.Unlock()
		if fail.Add(-1) >= 0 {
			return hooks.Later(errors.New("HTTP 503"))
		}
		if strings.Contains(string(ev.Payload), `"n":2`) {
			return errors.New("gave up after 1 attempt")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var acts []hooks.Activity
	b.OnActivity(func(a hooks.Activity) { mu.Lock(); acts = append(acts, a); mu.Unlock() })
	mustStart(t, b)
	ev := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 1})
	// Nobody waits for it: a command committing the event returns.
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if err := b.WaitDelivered(ctx, ev.Seq); err != nil {
		t.Fatalf("waited for a receiver elsewhere: %v", err)
	}
	waitFor(t, "the event delivered after two failed attempts", func() bool {
		evs := mustList(t, d, hooks.LogFilter{})
		return len(evs) == 1 && len(evs[0].Deliveries) == 1 && evs[0].Deliveries[0].Status == "ok"
	})
	mu.Lock()
	if len(seen) != 3 || seen[0].ID != ev.ID || seen[2].ID != ev.ID || seen[0].Redelivery || !seen[1].Redelivery || !seen[2].Redelivery {
		t.Fatalf("attempts: %+v", seen)
	}
	var statuses []string
	for _, a := range acts {
		statuses = append(statuses, a.Status)
	}
	mu.Unlock()
	if len(statuses) != 3 || statuses[0] != "retrying" || statuses[1] != "retrying" || statuses[2] != "ok" {
		t.Fatalf("activity: %v", statuses)
	}
	// A retrying attempt is on record while it lasts.
	fail.Store(1)
	ev2 := mustEnqueue(t, d, b, hooks.OnSessionDelete, payload{N: 2})
	waitFor(t, "the attempt on record", func() bool {
		evs := mustList(t, d, hooks.LogFilter{})
		return len(evs) == 2 && len(evs[1].Deliveries) == 1 && evs[1].Deliveries[0].Status == "retrying" &&
			evs[1].Deliveries[0].Error == "HTTP 503"
	})
	waitFor(t, "given up", func() bool {
		evs := mustList(t, d, hooks.LogFilter{})
		return len(evs) == 2 && len(evs[1].Deliveries) == 1 && evs[1].Deliveries[0].Status == "failed"
	})
	mustFlush(t, b)
	if evs := mustList(t, d, hooks.LogFilter{}); evs[1].Seq != ev2.Seq || evs[1].Deliveries[0].Error != "gave up after 1 attempt" {
		t.Fatalf("given up: %+v", evs[1])
	}
}
