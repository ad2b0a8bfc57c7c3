package db

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// A quiet task waits for the commits to stop: none of its runs falls inside
// a burst shorter than maxWait, and it runs once the burst is over. A burst
// longer than maxWait gets a run every maxWait.
func TestQuietTaskRunsAfterABurstOrEveryMaxWait(t *testing.T) {
	d, err := Open(context.Background(), filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const quiet, maxWait = 300 * time.Millisecond, 1500 * time.Millisecond
	var runs atomic.Int64
	registered := make(chan struct{})
	if !d.AddQuietTask("test", quiet, maxWait, func(ctx context.Context) (bool, error) {
		if runs.Add(1) == 1 {
			close(registered) // the run at registration
		}
		return false, nil
	}) {
		t.Fatal("not registered")
	}
	<-registered
	waitRuns := func(want int64) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); runs.Load() < want; {
			if time.Now().After(deadline) {
				t.Fatalf("%d runs, want %d", runs.Load(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	burst := func(d2 time.Duration) int64 {
		before := runs.Load()
		for end := time.Now().Add(d2); time.Now().Before(end); {
			d.tasks.kick()
			time.Sleep(5 * time.Millisecond)
		}
		return runs.Load() - before
	}

	// Shorter than maxWait: no run inside it; one after it.
	if n := burst(maxWait * 2 / 3); n != 0 {
		t.Fatalf("%d runs during a burst of commits shorter than maxWait, want 0", n)
	}
	waitRuns(2)

	// Three times maxWait: a run at least every maxWait meanwhile.
	if n := burst(3 * maxWait); n < 2 {
		t.Fatalf("%d runs during a burst of 3 x maxWait, want at least 2", n)
	}
}
