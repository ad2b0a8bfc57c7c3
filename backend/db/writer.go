package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
	"time"
	"unsafe"

	"github.com/mattn/go-sqlite3"
)

// The writer's transactions.
//
// Write transactions run on one connection the writer keeps between them
// (a *sql.Conn taken from the writer pool once), as BEGIN IMMEDIATE and
// COMMIT statements prepared on it, with the statement cache prepared on
// the same connection. database/sql's own transactions (sql.Tx) start a
// goroutine per transaction to watch its context, and waking it and the
// thread under it at BEGIN and again at COMMIT cost about 12 % of an append
// (runtime.newproc, wakep, futex in the profile of storebench's append).
// Vacuums and checkpoints run on the same connection, between
// transactions (onWriter). The writer pool has a second connection only for
// what uses the pool directly: the migration, which runs before the writer
// takes its connection, and tools and tests that use DB.Write; it is closed
// once idle.

// writerIdle closes the writer pool's second connection once it is idle.
const writerIdle = 30 * time.Second

// writer is the connection write transactions run on, with its statements.
type writer struct {
	conn                    *sql.Conn
	begin, commit, rollback *sql.Stmt
	stmts                   *stmtCache
	h                       unsafe.Pointer // the connection's sqlite3 handle, for interrupt (nil: not found)
}

// A transaction's statements run without the caller's context (detach),
// and its cancellation interrupts the statement running instead (watch).
// Given a context that can be cancelled, the driver runs each Exec in a
// goroutine of its own and waits for it: ending a session took 131 µs so,
// 94 now (BenchmarkEndSession/atrium-cancellable), and every write of the
// dashboard, the gateway and the command line comes with such a context.

// watch makes ctx's cancellation interrupt the statement w runs, until stop
// is called (more than once is fine); stop is called before COMMIT, so no
// interrupt reaches it or a later transaction, and before the connection
// may be closed.
func (w *writer) watch(ctx context.Context) (stop func()) {
	if ctx.Done() == nil || w.h == nil {
		return func() {}
	}
	var mu sync.Mutex
	live := true
	after := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if live {
			interrupt(w.h)
		}
	})
	return func() {
		mu.Lock()
		live = false
		mu.Unlock()
		after()
	}
}

// detach is the context w's statements run under: ctx without its
// cancellation, which watch delivers. A context done already is kept, so the
// statement is refused before it runs; without the handle, ctx is kept and
// the driver watches it.
func (w *writer) detach(ctx context.Context) context.Context {
	if w.h == nil || ctx.Done() == nil || ctx.Err() != nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// writerConn returns the writer, taking a connection from the pool the
// first time (and after a connection was found broken). commitMu is held.
func (d *DB) writerConn(ctx context.Context) (*writer, error) {
	if d.w != nil {
		return d.w, nil
	}
	c, err := d.writeSQL.Conn(ctx)
	if err != nil {
		return nil, err
	}
	w := &writer{conn: c, stmts: newStmtCache(c, 2)}
	_ = c.Raw(func(dc any) error {
		if sc, ok := dc.(*sqlite3.SQLiteConn); ok {
			w.h = handle(sc)
		}
		return nil
	})
	for _, p := range []struct {
		st **sql.Stmt
		q  string
	}{{&w.begin, "BEGIN IMMEDIATE"}, {&w.commit, "COMMIT"}, {&w.rollback, "ROLLBACK"}} {
		if *p.st, err = c.PrepareContext(ctx, p.q); err != nil {
			w.close(false)
			return nil, err
		}
	}
	d.w = w
	return w, nil
}

// end rolls back what the transaction left open (after an error, a panic,
// or a COMMIT that failed). A ROLLBACK that cannot run leaves the
// connection in doubt: it is dropped, and the next transaction takes a new
// one. commitMu is held.
func (d *DB) end(w *writer) {
	_, err := w.rollback.ExecContext(context.Background())
	if err == nil || !w.inTx() {
		return // rolled back, or SQLite had rolled it back already
	}
	d.log.Warn("the store's writer connection is dropped: its transaction could not be rolled back", "err", err)
	d.w = nil
	w.close(true)
}

// inTx reports whether the connection is inside a transaction.
func (w *writer) inTx() bool {
	in := true
	_ = w.conn.Raw(func(dc any) error {
		if c, ok := dc.(*sqlite3.SQLiteConn); ok {
			in = !c.AutoCommit()
		}
		return nil
	})
	return in
}

// close finalizes the writer's statements and gives its connection back to
// the pool, or closes it when bad (a connection in doubt must not be used
// again).
func (w *writer) close(bad bool) {
	w.stmts.close()
	for _, st := range []*sql.Stmt{w.begin, w.commit, w.rollback} {
		if st != nil {
			_ = st.Close()
		}
	}
	if bad {
		_ = w.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	_ = w.conn.Close()
}

// badConn reports whether err means the connection itself is gone.
func badConn(err error) bool {
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone)
}

// onWriter runs fn on the writer's connection outside any transaction
// (vacuums, checkpoints), with commitMu held: on another connection it
// would contend for SQLite's write lock with the transactions, which then
// wait on the busy timeout.
func (d *DB) onWriter(ctx context.Context, fn func(c *sql.Conn) error) error {
	if err := d.Writable(); err != nil {
		return err
	}
	d.commitMu.Lock()
	defer d.commitMu.Unlock()
	w, err := d.writerConn(ctx)
	if err != nil {
		return err
	}
	return fn(w.conn)
}
