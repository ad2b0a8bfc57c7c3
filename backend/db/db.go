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
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"
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
	// Logger receives failures of background work (checkpoints, deferred
	// tasks); nil discards them.
	Logger *slog.Logger
}

// DB is an open store.
type DB struct {
	Write *gorm.DB // one connection, BEGIN IMMEDIATE; nil when the store cannot be written
	Read  *gorm.DB // read-only pool
	Path  string
	clock func() time.Time
	log   *slog.Logger
	busy  time.Duration // how long a writer waits for another process's write lock

	writeSQL, readSQL *sql.DB
	w                 *writer    // the write transactions' connection (writer.go); commitMu guards it
	readStmts         *stmtCache // prepared once on the read pool
	eachTexts         textSet    // what Each ran (its statements live in the driver's cache)

	// writeErr says why Write is nil (a read-only file system, a folder
	// without write permission): every InTx returns it.
	writeErr error
	// damaged is set once any statement met a malformed page: from then on
	// this process writes nothing to the store (see Damaged).
	damaged atomic.Bool

	// commitMu is held from BEGIN until the ordered after-commit functions
	// ran, so events committed by this process are queued for delivery in
	// commit order; and by onWriter (vacuums, checkpoints).
	commitMu sync.Mutex

	tasks *tasks // background work after commits: the checkpointer, deferred indexing
}

// WALAutocheckpoint: the writer commits without checkpointing the WAL unless
// the background checkpointer fell this far behind (pages; SQLite's default
// is 1,000): checkpoints run off the committing call (newCheckpointTask).
const WALAutocheckpoint = 10000

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		if err := stablePlans(c); err != nil {
			// Only slower: every statement whose plan reads a bound value
			// is prepared again at each run. Open says so in the log.
			plansErr.Store(&err)
		}
		return autocheckpoint(c)
	}})
}

