package benchmarks

// Every benchmark has an /atrium sub-benchmark (the real store: db.Open,
// sessions.Service, hooks.Bus) and a /raw one (database/sql + mattn, no ORM,
// the same migration SQL, the same DSN options, one connection), run in the
// same `go test -bench` process so their ratio can be quoted.
//
//	go test -tags sqlite_fts5 -run '^$' -bench . -benchtime=1s -count=5 -timeout 60m ./backend/benchmarks/

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mattn/go-sqlite3"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
)

var ctx = context.Background()

var (
	tmpRoot string

	corpusOnce sync.Once
	corpus     *Corpus

	templateOnce sync.Once
	templatePath string
	templateErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "atrium-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tmpRoot = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func getCorpus() *Corpus {
	corpusOnce.Do(func() { corpus = BuildCorpus() })
	return corpus
}

func fixedClock() time.Time { return Now }

// settableClock lets a load stamp each transaction with the corpus' times.
type settableClock struct{ ms atomic.Int64 }

func (c *settableClock) Now() time.Time { return time.UnixMilli(c.ms.Load()).UTC() }
func (c *settableClock) Set(ms int64)   { c.ms.Store(ms) }

var discard = slog.New(slog.DiscardHandler)

// ---- raw SQLite ------------------------------------------------------------

// rawDSN is exactly the DSN db.Open builds for its writer pool.
func rawDSN(path string) string {
	q := url.Values{}
	q.Set("_mutex", "no")
	q.Set("_foreign_keys", "on")
	q.Set("_journal_mode", "WAL")
	q.Set("_busy_timeout", fmt.Sprint((5 * time.Second).Milliseconds()))
	q.Set("_synchronous", "NORMAL")
	return "file:" + path + "?" + q.Encode() + "&_txlock=immediate"
}

var schemaOnce sync.Once
var schema string

// schemaSQL is every migration script in ../db/migrations, in version order:
// the schema db.Open creates.
func schemaSQL(tb testing.TB) string {
	schemaOnce.Do(func() {
		files, err := filepath.Glob("../db/migrations/*.sql")
		if err != nil || len(files) == 0 {
			tb.Fatalf("read migrations: %v (%d files)", err, len(files))
		}
		sort.Strings(files) // 0001_..., 0002_...
		var b strings.Builder
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				tb.Fatalf("read migration: %v", err)
			}
			b.Write(raw)
			b.WriteString("\n")
		}
		schema = b.String()
	})
	return schema
}

// openRaw opens path with one connection; create applies the migration SQL.
// rawDriver sets each connection up as db.Open's driver does (db.Configure).
const rawDriver = "sqlite3_raw"

func init() { sql.Register(rawDriver, &sqlite3.SQLiteDriver{ConnectHook: db.Configure}) }

func openRaw(tb testing.TB, path string, create bool) *sql.DB {
	tb.Helper()
	r, err := sql.Open(rawDriver, rawDSN(path))
	if err != nil {
		tb.Fatal(err)
	}
	r.SetMaxOpenConns(1)
	r.SetMaxIdleConns(1)
	r.SetConnMaxLifetime(0)
	if err := r.Ping(); err != nil {
		tb.Fatal(err)
	}
	if create {
		if _, err := r.Exec(schemaSQL(tb)); err != nil {
			tb.Fatalf("apply schema: %v", err)
		}
	}
	return r
}

func mustPrepare(tb testing.TB, r *sql.DB, q string) *sql.Stmt {
	tb.Helper()
	st, err := r.Prepare(q)
	if err != nil {
		tb.Fatalf("prepare %q: %v", q, err)
	}
	return st
}

