package db

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// Statements prepared once.
//
// gorm's PrepareStmt mode caches a statement first prepared inside a
// transaction as bound to that transaction: every later transaction
// re-prepares it (sqlite3_prepare_v2, 20-60 µs for Atrium's statements) and
// finalizes it at commit, and every write in Atrium runs in a transaction.
// database/sql does reuse a statement across transactions when it was
// prepared on the *sql.DB, outside any transaction: Tx.StmtContext then finds
// the driver statement already prepared on the transaction's connection. So
// the writer keeps its own cache of *sql.DB statements, used by every
// transaction (gorm's queries go through txPool, the hot paths call
// Tx.Exec/Query directly). A text is prepared once it was seen `after`
// times (dynamic SQL seen once is never cached), and only while the writer's
// one connection is free: at the start of the next transaction.
type stmtCache struct {
	db    *sql.DB
	after int

	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	seen   map[string]int
	wanted []string
}

// Bounds: dynamic SQL (filters, IN lists) must not grow the caches forever.
const (
	maxStmts = 512
	maxSeen  = 4096
)

func newStmtCache(d *sql.DB, after int) *stmtCache {
	return &stmtCache{db: d, after: after, stmts: map[string]*sql.Stmt{}, seen: map[string]int{}}
}

// get returns the prepared statement for q, or nil. With prepareNow (a pool
// whose connections are never all held by one caller) a text seen often
// enough is prepared at once; otherwise it is queued for prepareWanted.
func (c *stmtCache) get(ctx context.Context, q string, prepareNow bool) *sql.Stmt {
	c.mu.Lock()
	if st := c.stmts[q]; st != nil {
		c.mu.Unlock()
		return st
	}
	if len(c.stmts) >= maxStmts {
		c.mu.Unlock()
		return nil
	}
	if len(c.seen) >= maxSeen {
		clear(c.seen)
	}
	c.seen[q]++
	due := c.seen[q] == c.after
	if due && !prepareNow {
		c.wanted = append(c.wanted, q)
	}
	c.mu.Unlock()
	if !due || !prepareNow {
		return nil
	}
	st, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.stmts[q]; old != nil {
		_ = st.Close()
		return old
	}
	delete(c.seen, q)
	c.stmts[q] = st
	return st
}

// prepareWanted prepares the texts get queued. The caller makes sure the
// connection is free (the writer: between two transactions).
func (c *stmtCache) prepareWanted(ctx context.Context) {
	c.mu.Lock()
	wanted := c.wanted
	c.wanted = nil
	c.mu.Unlock()
	for _, q := range wanted {
		st, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			continue // it runs unprepared, as before
		}
		c.mu.Lock()
		if c.stmts[q] == nil && len(c.stmts) < maxStmts {
			c.stmts[q] = st
			delete(c.seen, q)
		} else {
			_ = st.Close()
		}
		c.mu.Unlock()
	}
}

// texts are the SQL texts the cache has met (prepared or not).
func (c *stmtCache) texts() []string {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.stmts)+len(c.seen))
	for q := range c.stmts {
		out = append(out, q)
	}
	for q := range c.seen {
		out = append(out, q)
	}
	return out
}

func (c *stmtCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		_ = st.Close()
	}
	clear(c.stmts)
}

// txPool is gorm's connection inside a write transaction: statements come
// from the writer's cache when prepared there, else run as plain SQL.
type txPool struct {
	tx    *sql.Tx
	stmts *stmtCache
}

func (p *txPool) stmt(ctx context.Context, q string) *sql.Stmt {
	if st := p.stmts.get(ctx, q, false); st != nil {
		return p.tx.StmtContext(ctx, st)
	}
	return nil
}

func (p *txPool) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return p.tx.PrepareContext(ctx, q)
}

func (p *txPool) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if st := p.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return p.tx.ExecContext(ctx, q, args...)
}

func (p *txPool) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if st := p.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.tx.QueryContext(ctx, q, args...)
}

func (p *txPool) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	if st := p.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.tx.QueryRowContext(ctx, q, args...)
}

var errManaged = errors.New("db: the transaction is committed or rolled back by InTx")

// Commit and Rollback make txPool a gorm TxCommitter, so a nested
// gorm Transaction inside InTx becomes a savepoint; the transaction itself
// ends in InTx.
func (p *txPool) Commit() error   { return errManaged }
func (p *txPool) Rollback() error { return errManaged }
