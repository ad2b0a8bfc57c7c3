package turns

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A turn written down by one Runs is stopped by another on the same folder
// (another process of the profile) through its .stop file, with the Stop
// asked; one of the Runs' own is stopped at once. Files of a process that
// is gone are left out and removed; an id that is no session id names no
// file.
func TestRunsStopATurnFromAnotherProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "turns")
	here, there := NewRuns(dir), NewRuns(dir)
	there.poll, there.after, here.after = 10*time.Millisecond, 0, 0

	ctx, stop := context.WithCancelCause(context.Background())
	end := there.Begin("s-1.a", "cron", stop)
	var err error
	other, stopOther := context.WithCancelCause(context.Background())
	endOther := there.Begin("s-1", "telegram", stopOther) // a prefix of the first id: not the same session
	defer endOther()
	var list []RunInfo
	deadline := time.Now().Add(10 * time.Second)
	for len(list) < 2 && time.Now().Before(deadline) {
		list, err = here.Running("")
		time.Sleep(5 * time.Millisecond)
	}
	if err != nil || len(list) != 2 || list[0].SessionID != "s-1.a" || list[0].Platform != "cron" || list[0].PID != os.Getpid() {
		t.Fatalf("running: %+v %v", list, err)
	}
	if n, err := here.Stop("s-1.a", StopByCommand); n != 1 || err != nil {
		t.Fatalf("stop: %d %v", n, err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the turn was not stopped")
	}
	var s *Stop
	if !errors.As(context.Cause(ctx), &s) || s != StopByCommand {
		t.Fatalf("stopped with %v", context.Cause(ctx))
	}
	if other.Err() != nil {
		t.Fatal("another session's turn was stopped")
	}
	end()
	if list, _ := here.Running("s-1.a"); len(list) != 0 {
		t.Fatalf("an ended turn is listed: %+v", list)
	}
	if n, _ := here.Stop("s-1.a", StopByPerson); n != 0 {
		t.Fatalf("stopped %d ended turns", n)
	}

	// Its own turn: stopped at once, without a file.
	mine, stopMine := context.WithCancelCause(context.Background())
	endMine := here.Begin("s-2", "desktop", stopMine)
	if n, err := here.Stop("s-2", StopByPerson); n != 1 || err != nil || context.Cause(mine) != StopByPerson {
		t.Fatalf("own turn: %d %v %v", n, err, context.Cause(mine))
	}
	endMine()

	// A turn that ends within its first tenth of a second writes nothing;
	// this process lists it all the same while it runs.
	quick := NewRuns(dir)
	endQuick := quick.Begin("s-quick", "cli", func(error) {})
	if l, _ := quick.Running("s-quick"); len(l) != 1 {
		t.Fatalf("this process's own turn is not listed: %+v", l)
	}
	endQuick()
	if matches, _ := filepath.Glob(filepath.Join(dir, "s-quick.*")); len(matches) != 0 {
		t.Fatalf("a quick turn wrote %v", matches)
	}

	// A crashed process's file (a pid that is not running) is removed.
	stale := filepath.Join(dir, "s-3.999999999.1.run")
	if err := os.WriteFile(stale, []byte(`{"session_id":"s-3","platform":"cli","pid":999999999}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := here.Stop("s-3", StopByPerson); n != 0 || err != nil {
		t.Fatalf("a dead process's turn: %d %v", n, err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatal("the stale file stayed")
	}

	// No file for what is no session id; no stop either.
	endBad := here.Begin("../../escape", "cli", func(error) {})
	endBad()
	if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(dir)), "escape")); err == nil {
		t.Fatal("a file was written outside the folder")
	}
	if _, err := here.Stop("../x", StopByPerson); err == nil {
		t.Fatal("a malformed id was accepted")
	}
}

// BenchmarkRunsBeginEnd is what writing a turn down costs a turn that
// runs long enough to be written down: its file written and removed, its
// watcher started and stopped (written here at once, not after 100 ms).
func BenchmarkRunsBeginEnd(b *testing.B) {
	r := NewRuns(filepath.Join(b.TempDir(), "turns"))
	r.after = time.Hour
	stop := func(error) {}
	for b.Loop() {
		end := r.Begin("s-bench", "cli", stop)
		r.mu.Lock()
		var base string
		var ru *run
		for base, ru = range r.mine {
		}
		r.mu.Unlock()
		r.writeDown(base, ru)
		if !ru.written {
			b.Fatal("not written down")
		}
		end()
	}
}

// What a turn waits on (its status) is seen by the profile's other
// processes: in its file once it is written down, whether set before or
// after, and gone when cleared.
func TestRunsStatusSeenFromAnotherProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "turns")
	here, there := NewRuns(dir), NewRuns(dir)
	there.after = 50 * time.Millisecond
	end, status := there.begin("s-3", "desktop", func(error) {})
	defer end()
	status("⏱️ Rate limited. Waiting 4.0s (attempt 1/3)...") // before the file is written
	seen := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			list, err := here.Running("s-3")
			if err == nil && len(list) == 1 && list[0].Status == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("want status %q, the other process sees %+v %v", want, list, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	seen("⏱️ Rate limited. Waiting 4.0s (attempt 1/3)...")
	status("🔄 main failed (rate limited): switching to fallback spare via custom")
	seen("🔄 main failed (rate limited): switching to fallback spare via custom")
	status("")
	seen("")
	if list, _ := there.Running("s-3"); len(list) != 1 || list[0].Status != "" {
		t.Fatalf("its own process: %+v", list)
	}
}