func autocheckpoint(c *sqlite3.SQLiteConn) error {
	_, err := c.Exec(fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", WALAutocheckpoint), nil)
	return err
}

// Configure sets c up as the store sets up each connection it opens
// (besides the options of its DSN), and fails where the store would only
// log. backend/benchmarks' raw baselines use it: they must run SQLite as
// the store does.
func Configure(c *sqlite3.SQLiteConn) error {
	if err := stablePlans(c); err != nil {
		return err
	}
	return autocheckpoint(c)
}

// plansErr is why a connection could not keep its plans (stablePlans), if
// one could not.
var plansErr atomic.Pointer[error]

const driverName = "sqlite3_atrium"

// Open opens (creating if needed) and migrates the store at path.
//
// Opening an existing, up-to-date store never writes to it: the schema
// version is read first, and only a store that needs a migration is written
// to, under the write lock (BEGIN IMMEDIATE) taken before the version is read
// again, so any number of processes may open a new store at once. A store
// that cannot be written (a read-only file system or folder) still opens for
// reading; its writes fail with one line that names the cause.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	raiseHeapFloor()
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
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	d := &DB{Path: path, clock: clock, log: lg, tasks: newTasks(lg), busy: busy}
	existed, err := createPrivate(path)
	if err != nil {
		return nil, d.cannotWrite(err, "create")
	}
	q := url.Values{}
	q.Set("_foreign_keys", "on")
	q.Set("_busy_timeout", fmt.Sprint(busy.Milliseconds()))
	// SQLite's multi-thread mode: no mutex around each of a connection's
	// calls (one per column value read: a list page of 50 took ~2,500 lock
	// pairs, a quarter of its time). database/sql hands a connection, and the
	// statements prepared on it, to one goroutine at a time, which is all
	// this mode asks; the driver's cancellation calls sqlite3_interrupt,
	// which SQLite allows from any thread.
	q.Set("_mutex", "no")
	wq := url.Values{}
	for k, v := range q {
		wq[k] = v
	}
	wq.Set("_journal_mode", "WAL")
	wq.Set("_synchronous", sync)
	if v := walVFS(); v != "" {
		wq.Set("vfs", v) // walvfs.go
	}
	writeDSN := "file:" + path + "?" + wq.Encode()
	// auto_vacuum=INCREMENTAL makes a new store able to give back the space
	// a bulk delete frees (maintenance runs incremental_vacuum). The mode can
	// only be set before the first page is written (the driver sets it
	// before WAL mode, which writes the header), so only on a new file (the
	// pragma writes the header even when it changes nothing); an older store
	// is converted by the next full VACUUM (Vacuum).
	vacuumMode := ""
	if !existed {
		vacuumMode = "&_auto_vacuum=incremental"
	}
	writerDSN := writeDSN + vacuumMode + "&_txlock=immediate"
	write, err := openGorm(writerDSN, 2)
	// Processes opening a new store at once: while the first one turns the
	// fresh file to WAL, another's journal_mode pragma can meet its lock in
	// rollback-journal mode, where SQLite answers busy at once rather than
	// wait (the busy timeout does not apply to that lock). Try again within
	// the busy timeout.
	for deadline := time.Now().Add(busy); isBusy(err) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		write, err = openGorm(writerDSN, 2)
	}
	if err != nil {
		if !existed {
			return nil, d.cannotWrite(err, "create")
		}
		// Readable, perhaps, but not writable: serve reads, refuse writes.
		d.writeErr = d.cannotWrite(err, "write")
	}
	d.Write = write
	readConns := opts.ReadConns
	if readConns <= 0 {
		readConns = 4
	}
	readDSN := "file:" + path + "?" + q.Encode() + fmt.Sprintf("&mode=ro&_query_only=1&_stmt_cache_size=%d", readStmtCache)
	read, err := openGorm(readDSN, readConns)
	if err != nil && write == nil {
		// A WAL store in a read-only folder whose -shm is gone (its last
		// writer closed cleanly): nobody can be writing it, so read it as
		// immutable.
		read, err = openGorm(readDSN+"&immutable=1", readConns)
	}
	if err != nil {
		d.closePool(write)
		return nil, fmt.Errorf("open %s for reading: %w", path, d.classify(err))
	}
	d.Read = read
	for _, g := range []*gorm.DB{write, read} {
		if g != nil {
			d.watch(g)
		}
	}
	if err := d.migrate(ctx); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	tightenModes(path)
	if err := plansErr.Load(); err != nil {
		lg.Warn("the store's statements are planned again at every run", "err", *err)
	}
	if pageMemErr != nil {
		lg.Debug("SQLite's page caches allocate with malloc", "err", pageMemErr)
	}
	d.readSQL, _ = read.DB()
	d.readStmts = newStmtCache(d.readSQL, 2)
	if write != nil {
		d.writeSQL, _ = write.DB()
		d.writeSQL.SetConnMaxIdleTime(writerIdle) // the second connection (writer.go)
		d.tasks.add(newCheckpointTask(d, writeDSN))
	}
	return d, nil
}

// createPrivate creates path empty with mode 0600 unless it exists (SQLite
// would create it 0644, and its -wal and -shm files copy the store's mode):
// transcripts are private. It reports whether the file was there already.
func createPrivate(path string) (existed bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		return false, f.Close()
	}
	if errors.Is(err, fs.ErrExist) {
		return true, nil
	}
	if _, serr := os.Stat(path); serr == nil {
		return true, nil // present but not openable for writing here
	}
	return false, err
}

// tightenModes makes an existing store, its WAL and its shared-memory file
// private (0600) if an older Atrium left them readable by others; best
// effort: a read-only home keeps its modes.
func tightenModes(path string) {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if info, err := os.Stat(p); err == nil && info.Mode().Perm()&0o077 != 0 {
			_ = os.Chmod(p, info.Mode().Perm()&0o700)
		}
	}
}

