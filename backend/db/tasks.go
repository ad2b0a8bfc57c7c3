package db

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Background work on the store, off the committing call: each task runs in
// its own goroutine some time after commits of this process (so a burst of
// commits is handled once; a quiet task waits for the burst to end), when
// registered (work left by an earlier process), and a last time when the
// store closes.

// TaskFunc does one batch of a task's work and says whether more is left.
type TaskFunc func(ctx context.Context) (more bool, err error)

type task struct {
	name  string
	delay time.Duration
	// maxWait > 0 makes the task wait for delay without commits (the end
	// of a burst), at most maxWait after the commit that woke it.
	maxWait time.Duration
	run     TaskFunc
	stop    func() // after the last run, at Close
	kick    chan struct{}
}

type tasks struct {
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	list   []*task
	names  map[string]bool
	shared map[string]any

	last atomic.Int64 // the last commit's time (UnixNano)
}

// closeBudget bounds the last run of every task at Close.
const closeBudget = 3 * time.Second

func newTasks(lg *slog.Logger) *tasks {
	ctx, cancel := context.WithCancel(context.Background())
	return &tasks{log: lg, ctx: ctx, cancel: cancel, names: map[string]bool{}, shared: map[string]any{}}
}

func (ts *tasks) add(t *task) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.names[t.name] || ts.ctx.Err() != nil {
		return false
	}
	ts.names[t.name] = true
	t.kick = make(chan struct{}, 1)
	ts.list = append(ts.list, t)
	ts.wg.Add(1)
	go ts.loop(t)
	t.kick <- struct{}{}
	return true
}

// kick tells every task that a commit happened; it never blocks.
func (ts *tasks) kick() {
	ts.last.Store(time.Now().UnixNano())
	ts.mu.Lock()
	list := ts.list
	ts.mu.Unlock()
	for _, t := range list {
		select {
		case t.kick <- struct{}{}:
		default:
		}
	}
}

func (ts *tasks) loop(t *task) {
	defer ts.wg.Done()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ts.ctx.Done():
			return
		case <-t.kick:
		}
		deadline := time.Now().Add(t.maxWait)
		timer.Reset(t.delay)
		for {
			select {
			case <-ts.ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			if t.maxWait <= 0 {
				break
			}
			now := time.Now()
			quiet := time.Unix(0, ts.last.Load()).Add(t.delay)
			if !now.Before(quiet) || !now.Before(deadline) {
				break
			}
			timer.Reset(min(quiet.Sub(now), deadline.Sub(now)))
		}
		ts.drain(ts.ctx, t)
	}
}

func (ts *tasks) drain(ctx context.Context, t *task) {
	for ctx.Err() == nil {
		more, err := t.run(ctx)
		if err != nil {
			if ctx.Err() == nil {
				ts.log.Warn("background store task", "task", t.name, "error", err)
			}
			return
		}
		if !more {
			return
		}
	}
}

// close stops the goroutines, then runs every task once more (within
// closeBudget), so work queued by this process's last commits is done.
func (ts *tasks) close() {
	ts.mu.Lock()
	list := ts.list
	ts.mu.Unlock()
	ts.cancel()
	ts.wg.Wait()
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), finalRun{}, true), closeBudget)
	defer cancel()
	for _, t := range list {
		ts.drain(ctx, t)
		if t.stop != nil {
			t.stop()
		}
	}
}

type finalRun struct{}

// FinalRun reports whether a task runs for the last time, as the store
// closes: work a task defers to batch it must be done now.
func FinalRun(ctx context.Context) bool { return ctx.Value(finalRun{}) != nil }

// AddTask registers background work: run is called some delay after this
// process's commits, once now, and once more at Close, each time until it
// says no more is left. A name registers once per store; AddTask reports
// whether this call registered it.
func (d *DB) AddTask(name string, delay time.Duration, run TaskFunc) bool {
	if d.Writable() != nil {
		return false // nothing to do on a store this process cannot write
	}
	return d.tasks.add(&task{name: name, delay: delay, run: run})
}

// Shared returns the value kept for this store under name, made by mk at
// the first call: what a background task shares with every service of the
// store that feeds it (a store may have more than one).
func (d *DB) Shared(name string, mk func() any) any {
	d.tasks.mu.Lock()
	defer d.tasks.mu.Unlock()
	v, ok := d.tasks.shared[name]
	if !ok {
		v = mk()
		d.tasks.shared[name] = v
	}
	return v
}

// AddQuietTask is AddTask for work that should not compete with a burst of
// writes: it runs once this process has made no commit for quiet, or
// maxWait after the commit that woke it if the burst goes on.
func (d *DB) AddQuietTask(name string, quiet, maxWait time.Duration, run TaskFunc) bool {
	if d.Writable() != nil {
		return false
	}
	return d.tasks.add(&task{name: name, delay: quiet, maxWait: maxWait, run: run})
}

// The checkpointer: WAL checkpoints off the committing call. The writer
// commits with wal_autocheckpoint at WALAutocheckpoint pages (a safety
// valve); this task runs a PASSIVE checkpoint on its own connection shortly
// after commits, so the committing call never copies pages back and fsyncs,
// and a burst of commits that rewrote the same pages copies each page once.
const checkpointDelay = 200 * time.Millisecond

func newCheckpointTask(d *DB, dsn string) *task {
	var conn *sql.DB
	return &task{name: "checkpoint", delay: checkpointDelay,
		run: func(ctx context.Context) (bool, error) {
			if d.Damaged() {
				return false, nil // never copy pages into a damaged file
			}
			if conn == nil {
				c, err := sql.Open(driverName, dsn)
				if err != nil {
					return false, err
				}
				c.SetMaxOpenConns(1)
				c.SetMaxIdleConns(1)
				conn = c
			}
			var busy, frames, done int64
			return false, conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &done)
		},
		stop: func() {
			if conn != nil {
				_ = conn.Close()
			}
		},
	}
}

// OpenMemory opens a private in-memory SQLite database with one connection,
// built like the store (FTS5 included): scratch space that never touches
// the file (the session service matches the not-yet-indexed messages there).
func OpenMemory() (*sql.DB, error) {
	m, err := sql.Open(driverName, "file::memory:")
	if err != nil {
		return nil, err
	}
	m.SetMaxOpenConns(1)
	m.SetMaxIdleConns(1)
	m.SetConnMaxLifetime(0)
	return m, nil
}
