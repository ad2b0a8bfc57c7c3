package db_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"atrium/backend/db"
)

// The store's connections run in SQLite's multi-thread mode (no mutex per
// call), which holds only while each connection is used by one goroutine
// at a time. This drives every way in: readers through Each, Row, Query and
// gorm, with deadlines that cut reads off mid-row (the driver interrupts
// from its own goroutine), one writer committing, and collections that run
// finalizers, all at once. Every read must see a whole committed state.
func TestConcurrentReadsWritesAndCancellationsSeeWholeStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(t.TempDir(), "state.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Write.Exec(`CREATE TABLE stress (id INTEGER PRIMARY KEY, batch INTEGER NOT NULL, body TEXT NOT NULL)`).Error; err != nil {
		t.Fatal(err)
	}
	const perBatch = 40
	var batches atomic.Int64
	write := func(b int64) error {
		return d.InTx(ctx, func(tx *db.Tx) error {
			for i := range perBatch {
				if _, err := tx.Exec(ctx, `INSERT INTO stress (batch, body) VALUES (?, ?)`, b, fmt.Sprintf("batch %d row %d %0200d", b, i, i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	// A committed state has whole batches only.
	whole := func(rows, distinct int64) error {
		if rows != distinct*perBatch {
			return fmt.Errorf("%d rows in %d batches: a read saw part of a transaction", rows, distinct)
		}
		return nil
	}
	cut := func(err error) bool {
		return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
	}
	const q = `SELECT COUNT(*), COUNT(DISTINCT batch) FROM stress`
	readers := []func(context.Context) error{
		func(c context.Context) error { // Each over every row, cut off by its deadline
			seen := map[int64]int64{}
			err := d.Each(c, `SELECT batch, body FROM stress ORDER BY id`, nil, func(v []driver.Value) error {
				seen[v[0].(int64)]++
				return nil
			})
			if err != nil {
				return err
			}
			for b, n := range seen {
				if n != perBatch {
					return fmt.Errorf("batch %d: %d rows", b, n)
				}
			}
			return nil
		},
		func(c context.Context) error {
			v, err := d.Row(c, q)
			if err != nil {
				return err
			}
			return whole(v[0].(int64), v[1].(int64))
		},
		func(c context.Context) error {
			var rows, distinct int64
			if err := d.QueryRow(c, q).Scan(&rows, &distinct); err != nil {
				return err
			}
			return whole(rows, distinct)
		},
		func(c context.Context) error {
			var r struct{ NRows, NBatches int64 }
			if err := d.Read.WithContext(c).Raw(`SELECT COUNT(*) AS n_rows, COUNT(DISTINCT batch) AS n_batches FROM stress`).Scan(&r).Error; err != nil {
				return err
			}
			return whole(r.NRows, r.NBatches)
		},
	}
	var done, cutOff atomic.Int64
	stop := make(chan struct{})
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for i, read := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				// Deadlines from 20 µs to 2 ms: many reads are cut off.
				c, cancel := context.WithTimeout(ctx, time.Duration(20+(n*37+i*11)%2000)*time.Microsecond)
				err := read(c)
				cancel()
				switch {
				case err == nil:
					done.Add(1)
				case cut(err):
					cutOff.Add(1)
				default:
					errs <- fmt.Errorf("reader %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			runtime.GC()
			time.Sleep(time.Millisecond)
		}
	}()
	deadline := time.Now().Add(2 * time.Second)
	for b := int64(1); time.Now().Before(deadline); b++ {
		if err := write(b); err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("write %d: %v", b, err)
		}
		batches.Store(b)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d batches written, %d reads whole, %d cut off", batches.Load(), done.Load(), cutOff.Load())
	if done.Load() == 0 || cutOff.Load() == 0 {
		t.Fatalf("the reads must both finish and be cut off: %d whole, %d cut off", done.Load(), cutOff.Load())
	}
	v, err := d.Row(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if v[0].(int64) != batches.Load()*perBatch || v[1].(int64) != batches.Load() {
		t.Fatalf("after %d batches: %v", batches.Load(), v)
	}
}

// The reads of a View see one snapshot, whatever commits meanwhile; its
// error is the caller's; and its connection goes back to the pool outside
// any transaction, so the next reads there see the commit.
func TestViewReadsOneSnapshotAndLeavesNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(t.TempDir(), "state.db"), db.Options{ReadConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	insert := func() {
		t.Helper()
		if err := d.InTx(ctx, func(tx *db.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO maintenance_runs (task, last_run_at) SELECT 't' || count(*), 1 FROM maintenance_runs`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(c context.Context, each db.EachFunc) int64 {
		t.Helper()
		var n int64
		if err := each(c, `SELECT count(*) FROM maintenance_runs`, nil, func(v []driver.Value) error { n = v[0].(int64); return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	insert()
	c, cancel := context.WithCancel(ctx) // what a search runs under
	defer cancel()
	if err := d.View(c, func(each db.EachFunc) error {
		before := count(c, each)
		insert()
		if after := count(c, each); after != before {
			t.Errorf("one view read %d rows, then %d", before, after)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for range 4 { // every connection of the pool, the view's among them
		if n := count(ctx, d.Each); n != 2 {
			t.Fatalf("a read after the view sees %d rows, want 2", n)
		}
	}
	boom := errors.New("boom")
	if err := d.View(ctx, func(db.EachFunc) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("the view's error: %v", err)
	}
	cancel()
	err = d.View(c, func(each db.EachFunc) error {
		return each(c, `SELECT 1`, nil, func([]driver.Value) error { return nil })
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a read of a cancelled view: %v", err)
	}
	insert()
	for range 4 {
		if n := count(ctx, d.Each); n != 3 {
			t.Fatalf("a read after the cancelled view sees %d rows, want 3", n)
		}
	}
}