func openGorm(dsn string, conns int) (*gorm.DB, error) {
	g, err := gorm.Open(sqlite.New(sqlite.Config{DriverName: driverName, DSN: dsn}), &gorm.Config{
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

// Close runs the background tasks a last time (bounded), then closes both
// pools. The writer of a store found damaged is left open until the process
// exits: closing the last connection would checkpoint the WAL into the
// damaged file.
func (d *DB) Close() error {
	d.tasks.close()
	d.readStmts.close()
	d.closePool(d.Read)
	if !d.damaged.Load() {
		d.commitMu.Lock()
		if d.w != nil {
			d.w.close(false)
			d.w = nil
		}
		d.commitMu.Unlock()
		d.closePool(d.Write)
	}
	return nil
}

// Now is the store's clock.
func (d *DB) Now() time.Time { return d.clock() }

// Tx is a write transaction. Functions queued with AfterCommit run, in order,
// after the transaction committed and outside it; they never run on rollback.
//
// G is gorm on the transaction. Exec, Query and QueryRow run SQL directly on
// it, without gorm: the hot paths use them. Both reuse statements prepared
// once on the writer connection (gorm's own statement cache re-prepares a
// statement in every transaction).
type Tx struct {
	G   *gorm.DB
	Now time.Time // one timestamp for the whole transaction

	pool        *txPool
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

// Exec runs a statement in the transaction.
func (tx *Tx) Exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return tx.pool.ExecContext(ctx, q, args...)
}

// Query runs a query in the transaction; close the rows.
func (tx *Tx) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return tx.pool.QueryContext(ctx, q, args...)
}

// QueryRow runs a query that returns at most one row.
func (tx *Tx) QueryRow(ctx context.Context, q string, args ...any) *sql.Row {
	return tx.pool.QueryRowContext(ctx, q, args...)
}

// InTx runs fn in one write transaction (BEGIN IMMEDIATE). If fn returns an
// error or panics, the transaction rolls back and nothing queued runs.
func (d *DB) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	if err := d.Writable(); err != nil {
		return err
	}
	d.commitMu.Lock()
	locked := true
	defer func() {
		if locked {
			d.commitMu.Unlock()
		}
	}()
	w, err := d.writerConn(ctx)
	if err != nil {
		return Translate(d.classify(err))
	}
	// stop comes before anything that may close the connection: an
	// interrupt must never reach a handle closed.
	stop := w.watch(ctx)
	if _, err := w.begin.ExecContext(w.detach(ctx)); err != nil {
		stop()
		switch {
		case badConn(err):
			d.w = nil
			w.close(true)
		case w.inTx():
			d.end(w) // a BEGIN interrupted half way (a cancelled context)
		}
		return Translate(d.classify(cancelled(ctx, err)))
	}
	pool := &txPool{w: w}
	g := d.Write.Session(&gorm.Session{Context: ctx, NewDB: true})
	g.Statement.ConnPool = pool
	t := &Tx{G: g, Now: d.clock(), pool: pool}
	committed := false
	defer func() {
		stop()
		if !committed {
			d.end(w)
		}
	}()
	if err := fn(t); err != nil {
		return Translate(d.classify(cancelled(ctx, err)))
	}
	stop()
	// A context cancelled meanwhile refuses the commit, as sql.Tx did.
	if err := ctx.Err(); err != nil {
		return Translate(d.classify(err))
	}
	if _, err := w.commit.ExecContext(context.Background()); err != nil {
		return Translate(d.classify(err))
	}
	committed = true
	for _, f := range t.ordered {
		f()
	}
	locked = false
	d.commitMu.Unlock()
	for _, f := range t.afterCommit {
		f()
	}
	d.tasks.kick()
	return nil
}

// cancelled is err, matching ctx's error too once ctx has ended: a
// statement interrupted by watch fails with SQLite's "interrupted", which
// callers know as the end of their context.
func cancelled(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", err, cerr)
	}
	return err
}

// Query runs a read-only query on the read pool with a statement prepared
// once; close the rows.
func (d *DB) Query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	var rows *sql.Rows
	var err error
	if st := d.readStmts.get(ctx, q); st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else {
		rows, err = d.readSQL.QueryContext(ctx, q, args...)
	}
	return rows, d.classify(err)
}