const (
	sqlUpdateCounters = `UPDATE sessions SET message_count = message_count + 1, token_count = token_count + ?, last_activity_at = ?
		WHERE id = ? AND ended_at IS NULL`
	sqlInsertMessage = `INSERT INTO messages (session_id, role, content, sent_content, tool_name, tool_call_id, token_count, created_at, active)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1) RETURNING id`
	sqlInsertSessionNew = `INSERT INTO sessions (id, source, title, profile, relation, started_at, last_activity_at, pinned)
		VALUES (?, ?, ?, 'default', '', ?, ?, 0)`
	sqlInsertSessionFull = `INSERT INTO sessions (id, source, title, profile, parent_session_id, relation, started_at, ended_at, end_reason,
		last_activity_at, archived, archived_at, archived_by, pinned, message_count, token_count)
		VALUES (?, ?, ?, 'default', NULL, '', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlInsertMessageFull = `INSERT INTO messages (session_id, role, content, sent_content, tool_name, tool_call_id, token_count, created_at, active)
		VALUES (?, ?, ?, NULL, ?, '', ?, ?, 1)`
)

func nullMs(ms int64) any {
	if ms == 0 {
		return nil
	}
	return ms
}

// fillBulk writes the corpus in its final state (counters set at insert), 500
// sessions per transaction. It builds the template and is the raw-bulk load.
func fillBulk(tb testing.TB, r *sql.DB, c *Corpus) {
	insS := mustPrepare(tb, r, sqlInsertSessionFull)
	defer insS.Close()
	insM := mustPrepare(tb, r, sqlInsertMessageFull)
	defer insM.Close()
	for start := 0; start < len(c.Sessions); start += 500 {
		tx, err := r.Begin()
		if err != nil {
			tb.Fatal(err)
		}
		s1, m1 := tx.Stmt(insS), tx.Stmt(insM)
		for i := start; i < min(start+500, len(c.Sessions)); i++ {
			s := c.Sessions[i]
			endReason, archivedBy := "", ""
			if s.EndedAt != 0 {
				endReason = "user"
			}
			if s.Archived {
				archivedBy = "user"
			}
			if _, err := s1.Exec(s.ID, s.Source, s.Title, s.StartedAt, nullMs(s.EndedAt), endReason, s.LastActivityAt,
				s.Archived, nullMs(s.ArchivedAt), archivedBy, s.Pinned, len(c.Messages[i]), s.Tokens); err != nil {
				tb.Fatal(err)
			}
			for _, m := range c.Messages[i] {
				if _, err := m1.Exec(s.ID, m.Role, m.Content, m.ToolName, m.Tokens, m.CreatedAt); err != nil {
					tb.Fatal(err)
				}
			}
		}
		if err := tx.Commit(); err != nil {
			tb.Fatal(err)
		}
	}
}

// ---- the shared 10,000 x 20 store -------------------------------------------

// template builds, once per process, a migrated store holding the corpus:
// db.Open creates and migrates it (so Atrium reopens it without migrating),
// raw SQL fills it, then the WAL is checkpointed and the file closed so a
// plain file copy is a consistent store.
func template(tb testing.TB) string {
	tb.Helper()
	templateOnce.Do(func() {
		c := getCorpus()
		path := filepath.Join(tmpRoot, "template.db")
		d, err := db.Open(ctx, path, db.Options{Clock: fixedClock})
		if err != nil {
			templateErr = err
			return
		}
		_ = d.Close()
		r := openRaw(tb, path, false)
		start := time.Now()
		fillBulk(tb, r, c)
		// The raw inserts queued every message for the search index: index
		// them the way the store does (its background indexer), so both
		// stores start fully indexed.
		if templateErr = indexAll(path); templateErr != nil {
			return
		}
		if _, err := r.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			templateErr = err
			return
		}
		templateErr = r.Close()
		if st, err := os.Stat(path); err == nil {
			fmt.Fprintf(os.Stderr, "template store: %d sessions x %d messages, %.1f MB, built in %s; search word %q in %d messages\n",
				len(c.Sessions), MsgsPerSession, float64(st.Size())/1e6, time.Since(start).Round(time.Millisecond), c.SearchWord, c.SearchDF)
		}
		templatePath = path
	})
	if templateErr != nil {
		tb.Fatalf("build template store: %v", templateErr)
	}
	return templatePath
}

// indexAll runs the store's indexer until the index queue is empty.
func indexAll(path string) error {
	d, err := db.Open(ctx, path, db.Options{Clock: fixedClock})
	if err != nil {
		return err
	}
	defer d.Close()
	svc := sessions.NewService(d, nil, sessions.Options{Logger: discard, ManualIndex: true})
	for {
		more, err := svc.IndexPending(ctx)
		if err != nil || !more {
			return err
		}
	}
}

// copyTemplate copies the template store into a fresh directory and syncs it,
// so no timed checkpoint pays for flushing the copy. It returns the db path
// and a cleanup.
func copyTemplate(tb testing.TB) (string, func()) {
	tb.Helper()
	src := template(tb)
	dir, err := os.MkdirTemp(tmpRoot, "store-")
	if err != nil {
		tb.Fatal(err)
	}
	dst := filepath.Join(dir, "state.db")
	in, err := os.Open(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		tb.Fatal(err)
	}
	if err := out.Sync(); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
	return dst, func() { _ = os.RemoveAll(dir) }
}

// ---- Atrium -----------------------------------------------------------------

type atriumEnv struct {
	D   *db.DB
	Bus *hooks.Bus
	Svc *sessions.Service
}

// openAtrium opens the real store with a started bus (30 s callback timeout,
// no subscribers unless the caller registers some before start) and an
// empty sessions/ folder.
func openAtrium(tb testing.TB, path string, clock func() time.Time, register func(*hooks.Bus)) *atriumEnv {
	tb.Helper()
	d, err := db.Open(ctx, path, db.Options{Clock: clock})
	if err != nil {
		tb.Fatal(err)
	}
	bus := hooks.NewBus(d, hooks.Options{Timeout: 30 * time.Second, Logger: discard})
	if register != nil {
		register(bus)
	}
	if err := bus.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(filepath.Dir(path), "sessions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	// No trash: deletes and prunes remove rows at once, like the raw floor
	// and the peer store they are compared with (a move to the trash is one
	// UPDATE; see docs/benchmarks.md, issue #14).
	noTrash := 0
	svc := sessions.NewService(d, bus, sessions.Options{Profile: "default", SessionsDir: dir, Logger: discard, TrashDays: &noTrash})
	return &atriumEnv{D: d, Bus: bus, Svc: svc}
}

func (e *atriumEnv) close(tb testing.TB) {
	if err := e.Bus.Close(ctx); err != nil {
		tb.Fatal(err)
	}
	_ = e.D.Close()
}

// ---- 1. append one message in its own transaction ----------------------------

func BenchmarkAppendMessage(b *testing.B) {
	c := getCorpus()
	b.Run("atrium", func(b *testing.B) {
		path, cleanup := copyTemplate(b)
		defer cleanup()
		e := openAtrium(b, path, fixedClock, nil)
		defer e.close(b)
		i := 0
		for b.Loop() {
			m := c.Extra[i%len(c.Extra)]
			if _, err := e.Svc.AppendMessage(ctx, c.LiveIDs[i%len(c.LiveIDs)], sessions.NewMessage{Role: m.Role, Content: m.Content}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	rawAppend := func(reprepare bool, setup ...string) func(b *testing.B) {
		return func(b *testing.B) {
			path, cleanup := copyTemplate(b)
			defer cleanup()
			r := openRaw(b, path, false)
			defer r.Close()
			for _, q := range setup {
				if _, err := r.Exec(q); err != nil {
					b.Fatalf("%s: %v", q, err)
				}
			}
			upd := mustPrepare(b, r, sqlUpdateCounters)
			ins := mustPrepare(b, r, sqlInsertMessage)
			now := Now.UnixMilli()
			i := 0
			for b.Loop() {
				m := c.Extra[i%len(c.Extra)]
				id := c.LiveIDs[i%len(c.LiveIDs)]
				tx, err := r.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock=immediate)
				if err != nil {
					b.Fatal(err)
				}
				var res sql.Result
				var row *sql.Row
				if reprepare {
					// SQL text: mattn prepares and finalizes each statement.
					res, err = tx.ExecContext(ctx, sqlUpdateCounters, m.Tokens, now, id)
				} else {
					res, err = tx.StmtContext(ctx, upd).ExecContext(ctx, m.Tokens, now, id)
				}
				if err != nil {
					b.Fatal(err)
				}
				if n, _ := res.RowsAffected(); n != 1 {
					b.Fatalf("session %s not live", id)
				}
				if reprepare {
					row = tx.QueryRowContext(ctx, sqlInsertMessage, id, m.Role, m.Content, nil, "", "", m.Tokens, now)
				} else {
					row = tx.StmtContext(ctx, ins).QueryRowContext(ctx, id, m.Role, m.Content, nil, "", "", m.Tokens, now)
				}
				var mid int64
				if err := row.Scan(&mid); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				i++
			}
		}
	}
	b.Run("raw", rawAppend(false))
	// Variants of raw that attribute the cost (docs/benchmarks.md):
	// statements re-prepared in every transaction (what gorm's PrepareStmt
	// does inside a transaction), the message indexed in its own
	// transaction (before migration 0007), and the WAL checkpointed in the
	// committing call at SQLite's default 1,000 pages.
	b.Run("raw-reprepare", rawAppend(true))
	b.Run("raw-index-in-append", rawAppend(false, indexInAppend...))
	b.Run("raw-autockpt-1000", rawAppend(false, autoCheckpoint1000))
}

// rawEventInsert is the event row as the bus writes it (hooks.EnqueueTx):
// its seq past every one the log held, delivered at once when no active
// subscriber takes its hook. Its arguments: event_id, hook, payload,
// created_at.
const rawEventInsert = `INSERT INTO hook_events (seq, event_id, hook, payload, created_at, delivered_at)
	VALUES ((SELECT max(floor, COALESCE((SELECT MAX(seq) FROM hook_events), 0)) + 1 FROM hook_seq), ?1, ?2, ?3, ?4,
		CASE WHEN EXISTS (SELECT 1 FROM hook_subscribers s, json_each(s.hooks) h WHERE s.active = 1 AND h.value = ?2) THEN NULL ELSE ?4 END)`

// What-if settings used by the attribution variants: what the store did
// before issue #15 changed it.
const (
	// FTS5's default deletemerge (migration 0007 sets 0).
	ftsDeletemerge10  = `INSERT INTO messages_fts (messages_fts, rank) VALUES ('deletemerge', 10)`
	ftsDeletemerge10S = `INSERT INTO sessions_fts (sessions_fts, rank) VALUES ('deletemerge', 10)`
	// SQLite's default: checkpoint in the committing call every 1,000 pages.
	autoCheckpoint1000 = `PRAGMA wal_autocheckpoint = 1000`
)

var (
	// The message indexed in the appending transaction (the trigger before 0007).
	indexInAppend = []string{`DROP TRIGGER messages_fts_ai`, `CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN
		INSERT INTO messages_fts (rowid, content) VALUES (new.id, new.content); END`}
	// Deleted messages removed from the index in the deleting transaction.
	removeInDelete = []string{`DROP TRIGGER messages_fts_ad`, `CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
		DELETE FROM messages_fts WHERE rowid = old.id AND NOT EXISTS (SELECT 1 FROM fts_pending WHERE id = old.id);
		DELETE FROM fts_pending WHERE id = old.id; END`}
)

// ---- 2. load 10,000 sessions x 20 messages ------------------------------------

const loadBatch = 50 // sessions per message transaction

func BenchmarkLoad10kx20(b *testing.B) {
	c := getCorpus()
	fresh := func(b *testing.B) (string, func()) {
		dir, err := os.MkdirTemp(tmpRoot, "load-")
		if err != nil {
			b.Fatal(err)
		}
		return filepath.Join(dir, "state.db"), func() { _ = os.RemoveAll(dir) }
	}
	// Atrium has no bulk insert: Create (one transaction per session, it has
	// no Tx variant), then AppendMessageTx inside d.InTx, 50 sessions x 20
	// messages = 1,000 messages per transaction.
	b.Run("atrium", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			path, cleanup := fresh(b)
			clock := &settableClock{}
			e := openAtrium(b, path, clock.Now, nil)
			b.StartTimer()
			for start := 0; start < len(c.Sessions); start += loadBatch {
				end := min(start+loadBatch, len(c.Sessions))
				for k := start; k < end; k++ {
					s := c.Sessions[k]
					clock.Set(s.StartedAt)
					if _, err := e.Svc.Create(ctx, sessions.CreateParams{ID: s.ID, Title: s.Title, Source: s.Source}); err != nil {
						b.Fatal(err)
					}
				}
				clock.Set(c.Sessions[end-1].LastActivityAt)
				err := e.D.InTx(ctx, func(tx *db.Tx) error {
					for k := start; k < end; k++ {
						for _, m := range c.Messages[k] {
							if _, err := e.Svc.AppendMessageTx(ctx, tx, c.Sessions[k].ID,
								sessions.NewMessage{Role: m.Role, Content: m.Content, ToolName: m.ToolName}); err != nil {
								return err
							}
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			e.close(b)
			cleanup()
			b.StartTimer()
		}
	})
	// raw: the same rows and statements (INSERT session; per message UPDATE
	// counters + INSERT message), 50 sessions per transaction.
	b.Run("raw", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			path, cleanup := fresh(b)
			r := openRaw(b, path, true)
			insS := mustPrepare(b, r, sqlInsertSessionNew)
			upd := mustPrepare(b, r, sqlUpdateCounters)
			insM := mustPrepare(b, r, sqlInsertMessage)
			b.StartTimer()
			for start := 0; start < len(c.Sessions); start += loadBatch {
				tx, err := r.Begin()
				if err != nil {
					b.Fatal(err)
				}
				s1, u1, m1 := tx.Stmt(insS), tx.Stmt(upd), tx.Stmt(insM)
				for k := start; k < min(start+loadBatch, len(c.Sessions)); k++ {
					s := c.Sessions[k]
					if _, err := s1.Exec(s.ID, s.Source, s.Title, s.StartedAt, s.StartedAt); err != nil {
						b.Fatal(err)
					}
					for _, m := range c.Messages[k] {
						if _, err := u1.Exec(m.Tokens, m.CreatedAt, s.ID); err != nil {
							b.Fatal(err)
						}
						var id int64
						if err := m1.QueryRow(s.ID, m.Role, m.Content, nil, m.ToolName, "", m.Tokens, m.CreatedAt).Scan(&id); err != nil {
							b.Fatal(err)
						}
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			_ = r.Close()
			cleanup()
			b.StartTimer()
		}
	})
}

// ---- 3. bulk delete of 1,000 sessions ------------------------------------------

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func anys(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// rawDestructive runs op on a fresh copy of the shared store per iteration,
// with setup statements applied before the timer starts.
func rawDestructive(c *Corpus, setup []string, op func(tb testing.TB, r *sql.DB) int64, want int) func(b *testing.B) {
	return func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			path, cleanup := copyTemplate(b)
			r := openRaw(b, path, false)
			for _, q := range setup {
				if _, err := r.Exec(q); err != nil {
					b.Fatalf("%s: %v", q, err)
				}
			}
			b.StartTimer()
			n := op(b, r)
			b.StopTimer()
			if n != int64(want) {
				b.Fatalf("removed %d sessions, want %d", n, want)
			}
			_ = r.Close()
			cleanup()
			b.StartTimer()
		}
	}
}

// atriumCopy opens Atrium on a fresh copy of the shared store, with setup
// statements applied (raw) first; cleanup closes it and removes the copy.
func atriumCopy(tb testing.TB, setup ...string) (*atriumEnv, func()) {
	path, cleanup := copyTemplate(tb)
	if len(setup) > 0 {
		r := openRaw(tb, path, false)
		execAll(tb, r, setup)
		_ = r.Close()
	}
	e := openAtrium(tb, path, fixedClock, nil)
	return e, func() { e.close(tb); cleanup() }
}

// atriumDestructive runs op on Atrium over a fresh copy of the shared store
// per iteration, with setup statements applied (raw) before it opens.
func atriumDestructive(setup []string, op func(e *atriumEnv) (sessions.Result, error), want int) func(b *testing.B) {
	return func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			e, cleanup := atriumCopy(b, setup...)
			b.StartTimer()
			res, err := op(e)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if len(res.AffectedIDs) != want {
				b.Fatalf("%d rows, want %d", len(res.AffectedIDs), want)
			}
			cleanup()
			b.StartTimer()
		}
	}
}

func BenchmarkBulkDelete1000(b *testing.B) {
	c := getCorpus()
	del1000 := func(e *atriumEnv) (sessions.Result, error) { return e.Svc.Delete(ctx, c.DeleteIDs, nil) }
	b.Run("atrium", atriumDestructive(nil, del1000, NumDelete))
	b.Run("atrium-deletemerge10", atriumDestructive([]string{ftsDeletemerge10, ftsDeletemerge10S}, del1000, NumDelete))
	del := func(tb testing.TB, r *sql.DB) int64 { return rawDelete(tb, r, c.DeleteIDs) }
	b.Run("raw", rawDestructive(c, nil, del, NumDelete))
	// What-if: the messages leave the search index in the deleting
	// transaction (before 0007), and FTS5's default deletemerge.
	b.Run("raw-remove-in-delete", rawDestructive(c, removeInDelete, del, NumDelete))
	b.Run("raw-deletemerge10", rawDestructive(c, []string{ftsDeletemerge10, ftsDeletemerge10S}, del, NumDelete))
}

// rawDelete: one transaction, DELETE messages then sessions by id, 500 ids a
// statement (Atrium's chunk size).
func rawDelete(tb testing.TB, r *sql.DB, ids []string) int64 {
	tx, err := r.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	n := rawDeleteTx(tb, tx, ids)
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	return n
}

func rawDeleteTx(tb testing.TB, tx *sql.Tx, ids []string) int64 {
	var n int64
	for start := 0; start < len(ids); start += 500 {
		chunk := anys(ids[start:min(start+500, len(ids))])
		ph := placeholders(len(chunk))
		if _, err := tx.Exec(`DELETE FROM messages WHERE session_id IN (`+ph+`)`, chunk...); err != nil {
			tb.Fatal(err)
		}
		res, err := tx.Exec(`DELETE FROM sessions WHERE id IN (`+ph+`)`, chunk...)
		if err != nil {
			tb.Fatal(err)
		}
		k, _ := res.RowsAffected()
		n += k
	}
	return n
}

// ---- 4. retention prune of 3,000 ended, old sessions ------------------------------

func BenchmarkPrune3000(b *testing.B) {
	c := getCorpus()
	prune := func(e *atriumEnv) (sessions.Result, error) { return e.Svc.Prune(ctx, RetentionDays, nil) }
	b.Run("atrium", atriumDestructive(nil, prune, c.PruneCount))
	b.Run("atrium-deletemerge10", atriumDestructive([]string{ftsDeletemerge10, ftsDeletemerge10S}, prune, c.PruneCount))
	b.Run("raw", rawDestructive(c, nil, rawPrune, c.PruneCount))
	// raw-chunked: Atrium's statement shape (select the ids, then DELETE by
	// id 500 at a time), then the same with the what-if settings.
	b.Run("raw-chunked", rawDestructive(c, nil, rawPruneChunked, c.PruneCount))
	b.Run("raw-remove-in-delete", rawDestructive(c, removeInDelete, rawPrune, c.PruneCount))
}

const pruneQualifies = `ended_at IS NOT NULL AND pinned = 0 AND last_activity_at < ?`

func pruneCutoff() int64 { return Now.Add(-RetentionDays * 24 * time.Hour).UnixMilli() }

// rawPrune: set-based, one transaction, two statements. It skips Atrium's
// family check (the corpus has no parent links, so the result is the same).
func rawPrune(tb testing.TB, r *sql.DB) int64 {
	tx, err := r.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := tx.Exec(`DELETE FROM messages WHERE session_id IN (SELECT id FROM sessions WHERE `+pruneQualifies+`)`, pruneCutoff()); err != nil {
		tb.Fatal(err)
	}
	res, err := tx.Exec(`DELETE FROM sessions WHERE `+pruneQualifies, pruneCutoff())
	if err != nil {
		tb.Fatal(err)
	}
	n, _ := res.RowsAffected()
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	return n
}

// rawPruneChunked selects the qualifying ids, then deletes them as rawDelete
// does, in one transaction.
func rawPruneChunked(tb testing.TB, r *sql.DB) int64 {
	tx, err := r.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	n := rawDeleteTx(tb, tx, rawIDs(tb, tx, `SELECT id FROM sessions WHERE `+pruneQualifies+` ORDER BY last_activity_at, id`, pruneCutoff()))
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	return n
}

// rawIDs reads the ids q selects.
func rawIDs(tb testing.TB, tx *sql.Tx, q string, args ...any) []string {
	rows, err := tx.Query(q, args...)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			tb.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return ids
}

// ---- 5. list page and search ------------------------------------------------------

type rawSession struct {
	PK                         int64
	ID, Source, Title, Profile string
	ParentID                   sql.NullString
	Relation                   string
	StartedAt                  int64
	EndedAt                    sql.NullInt64
	EndReason                  string
	LastActivityAt             int64
	Archived                   bool
	ArchivedAt                 sql.NullInt64
	ArchivedBy                 string
	Pinned                     bool
	MessageCount, TokenCount   int64
}

// sessionColumns are the columns rawSession scans, in order.
const sessionColumns = `pk, id, source, title, profile, parent_session_id, relation, started_at, ended_at, end_reason,
	last_activity_at, archived, archived_at, archived_by, pinned, message_count, token_count`

func scanSessions(rows *sql.Rows) ([]rawSession, error) {
	defer rows.Close()
	var out []rawSession
	for rows.Next() {
		var s rawSession
		if err := rows.Scan(&s.PK, &s.ID, &s.Source, &s.Title, &s.Profile, &s.ParentID, &s.Relation, &s.StartedAt, &s.EndedAt,
			&s.EndReason, &s.LastActivityAt, &s.Archived, &s.ArchivedAt, &s.ArchivedBy, &s.Pinned, &s.MessageCount, &s.TokenCount); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

const sqlListPage = `SELECT ` + sessionColumns + ` FROM sessions WHERE archived = ? AND trashed_at IS NULL ORDER BY last_activity_at DESC, id DESC LIMIT 51`

// rawList is the list page: 50 unarchived rows, newest activity first, plus
// the keyset cursor of the next page.
func rawList(st *sql.Stmt) ([]rawSession, string, error) {
	rows, err := st.QueryContext(ctx, false)
	if err != nil {
		return nil, "", err
	}
	out, err := scanSessions(rows)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > 50 {
		out = out[:50]
		raw, _ := json.Marshal(struct {
			At int64  `json:"a"`
			ID string `json:"i"`
		}{out[49].LastActivityAt, out[49].ID})
		next = base64.RawURLEncoding.EncodeToString(raw)
	}
	return out, next, nil
}

func BenchmarkListPage(b *testing.B) {
	b.Run("atrium", func(b *testing.B) {
		path, cleanup := copyTemplate(b)
		defer cleanup()
		e := openAtrium(b, path, fixedClock, nil)
		defer e.close(b)
		for b.Loop() {
			p, err := e.Svc.List(ctx, sessions.Filter{})
			if err != nil || len(p.Sessions) != 50 || p.Next == "" {
				b.Fatalf("list: %d rows, %v", len(p.Sessions), err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		path, cleanup := copyTemplate(b)
		defer cleanup()
		r := openRaw(b, path, false)
		defer r.Close()
		st := mustPrepare(b, r, sqlListPage)
		for b.Loop() {
			rows, next, err := rawList(st)
			if err != nil || len(rows) != 50 || next == "" {
				b.Fatalf("list: %d rows, %v", len(rows), err)
			}
		}
	})
}

const (
	sqlSearchMessages = `SELECT MAX(m.id) AS m_id, m.session_id, m.content
		FROM messages_fts f JOIN messages m ON m.id = f.rowid JOIN sessions s ON s.id = m.session_id
		WHERE messages_fts MATCH ?
		GROUP BY m.session_id ORDER BY m_id DESC LIMIT 20`
	sqlSearchMessagesDesc = `SELECT m.id, m.session_id, m.content
		FROM messages_fts f JOIN messages m ON m.id = f.rowid JOIN sessions s ON s.id = m.session_id
		WHERE messages_fts MATCH ? ORDER BY f.rowid DESC`
	sqlSearchTitles = `SELECT s.id FROM sessions_fts f JOIN sessions s ON s.pk = f.rowid
		WHERE sessions_fts MATCH ? ORDER BY s.last_activity_at DESC LIMIT 20`
)

type rawHit struct {
	Session   rawSession
	MessageID int64
	Snippet   string
	InTitle   bool
}

type rawSearcher struct {
	r            *sql.DB
	msgs, titles *sql.Stmt
	early        bool // msgs is sqlSearchMessagesDesc
}

// search runs Atrium's three queries (newest matching message per session,
// title matches, the hit sessions' rows) with the same limit (20) and the
// same MATCH expression ("word"*), and cuts the same snippet.
func (rs *rawSearcher) search(word string) ([]rawHit, error) {
	match := `"` + word + `"*`
	const limit = 20
	var hits []rawHit
	seen := map[string]int{}
	if rs.early {
		// Newest matching message first, straight from the FTS index in
		// descending rowid order; stop at the limit-th distinct session.
		rows, err := rs.msgs.QueryContext(ctx, match)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var h rawHit
			var content string
			if err := rows.Scan(&h.MessageID, &h.Session.ID, &content); err != nil {
				rows.Close()
				return nil, err
			}
			if _, ok := seen[h.Session.ID]; ok {
				continue
			}
			h.Snippet = snippet(content, word)
			seen[h.Session.ID] = len(hits)
			hits = append(hits, h)
			if len(hits) == limit {
				break
			}
		}
		rows.Close()
	} else {
		rows, err := rs.msgs.QueryContext(ctx, match)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var h rawHit
			var content string
			if err := rows.Scan(&h.MessageID, &h.Session.ID, &content); err != nil {
				rows.Close()
				return nil, err
			}
			h.Snippet = snippet(content, word)
			seen[h.Session.ID] = len(hits)
			hits = append(hits, h)
		}
		rows.Close()
	}
	trows, err := rs.titles.QueryContext(ctx, match)
	if err != nil {
		return nil, err
	}
	for trows.Next() {
		var id string
		if err := trows.Scan(&id); err != nil {
			trows.Close()
			return nil, err
		}
		if i, ok := seen[id]; ok {
			hits[i].InTitle = true
			continue
		}
		if len(hits) >= limit {
			continue
		}
		seen[id] = len(hits)
		hits = append(hits, rawHit{Session: rawSession{ID: id}, InTitle: true})
	}
	trows.Close()
	if len(hits) == 0 {
		return hits, nil
	}
	ids := make([]any, len(hits))
	for i, h := range hits {
		ids[i] = h.Session.ID
	}
	srows, err := rs.r.QueryContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id IN (`+placeholders(len(ids))+`)`, ids...)
	if err != nil {
		return nil, err
	}
	ss, err := scanSessions(srows)
	if err != nil {
		return nil, err
	}
	for _, s := range ss {
		h := &hits[seen[s.ID]]
		h.Session = s
		if h.Snippet == "" {
			h.Snippet = s.Title
		}
	}
	return hits, nil
}

