package db_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
)

// Write transactions run on one connection the writer keeps between them.
// However a transaction ends (an error, a panic, a COMMIT that fails, a
// context cancelled meanwhile), nothing of it stays, the connection is left
// outside any transaction, and the next transaction, with the statements
// prepared on that connection, commits.
func TestWriteTransactionsEndCleanlyOnTheKeptConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	d, err := db.Open(ctx, path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	put := func(tx *db.Tx, task string) error {
		_, err := tx.Exec(ctx, `INSERT INTO maintenance_runs (task, last_run_at) VALUES (?, 1)`, task)
		return err
	}
	tasks := func() []string {
		rows, err := d.Query(ctx, `SELECT task FROM maintenance_runs ORDER BY task`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	commit := func(task string) {
		t.Helper()
		if err := d.InTx(ctx, func(tx *db.Tx) error { return put(tx, task) }); err != nil {
			t.Fatalf("commit %s: %v", task, err)
		}
	}
	commit("a")
	commit("b") // the insert is prepared on the writer's connection now

	boom := errors.New("boom")
	if err := d.InTx(ctx, func(tx *db.Tx) error { _ = put(tx, "error"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("an error: %v", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = d.InTx(ctx, func(tx *db.Tx) error { _ = put(tx, "panic"); panic("wiring bug") })
	}()
	// A COMMIT that fails leaves SQLite's transaction open: a foreign key
	// checked at commit.
	err = d.InTx(ctx, func(tx *db.Tx) error {
		if _, err := tx.Exec(ctx, `PRAGMA defer_foreign_keys = ON`); err != nil {
			return err
		}
		if err := put(tx, "failed-commit"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO messages (session_id, role, content, created_at) VALUES ('no-such-session', 'user', 'x', 1)`)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Fatalf("a failed commit: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	err = d.InTx(cctx, func(tx *db.Tx) error {
		err := put(tx, "cancelled")
		cancel()
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a context cancelled before the commit: %v", err)
	}
	commit("c")
	if got := strings.Join(tasks(), ","); got != "a,b,c" {
		t.Fatalf("the store holds %s, want a,b,c", got)
	}

	// Another connection's commit (another process) is seen by the next
	// transaction: the kept connection holds no snapshot between them.
	other, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Exec(`INSERT INTO maintenance_runs (task, last_run_at) VALUES ('elsewhere', 1)`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := d.InTx(ctx, func(tx *db.Tx) error {
		return tx.QueryRow(ctx, `SELECT count(*) FROM maintenance_runs WHERE task = 'elsewhere'`).Scan(&n)
	}); err != nil || n != 1 {
		t.Fatalf("another connection's row: n=%d err=%v", n, err)
	}

	// What runs outside a transaction (a full vacuum) has a connection of
	// its own and leaves the writer's usable.
	if _, err := d.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	commit("d")
	if got := strings.Join(tasks(), ","); got != "a,b,c,d,elsewhere" {
		t.Fatalf("after the vacuum the store holds %s", got)
	}
}

// A BEGIN that cannot get the write lock (another process holds it past
// the busy timeout) fails with a clear error and leaves the writer's
// connection usable once the lock is free.
func TestBeginThatWaitsTooLongLeavesTheWriterUsable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	d, err := db.Open(ctx, path, db.Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	put := func(task string) error {
		return d.InTx(ctx, func(tx *db.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO maintenance_runs (task, last_run_at) VALUES (?, 1)`, task)
			return err
		})
	}
	if err := put("before"); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetMaxOpenConns(1)
	if _, err := other.Exec(`BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	err = put("while-locked")
	if !errors.Is(err, db.ErrBusy) || apperr.CodeOf(err) != apperr.Rejected || !strings.Contains(err.Error(), "is busy") ||
		!strings.Contains(err.Error(), "50ms") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a BEGIN while another connection writes: %v", err)
	}
	if _, err := other.Exec(`ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if err := put("after"); err != nil {
		t.Fatalf("the writer after a failed BEGIN: %v", err)
	}
	var n int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM maintenance_runs`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows: %d, %v", n, err)
	}
}

// A transaction's statements run without the caller's context (the driver
// would start a goroutine per statement to watch it); cancelling the
// context interrupts the statement running all the same, however it was
// run (Exec, Query, gorm): the caller gets the context's error, nothing is
// written, and no interrupt reaches the next transaction.
func TestCancellingInterruptsTheRunningStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(t.TempDir(), "state.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stuck := false // a statement that was not interrupted holds the store: Close would wait for it
	defer func() {
		if !stuck {
			_ = d.Close()
		}
	}()
	const endless = `INSERT INTO maintenance_runs (task, last_run_at) SELECT 'r' || x, 1 FROM
		(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c)`
	ways := map[string]func(ctx context.Context, tx *db.Tx) error{
		"Exec": func(ctx context.Context, tx *db.Tx) error { _, err := tx.Exec(ctx, endless); return err },
		"gorm": func(ctx context.Context, tx *db.Tx) error { return tx.G.WithContext(ctx).Exec(endless).Error },
		"Query": func(ctx context.Context, tx *db.Tx) error {
			rows, err := tx.Query(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c`)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
			}
			return rows.Err()
		},
	}
	for name, run := range ways {
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- d.InTx(cctx, func(tx *db.Tx) error { return run(cctx, tx) }) }()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			stuck = true
			t.Fatalf("%s: the statement ran on 30 s after its context ended", name)
		}
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: got %v, want the context's deadline", name, err)
		}
		if err := d.InTx(ctx, func(tx *db.Tx) error {
			_, err := tx.Exec(ctx, `INSERT OR REPLACE INTO maintenance_runs (task, last_run_at) VALUES ('after', 1)`)
			return err
		}); err != nil {
			t.Fatalf("%s: the next transaction: %v", name, err)
		}
	}
	var n int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM maintenance_runs WHERE task LIKE 'r%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows of the interrupted inserts were kept (%v)", n, err)
	}
}