// QueryRow is Query for at most one row.
func (d *DB) QueryRow(ctx context.Context, q string, args ...any) *sql.Row {
	if st := d.readStmts.get(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return d.readSQL.QueryRowContext(ctx, q, args...)
}

// Statements lists the distinct SQL this process ran through Tx.Exec/Query,
// gorm inside InTx, and DB.Query/QueryRow/Each (the hot paths), sorted.
func (d *DB) Statements() []string {
	seen := map[string]bool{}
	var out []string
	var written []string
	d.commitMu.Lock()
	if d.w != nil {
		written = d.w.stmts.texts()
	}
	d.commitMu.Unlock()
	for _, q := range append(append(written, d.readStmts.texts()...), d.eachTexts.texts()...) {
		if !seen[q] {
			seen[q] = true
			out = append(out, q)
		}
	}
	sort.Strings(out)
	return out
}

// QueryPlan is EXPLAIN QUERY PLAN of q (parameters bound to NULL: plans do
// not depend on the values here), one line per step, indented by depth.
func (d *DB) QueryPlan(ctx context.Context, q string) ([]string, error) {
	args := make([]any, strings.Count(q, "?"))
	rows, err := d.readSQL.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	depth := map[int]int{}
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return nil, err
		}
		depth[id] = depth[parent] + 1
		out = append(out, strings.Repeat("  ", depth[id]-1)+detail)
	}
	return out, rows.Err()
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
	// The same, from statements run without gorm (Tx.Exec and friends).
	var se sqlite3.Error
	if errors.As(err, &se) && (se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey) {
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

// IncrementalVacuum gives up to maxPages free pages back to the file
// system on a store in auto_vacuum=INCREMENTAL mode (maintenance); other
// stores are left alone (a full VACUUM is the user's call: Vacuum). It
// returns the bytes given back.
func (d *DB) IncrementalVacuum(ctx context.Context, maxPages int64) (int64, error) {
	if d.Writable() != nil {
		return 0, nil // a store this process cannot write keeps its pages
	}
	p, err := d.PageStats(ctx)
	if err != nil || p.AutoVacuum != "incremental" || p.FreePages == 0 {
		return 0, err
	}
	n := min(p.FreePages, maxPages)
	if err := d.onWriter(ctx, func(c *sql.Conn) error {
		return drain(c.QueryContext(ctx, fmt.Sprintf(`PRAGMA incremental_vacuum(%d)`, n)))
	}); err != nil {
		return 0, fmt.Errorf("incremental vacuum: %w", d.classify(err))
	}
	d.tasks.kick() // the checkpointer brings the shorter file back
	return n * p.PageSize, nil
}

// Vacuum gives free pages back to the file system: PRAGMA
// incremental_vacuum on a store in auto_vacuum=INCREMENTAL mode, a full
// VACUUM otherwise (which makes the store incremental from then on); then
// the WAL is checkpointed and truncated. It returns
// the mode it used. Writers wait for it (it runs on the writer's connection).
func (d *DB) Vacuum(ctx context.Context) (string, error) {
	used := ""
	err := d.onWriter(ctx, func(c *sql.Conn) error {
		var mode int
		if err := c.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode); err != nil {
			return fmt.Errorf("vacuum: %w", err)
		}
		stmt := "PRAGMA incremental_vacuum"
		used = "incremental_vacuum"
		if mode != 2 {
			// The full VACUUM also converts a store made before auto_vacuum:
			// later vacuums are incremental.
			stmt, used = "VACUUM", "vacuum"
			if _, err := c.ExecContext(ctx, `PRAGMA auto_vacuum = INCREMENTAL`); err != nil {
				return fmt.Errorf("vacuum: %w", err)
			}
		}
		// incremental_vacuum frees one page per step: read it to the end.
		if err := drain(c.QueryContext(ctx, stmt)); err != nil {
			return fmt.Errorf("%s: %w", used, err)
		}
		if err := checkpointTruncate(ctx, c); err != nil {
			return fmt.Errorf("checkpoint after %s: %w", used, err)
		}
		return nil
	})
	return used, err
}

// VacuumFull rebuilds the store with a full VACUUM whatever its mode (tools
// and benchmarks: an incremental vacuum gives pages back but does not
// defragment); the rebuilt store is in the WAL until a checkpoint.
func (d *DB) VacuumFull(ctx context.Context) error {
	return d.onWriter(ctx, func(c *sql.Conn) error { _, err := c.ExecContext(ctx, `VACUUM`); return err })
}

// Checkpoint copies the WAL into the store and truncates it (tools and
// benchmarks; the background checkpointer does this passively).
func (d *DB) Checkpoint(ctx context.Context) error {
	return d.onWriter(ctx, func(c *sql.Conn) error { return checkpointTruncate(ctx, c) })
}

// checkpointTruncate runs a TRUNCATE checkpoint on c. The background
// checkpointer may be copying pages on its own connection: then this one
// answers busy (it does not wait for another checkpoint) and the file keeps
// its old size until the next one. Try again for a while.
func checkpointTruncate(ctx context.Context, c *sql.Conn) error {
	for attempt := 0; ; attempt++ {
		var busy, frames, done int64
		if err := c.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &frames, &done); err != nil {
			return err
		}
		if busy == 0 || attempt == 40 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// drain reads rows to the end and closes them.
func drain(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	return errors.Join(rows.Err(), rows.Close())
}
