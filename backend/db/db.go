// Package db opens Atrium's SQLite store, runs its versioned migrations and
// gives services a transaction type with an after-commit queue.
//
// The store is one SQLite file in WAL mode with two pools: a writer pool of
// exactly one connection whose transactions start with BEGIN IMMEDIATE (so two
// writers queue on the busy timeout instead of failing a read-then-write), and
// a small read-only pool so listing and search never wait behind a bulk delete.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"atrium/backend/apperr"
)

// Options tune how the store is opened.
type Options struct {
	// Synchronous is "normal" (default: a committed change survives an app
	// crash; the last commits can be lost to a power cut) or "full".
	Synchronous string
	// BusyTimeout bounds how long a writer waits for another process's lock.
	BusyTimeout time.Duration
	// Clock stamps transactions; nil means time.Now.
	Clock func() time.Time
	// ReadConns is the size of the read pool (default 4).
	ReadConns int
}

// DB is an open store.
type DB struct {
	Write *gorm.DB // one connection, BEGIN IMMEDIATE
	Read  *gorm.DB // read-only pool
	Path  string
	clock func() time.Time

	// commitMu is held from BEGIN until the ordered after-commit functions
	// ran, so events committed by this process are queued for delivery in
	// commit order (the writer pool alone releases the connection first).
	commitMu sync.Mutex
}

// Open opens (creating if needed) and migrates the store at path.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	sync := strings.ToLower(strings.TrimSpace(opts.Synchronous))
	switch sync {
	case "", "normal":
		sync = "NORMAL"
	case "full":
		sync = "FULL"
	default:
		return nil, apperr.New(apperr.Invalid, "storage.synchronous must be normal or full, not %q", opts.Synchronous)
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 5 * time.Second
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	q := url.Values{}
	q.Set("_foreign_keys", "on")
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
	q.Set("_synchronous", sync)
	writeDSN := "file:" + path + "?" + q.Encode() + "&_txlock=immediate"
	write, err := openGorm(writeDSN, 1)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	d := &DB{Write: write, Path: path, clock: clock}
	if err := migrate(ctx, write); err != nil {
		d.closePool(write)
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	readConns := opts.ReadConns
	if readConns <= 0 {
		readConns = 4
	}
	read, err := openGorm("file:"+path+"?"+q.Encode()+"&_query_only=1", readConns)
	if err != nil {
		d.closePool(write)
		return nil, fmt.Errorf("open %s for reading: %w", path, err)
	}
	d.Read = read
	return d, nil
}

func openGorm(dsn string, conns int) (*gorm.DB, error) {
	g, err := gorm.Open(sqlite.Open(dsn), &gorm.Config{
		TranslateError:         true,
		SkipDefaultTransaction: true,
		PrepareStmt:            true,
		Logger:                 logger.Discard,
	})
	if err != nil {
		return nil, err
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, err
	}
	sqlDB.SetMaxOpenConns(conns)
	sqlDB.SetMaxIdleConns(conns)
	sqlDB.SetConnMaxLifetime(0)
	// Force one connection now so a bad path or a locked file fails at Open.
	if err := sqlDB.Ping(); err != nil {
		_ = sqlDB.Close()
		return nil, err
	}
	return g, nil
}

func (d *DB) closePool(g *gorm.DB) {
	if g == nil {
		return
	}
	if s, err := g.DB(); err == nil {
		_ = s.Close()
	}
}

// Close closes both pools.
func (d *DB) Close() error {
	d.closePool(d.Read)
	d.closePool(d.Write)
	return nil
}

// Now is the store's clock.
func (d *DB) Now() time.Time { return d.clock() }

// Tx is a write transaction. Functions queued with AfterCommit run, in order,
// after the transaction committed and outside it; they never run on rollback.
type Tx struct {
	G   *gorm.DB
	Now time.Time // one timestamp for the whole transaction

	ordered     []func()
	afterCommit []func()
}

// AfterCommit queues fn to run once the transaction has committed, outside
// every lock (file clean-up and the like).
func (tx *Tx) AfterCommit(fn func()) { tx.afterCommit = append(tx.afterCommit, fn) }

// AfterCommitOrdered queues fn to run after commit, before the next
// transaction of this process can begin. fn must be quick and must not block
// (the hook bus uses it to queue deliveries in commit order).
func (tx *Tx) AfterCommitOrdered(fn func()) { tx.ordered = append(tx.ordered, fn) }

// InTx runs fn in one write transaction (BEGIN IMMEDIATE). If fn returns an
// error or panics, the transaction rolls back and nothing queued runs.
func (d *DB) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	var t *Tx
	d.commitMu.Lock()
	locked := true
	defer func() {
		if locked {
			d.commitMu.Unlock()
		}
	}()
	err := d.Write.WithContext(ctx).Transaction(func(g *gorm.DB) error {
		t = &Tx{G: g, Now: d.clock()}
		return fn(t)
	})
	if err != nil {
		return Translate(err)
	}
	for _, f := range t.ordered {
		f()
	}
	locked = false
	d.commitMu.Unlock()
	for _, f := range t.afterCommit {
		f()
	}
	return nil
}

