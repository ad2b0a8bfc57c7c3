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
// So the store keeps its own caches: the read pool's statements are prepared
// on its *sql.DB (database/sql prepares each on a connection when first used
// there), and the writer's on the one connection write transactions run on
// (writerConn), which the writer keeps between transactions (gorm's queries
// go through txPool, the hot paths call Tx.Exec/Query directly). A text is
// prepared once it was seen `after` times: dynamic SQL seen once is never
// cached.
type stmtCache struct {
	on    preparer
	after int

	mu    sync.Mutex
	stmts map[string]*sql.Stmt
	seen  map[string]int
}

// preparer is a *sql.DB or a *sql.Conn.
type preparer interface {
	PrepareContext(ctx context.Context, q string) (*sql.Stmt, error)
}

// Bounds: dynamic SQL (filters, IN lists) must not grow the caches forever.
const (
	maxStmts = 512
	maxSeen  = 4096
)

func newStmtCache(on preparer, after int) *stmtCache {
	return &stmtCache{on: on, after: after, stmts: map[string]*sql.Stmt{}, seen: map[string]int{}}
}

// get returns the prepared statement for q, or nil: a text seen often
// enough is prepared then.
func (c *stmtCache) get(ctx context.Context, q string) *sql.Stmt {
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
	c.mu.Unlock()
	if !due {
		return nil
	}
	st, err := c.on.PrepareContext(ctx, q)
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

// txPool is gorm's connection inside a write transaction: the writer's
// connection, with the statements prepared on it when there are.
type txPool struct{ w *writer }

func (p *txPool) PrepareContext(ctx context.Context, q string) (*sql.Stmt, error) {
	return p.w.conn.PrepareContext(p.w.detach(ctx), q)
}

func (p *txPool) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	ctx = p.w.detach(ctx)
	if st := p.w.stmts.get(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return p.w.conn.ExecContext(ctx, q, args...)
}

func (p *txPool) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	ctx = p.w.detach(ctx)
	if st := p.w.stmts.get(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.w.conn.QueryContext(ctx, q, args...)
}

func (p *txPool) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	ctx = p.w.detach(ctx)
	if st := p.w.stmts.get(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.w.conn.QueryRowContext(ctx, q, args...)
}

var errManaged = errors.New("db: the transaction is committed or rolled back by InTx")

// Commit and Rollback make txPool a gorm TxCommitter, so a nested
// gorm Transaction inside InTx becomes a savepoint; the transaction itself
// ends in InTx.
func (p *txPool) Commit() error   { return errManaged }
func (p *txPool) Rollback() error { return errManaged }