// snippet is sessions.snippet: ~120 characters around the first query word.
func snippet(text, q string) string {
	lower := strings.ToLower(text)
	pos := -1
	for _, w := range strings.Fields(strings.ToLower(q)) {
		if i := strings.Index(lower, strings.Trim(w, `"*`)); i >= 0 {
			pos = i
			break
		}
	}
	r := []rune(text)
	if len(r) <= 120 {
		return text
	}
	start := 0
	if pos > 40 {
		start = len([]rune(text[:pos])) - 40
	}
	end := min(start+120, len(r))
	out := string(r[start:end])
	if start > 0 {
		out = "…" + out
	}
	if end < len(r) {
		out += "…"
	}
	return out
}

func BenchmarkSearch(b *testing.B) {
	c := getCorpus()
	b.Run("atrium", func(b *testing.B) {
		path, cleanup := copyTemplate(b)
		defer cleanup()
		e := openAtrium(b, path, fixedClock, nil)
		defer e.close(b)
		for b.Loop() {
			hits, err := e.Svc.Search(ctx, c.SearchWord, sessions.SearchOptions{})
			if err != nil || len(hits) != 20 {
				b.Fatalf("search: %d hits, %v", len(hits), err)
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		path, cleanup := copyTemplate(b)
		defer cleanup()
		r := openRaw(b, path, false)
		defer r.Close()
		rs := &rawSearcher{r: r, msgs: mustPrepare(b, r, sqlSearchMessages), titles: mustPrepare(b, r, sqlSearchTitles)}
		for b.Loop() {
			hits, err := rs.search(c.SearchWord)
			if err != nil || len(hits) != 20 {
				b.Fatalf("search: %d hits, %v", len(hits), err)
			}
		}
	})
	// What-if: the same result computed by walking the FTS matches newest
	// first and stopping at the 20th distinct session, instead of joining
	// and grouping every match.
	b.Run("raw-early-stop", func(b *testing.B) {
		path, cleanup := copyTemplate(b)
		defer cleanup()
		r := openRaw(b, path, false)
		defer r.Close()
		rs := &rawSearcher{r: r, msgs: mustPrepare(b, r, sqlSearchMessagesDesc), titles: mustPrepare(b, r, sqlSearchTitles), early: true}
		for b.Loop() {
			hits, err := rs.search(c.SearchWord)
			if err != nil || len(hits) != 20 {
				b.Fatalf("search: %d hits, %v", len(hits), err)
			}
		}
	})
}

// ---- 6. dispatch of one event to 10 observers ---------------------------------------

const (
	numObservers = 10
	fanoutBatch  = 100 // events per atrium-fanout iteration
)

type toolPayload struct {
	SessionID string `json:"session_id"`
	Tool      string `json:"tool"`
}

// dispatchEnv is a fresh store with a started bus (timeout 30 s) and 10
// plugins observing post_tool_call; each callback marks wg done.
func dispatchEnv(b *testing.B, wg *sync.WaitGroup) (*atriumEnv, func()) {
	dir, err := os.MkdirTemp(tmpRoot, "bus-")
	if err != nil {
		b.Fatal(err)
	}
	e := openAtrium(b, filepath.Join(dir, "state.db"), fixedClock, func(bus *hooks.Bus) {
		for i := 0; i < numObservers; i++ {
			if _, err := bus.RegisterHook(fmt.Sprintf("observer-%d", i), hooks.PostToolCall, func(context.Context, hooks.Event) error {
				wg.Done()
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	if got := e.Bus.Timeout(); got != 30*time.Second {
		b.Fatalf("bus timeout %s", got)
	}
	return e, func() { e.close(b); _ = os.RemoveAll(dir) }
}

func reportPerObserver(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*numObservers), "ns/observer")
}

func BenchmarkDispatch10(b *testing.B) {
	payload := toolPayload{SessionID: "019a0000-0000-7000-8000-000000000000", Tool: "shell"}
	// atrium-fanout: each iteration commits a batch of fanoutBatch events in
	// one transaction outside the timer; the timer starts in the first
	// after-commit function (queued before the wake-ups of the events), so it
	// measures the 10 subscriber workers each reading the batch from the log
	// after its position, recording its in-flight mark, the 10 timed
	// callback invocations per event and the outcome hand-off to the
	// recorder, until every callback has returned. The recorder is flushed
	// outside the timer between batches (its writes of outcomes and
	// positions run alongside). Metrics: ns/event and ns/observer.
	fanout := func() func(b *testing.B) {
		return func(b *testing.B) {
			var wg sync.WaitGroup
			e, done := dispatchEnv(b, &wg)
			defer done()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				wg.Add(fanoutBatch * numObservers)
				err := e.D.InTx(ctx, func(tx *db.Tx) error {
					// Runs after commit, before the wake-ups EnqueueTx queues.
					tx.AfterCommitOrdered(func() { b.StartTimer() })
					for k := 0; k < fanoutBatch; k++ {
						if _, err := e.Bus.EnqueueTx(ctx, tx, hooks.PostToolCall, payload); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				wg.Wait()
				b.StopTimer()
				if err := e.Bus.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.StopTimer()
			perEvent := float64(b.Elapsed().Nanoseconds()) / float64(b.N*fanoutBatch)
			b.ReportMetric(perEvent, "ns/event")
			b.ReportMetric(perEvent/numObservers, "ns/observer")
		}
	}
	b.Run("atrium-fanout", fanout())
	// (atrium-fanout-recorder-parked, which held the writer's connection to
	// keep the recorder off the CPU, is gone with issue #11: each subscriber
	// now records its in-flight mark on the writer before it hands events
	// out, so there is no delivery without the writer to measure.)
	// raw-fanout: 10 funcs, each in its own goroutine under
	// context.WithTimeout(30 s), waited for with a WaitGroup.
	b.Run("raw-fanout", func(b *testing.B) {
		var wg sync.WaitGroup
		ev := hooks.Event{ID: "x", Hook: hooks.PostToolCall}
		ev.Payload, _ = json.Marshal(payload)
		fns := make([]hooks.Handler, numObservers)
		for i := range fns {
			fns[i] = func(context.Context, hooks.Event) error { wg.Done(); return nil }
		}
		for b.Loop() {
			wg.Add(numObservers)
			for _, fn := range fns {
				go func() {
					c, cancel := context.WithTimeout(ctx, 30*time.Second)
					_ = fn(c, ev)
					cancel()
				}()
			}
			wg.Wait()
		}
		reportPerObserver(b)
	})
	// atrium-commit+fanout: what a caller pays per event end to end: one
	// transaction with EnqueueTx, commit, delivery, until all 10 callbacks
	// returned. The recorder writes outcomes concurrently on the same writer.
	b.Run("atrium-commit+fanout", func(b *testing.B) {
		var wg sync.WaitGroup
		e, done := dispatchEnv(b, &wg)
		defer done()
		for b.Loop() {
			wg.Add(numObservers)
			if err := e.D.InTx(ctx, func(tx *db.Tx) error {
				_, err := e.Bus.EnqueueTx(ctx, tx, hooks.PostToolCall, payload)
				return err
			}); err != nil {
				b.Fatal(err)
			}
			wg.Wait()
		}
		reportPerObserver(b)
		b.StopTimer()
		_ = e.Bus.Flush(ctx)
	})
	// atrium-commit+fanout+record: as above, plus Flush: every outcome of the
	// event written to hook_deliveries and the event marked delivered.
	b.Run("atrium-commit+fanout+record", func(b *testing.B) {
		var wg sync.WaitGroup
		e, done := dispatchEnv(b, &wg)
		defer done()
		for b.Loop() {
			wg.Add(numObservers)
			if err := e.D.InTx(ctx, func(tx *db.Tx) error {
				_, err := e.Bus.EnqueueTx(ctx, tx, hooks.PostToolCall, payload)
				return err
			}); err != nil {
				b.Fatal(err)
			}
			wg.Wait()
			if err := e.Bus.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
		reportPerObserver(b)
	})
	// raw-commit+fanout: raw BEGIN IMMEDIATE; INSERT hook_events; COMMIT,
	// then the raw fan-out.
	b.Run("raw-commit+fanout", func(b *testing.B) {
		dir, err := os.MkdirTemp(tmpRoot, "bus-raw-")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(dir)
		r := openRaw(b, filepath.Join(dir, "state.db"), true)
		defer r.Close()
		ins := mustPrepare(b, r, rawEventInsert+` RETURNING seq`)
		var wg sync.WaitGroup
		fns := make([]hooks.Handler, numObservers)
		for i := range fns {
			fns[i] = func(context.Context, hooks.Event) error { wg.Done(); return nil }
		}
		n := 0
		for b.Loop() {
			raw, _ := json.Marshal(payload)
			ev := hooks.Event{ID: fmt.Sprintf("ev-%d", n), Hook: hooks.PostToolCall, Payload: raw}
			n++
			tx, err := r.Begin()
			if err != nil {
				b.Fatal(err)
			}
			if err := tx.Stmt(ins).QueryRow(ev.ID, ev.Hook, string(raw), Now.UnixMilli()).Scan(&ev.Seq); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			wg.Add(numObservers)
			for _, fn := range fns {
				go func() {
					c, cancel := context.WithTimeout(ctx, 30*time.Second)
					_ = fn(c, ev)
					cancel()
				}()
			}
			wg.Wait()
		}
		reportPerObserver(b)
	})
}

// TestRawMatchesAtrium checks that each raw baseline does the same work as
// its Atrium counterpart on the shared store (go test -run RawMatches).
func TestRawMatchesAtrium(t *testing.T) {
	c := getCorpus()
	t.Logf("corpus: search word %q in %d messages, prune %d, delete %d", c.SearchWord, c.SearchDF, c.PruneCount, len(c.DeleteIDs))
	var total, n int
	for _, ms := range c.Messages {
		for _, m := range ms {
			total += len(m.Content)
			n++
		}
	}
	t.Logf("messages: %d, mean %d bytes; example: %q", n, total/n, c.Messages[0][0].Content)

	// The raw schema is the schema db.Open makes.
	schemaOf := func(r *sql.DB) string {
		rows, err := r.Query(`SELECT type, name, COALESCE(sql, '') FROM sqlite_master WHERE name <> 'schema_migrations' ORDER BY type, name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var typ, name, q string
			if err := rows.Scan(&typ, &name, &q); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %s %s\n", typ, name, q)
		}
		return b.String()
	}
	dir := t.TempDir()
	d, err := db.Open(ctx, filepath.Join(dir, "atrium.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = d.Close()
	ra, rr := openRaw(t, filepath.Join(dir, "atrium.db"), false), openRaw(t, filepath.Join(dir, "raw.db"), true)
	if a, b := schemaOf(ra), schemaOf(rr); a != b {
		t.Fatalf("schemas differ:\natrium:\n%s\nraw:\n%s", a, b)
	}
	ra.Close()
	rr.Close()

	pa, cleanA := copyTemplate(t)
	defer cleanA()
	pr, cleanR := copyTemplate(t)
	defer cleanR()
	e := openAtrium(t, pa, fixedClock, nil)
	defer e.close(t)
	r := openRaw(t, pr, false)
	defer r.Close()

	page, err := e.Svc.List(ctx, sessions.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	rows, next, err := rawList(mustPrepare(t, r, sqlListPage))
	if err != nil {
		t.Fatal(err)
	}
	if next != page.Next || len(rows) != len(page.Sessions) {
		t.Fatalf("list: raw %d rows next %q, atrium %d next %q", len(rows), next, len(page.Sessions), page.Next)
	}
	for i := range rows {
		if rows[i].ID != page.Sessions[i].ID {
			t.Fatalf("list row %d: raw %s atrium %s", i, rows[i].ID, page.Sessions[i].ID)
		}
	}

	hits, err := e.Svc.Search(ctx, c.SearchWord, sessions.SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs := &rawSearcher{r: r, msgs: mustPrepare(t, r, sqlSearchMessages), titles: mustPrepare(t, r, sqlSearchTitles)}
	rh, err := rs.search(c.SearchWord)
	if err != nil {
		t.Fatal(err)
	}
	if len(rh) != len(hits) {
		t.Fatalf("search: raw %d hits, atrium %d", len(rh), len(hits))
	}
	for i := range rh {
		if rh[i].Session.ID != hits[i].Session.ID || rh[i].MessageID != hits[i].MessageID || rh[i].Snippet != hits[i].Snippet {
			t.Fatalf("search hit %d differs: raw %+v atrium %+v", i, rh[i], hits[i])
		}
	}
	re := &rawSearcher{r: r, msgs: mustPrepare(t, r, sqlSearchMessagesDesc), titles: mustPrepare(t, r, sqlSearchTitles), early: true}
	eh, err := re.search(c.SearchWord)
	if err != nil {
		t.Fatal(err)
	}
	if len(eh) != len(hits) {
		t.Fatalf("early-stop search: %d hits, atrium %d", len(eh), len(hits))
	}
	for i := range eh {
		if eh[i].Session.ID != hits[i].Session.ID || eh[i].MessageID != hits[i].MessageID || eh[i].Snippet != hits[i].Snippet || eh[i].InTitle != hits[i].InTitle {
			t.Fatalf("early-stop hit %d differs: %+v vs atrium %+v", i, eh[i], hits[i])
		}
	}
	for _, q := range []string{sqlSearchMessages, sqlSearchMessagesDesc} {
		rows, err := r.Query(`EXPLAIN QUERY PLAN `+q, `"`+c.SearchWord+`"*`, 20)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var a, b, c int
			var d string
			_ = rows.Scan(&a, &b, &c, &d)
			plan = append(plan, d)
		}
		rows.Close()
		t.Logf("plan: %s", strings.Join(plan, " | "))
	}
	var matches int
	if err := r.QueryRow(`SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?`, `"`+c.SearchWord+`"*`).Scan(&matches); err != nil {
		t.Fatal(err)
	}
	t.Logf("search %q: %d matching messages (FTS), %d hits", c.SearchWord, matches, len(hits))

	count := func(q string) (a, b int64) {
		if err := e.D.Read.Raw(q).Scan(&a).Error; err != nil {
			t.Fatal(err)
		}
		if err := r.QueryRow(q).Scan(&b); err != nil {
			t.Fatal(err)
		}
		return a, b
	}
	same := func(step string) {
		// Both stores queue index changes (the schema's triggers): apply
		// the queues, the store's background work, before comparing.
		flush := sessions.NewService(e.D, nil, sessions.Options{Logger: discard, ManualIndex: true})
		for {
			more, err := flush.IndexPending(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !more {
				break
			}
		}
		if err := indexAll(pr); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{`SELECT count(*) FROM sessions`, `SELECT count(*) FROM messages`,
			`SELECT count(*) FROM messages_fts WHERE messages_fts MATCH '"` + c.SearchWord + `"'`,
			`SELECT count(*) FROM sessions_fts WHERE sessions_fts MATCH '"` + c.SearchWord + `"'`} {
			a, b := count(q)
			if a != b {
				t.Fatalf("%s: %s: atrium %d raw %d", step, q, a, b)
			}
			t.Logf("%s: %s = %d", step, q, a)
		}
	}
	if _, err := e.Svc.Delete(ctx, c.DeleteIDs, nil); err != nil {
		t.Fatal(err)
	}
	if n := rawDelete(t, r, c.DeleteIDs); n != NumDelete {
		t.Fatalf("raw delete %d", n)
	}
	same("after delete")
	res, err := e.Svc.Prune(ctx, RetentionDays, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The delete set holds no prunable session, so both prune the same rows.
	if n := rawPrune(t, r); n != int64(len(res.AffectedIDs)) || n != int64(c.PruneCount) {
		t.Fatalf("raw pruned %d, atrium %d, corpus %d", n, len(res.AffectedIDs), c.PruneCount)
	}
	same("after prune")
	var sqliteVersion string
	if err := r.QueryRow(`select sqlite_version()`).Scan(&sqliteVersion); err != nil {
		t.Fatal(err)
	}
	t.Logf("sqlite_version() = %s", sqliteVersion)
}