// Translate turns gorm's sentinel errors into coded errors, once, here.
func Translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gorm.ErrRecordNotFound), errors.Is(err, sql.ErrNoRows):
		return apperr.Wrap(apperr.NotFound, err, "not found")
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return apperr.Wrap(apperr.Conflict, err, "already exists")
	}
	return err
}

// Size is the store's size on disk: the database file and its WAL.
func (d *DB) Size() (dbBytes, walBytes int64) {
	if fi, err := os.Stat(d.Path); err == nil {
		dbBytes = fi.Size()
	}
	if fi, err := os.Stat(d.Path + "-wal"); err == nil {
		walBytes = fi.Size()
	}
	return dbBytes, walBytes
}

// Pages describes the store's pages: how many, how large, how many are free
// (space a vacuum gives back), and its auto_vacuum mode.
type Pages struct {
	PageSize   int64  `json:"page_size"`
	PageCount  int64  `json:"page_count"`
	FreePages  int64  `json:"free_pages"`
	AutoVacuum string `json:"auto_vacuum"` // none, full or incremental
}

// PageStats reads Pages.
func (d *DB) PageStats(ctx context.Context) (Pages, error) {
	var p Pages
	var mode int
	g := d.Read.WithContext(ctx)
	for _, q := range []struct {
		pragma string
		into   any
	}{{"page_size", &p.PageSize}, {"page_count", &p.PageCount}, {"freelist_count", &p.FreePages}, {"auto_vacuum", &mode}} {
		if err := g.Raw("PRAGMA " + q.pragma).Scan(q.into).Error; err != nil {
			return Pages{}, fmt.Errorf("read %s: %w", q.pragma, err)
		}
	}
	p.AutoVacuum = map[int]string{0: "none", 1: "full", 2: "incremental"}[mode]
	return p, nil
}

// Vacuum gives free pages back to the file system: PRAGMA
// incremental_vacuum on a store in auto_vacuum=INCREMENTAL mode, a full
// VACUUM otherwise; then the WAL is checkpointed and truncated. It returns
// the mode it used. Writers wait for it (it holds the one write connection).
func (d *DB) Vacuum(ctx context.Context) (string, error) {
	d.commitMu.Lock()
	defer d.commitMu.Unlock()
	var mode int
	if err := d.Write.WithContext(ctx).Raw(`PRAGMA auto_vacuum`).Scan(&mode).Error; err != nil {
		return "", fmt.Errorf("vacuum: %w", err)
	}
	stmt, used := "VACUUM", "vacuum"
	if mode == 2 {
		stmt, used = "PRAGMA incremental_vacuum", "incremental_vacuum"
	}
	sqlDB, err := d.Write.DB()
	if err != nil {
		return "", err
	}
	// On the raw connection, outside gorm's statement cache.
	// incremental_vacuum frees one page per step: read it to the end.
	rows, err := sqlDB.QueryContext(ctx, stmt)
	if err != nil {
		return "", fmt.Errorf("%s: %w", used, err)
	}
	for rows.Next() {
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return "", fmt.Errorf("%s: %w", used, err)
	}
	if _, err := sqlDB.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return "", fmt.Errorf("checkpoint after %s: %w", used, err)
	}
	return used, nil
}
