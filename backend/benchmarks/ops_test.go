package benchmarks

// The other hot operations of issue #15, each against raw SQL on the same
// store (same schema, same DSN, one connection, statements prepared once):
// read a transcript, count, end a session, delete one session (one call,
// one event), and archive 1,000 in one call.
//
//	go test -tags sqlite_fts5 -run '^$' -bench 'Transcript|Count|EndSession|DeleteOne|Archive1000' ./backend/benchmarks/

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"atrium/backend/sessions"
)

const (
	sqlTranscript = `SELECT id, session_id, role, content, sent_content, tool_name, tool_call_id, token_count, created_at, active, pos
		FROM messages WHERE session_id = ? AND active = 1 ORDER BY COALESCE(pos, id), id`
	sqlCountActive = `SELECT count(*) FROM sessions WHERE archived = 0 AND trashed_at IS NULL`
)

// transcriptIDs are sessions spread over the store, read in turn.
func transcriptIDs(c *Corpus) []string {
	var ids []string
	for i := 0; i < len(c.Sessions); i += 97 {
		ids = append(ids, c.Sessions[i].ID)
	}
	return ids
}

func BenchmarkTranscript(b *testing.B) {
	c := getCorpus()
	ids := transcriptIDs(c)
	b.Run("atrium", func(b *testing.B) {
		e, cleanup := atriumCopy(b)
		defer cleanup()
		i := 0
		for b.Loop() {
			ms, err := e.Svc.Messages(ctx, ids[i%len(ids)], false)
			if err != nil || len(ms) != MsgsPerSession {
				b.Fatalf("transcript: %d messages, %v", len(ms), err)
			}
			i++
		}
	})
	b.Run("raw", func(b *testing.B) {
		path, cleanup := copyTemplate(b)
		defer cleanup()
		r := openRaw(b, path, false)
		defer r.Close()
		st := mustPrepare(b, r, sqlTranscript)
		i := 0
		for b.Loop() {
			rows, err := st.QueryContext(ctx, ids[i%len(ids)])
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var m struct {
					ID, Tokens, Created, Active int64
					Session, Role, Content      string
					Tool, Call                  string
					Sent                        sql.NullString
					Pos                         sql.NullFloat64
				}
				if err := rows.Scan(&m.ID, &m.Session, &m.Role, &m.Content, &m.Sent, &m.Tool, &m.Call, &m.Tokens, &m.Created, &m.Active, &m.Pos); err != nil {
					b.Fatal(err)
				}
				n++
			}
			rows.Close()
			if n != MsgsPerSession {
				b.Fatalf("transcript: %d messages", n)
			}
			i++
		}
	})
}

func BenchmarkCount(b *testing.B) {
	b.Run("atrium", func(b *testing.B) {
		e, cleanup := atriumCopy(b)
		defer cleanup()
		for b.Loop() {
			if n, err := e.Svc.Count(ctx, sessions.Filter{}); err != nil || n == 0 {
				b.Fatalf("count %d, %v", n, err)
			}
		}
	})
	// raw: count(*) over the list index, what Atrium did before it kept
	// counters.
	b.Run("raw", func(b *testing.B) {
		path, cleanup := copyTemplate(b)
		defer cleanup()
		r := openRaw(b, path, false)
		defer r.Close()
		st := mustPrepare(b, r, sqlCountActive)
		for b.Loop() {
			var n int64
			if err := st.QueryRowContext(ctx).Scan(&n); err != nil || n == 0 {
				b.Fatalf("count %d, %v", n, err)
			}
		}
	})
}

// endTargets creates n live sessions on a store (untimed), raw.
func endTargets(b *testing.B, r *sql.DB, n int) []string {
	ids := make([]string, n)
	tx, err := r.Begin()
	if err != nil {
		b.Fatal(err)
	}
	ins, err := tx.Prepare(sqlInsertSessionNew)
	if err != nil {
		b.Fatal(err)
	}
	now := Now.UnixMilli()
	for i := range ids {
		ids[i] = uuid7ForBench(i)
		if _, err := ins.Exec(ids[i], "cli", "", now, now); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return ids
}

func uuid7ForBench(i int) string { return fmt.Sprintf("bench-end-%08d", i) }

// BenchmarkEndSession ends one live session per op: Atrium's End (one
// transaction: the UPDATE returning the row, the on_session_finalize event
// row), with a context that cannot be cancelled and with one that can,
// against raw (the UPDATE and the same event row).
func BenchmarkEndSession(b *testing.B) {
	// What the dashboard, the gateway and the command line pass: a context
	// that can be cancelled (the driver would watch it with a goroutine per
	// statement; the writer interrupts instead).
	atriumEnd := func(cancellable bool) func(b *testing.B) {
		return func(b *testing.B) {
			path, cleanup := copyTemplate(b)
			defer cleanup()
			r := openRaw(b, path, false)
			ids := endTargets(b, r, b.N)
			_ = r.Close()
			e := openAtrium(b, path, fixedClock, nil)
			defer e.close(b)
			c := ctx
			if cancellable {
				var cancel context.CancelFunc
				c, cancel = context.WithCancel(ctx)
				defer cancel()
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, changed, err := e.Svc.End(c, ids[i], "user"); err != nil || !changed {
					b.Fatalf("end: %v %v", changed, err)
				}
			}
			b.StopTimer()
		}
	}
	b.Run("atrium", atriumEnd(false))
	b.Run("atrium-cancellable", atriumEnd(true))
	rawEnd := func(setup ...string) func(b *testing.B) {
		return func(b *testing.B) {
			path, cleanup := copyTemplate(b)
			defer cleanup()
			r := openRaw(b, path, false)
			defer r.Close()
			execAll(b, r, setup)
			ids := endTargets(b, r, b.N)
			upd := mustPrepare(b, r, `UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL`)
			ev := mustPrepare(b, r, rawEventInsert)
			now := Now.UnixMilli()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tx, err := r.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tx.StmtContext(ctx, upd).ExecContext(ctx, now, "user", ids[i]); err != nil {
					b.Fatal(err)
				}
				if _, err := tx.StmtContext(ctx, ev).ExecContext(ctx, ids[i], "on_session_finalize",
					`{"session_id":"`+ids[i]+`","reason":"user"}`, now); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("raw", rawEnd())
	b.Run("raw-autockpt-1000", rawEnd(autoCheckpoint1000))
}

func execAll(tb testing.TB, r *sql.DB, qs []string) {
	for _, q := range qs {
		if _, err := r.Exec(q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
}

// BenchmarkDeleteOne deletes one session (20 messages) per op, for good:
// Atrium's Delete with trash_days 0 (one call, one event) against raw (the
// DELETEs and the event row, in one transaction).
func BenchmarkDeleteOne(b *testing.B) {
	c := getCorpus()
	atriumDel := func(setup ...string) func(b *testing.B) {
		return func(b *testing.B) {
			e, cleanup := atriumCopy(b, setup...)
			defer cleanup()
			i := 0
			for b.Loop() {
				id := c.Sessions[i%len(c.Sessions)].ID
				if _, err := e.Svc.Delete(ctx, []string{id}, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
		}
	}
	b.Run("atrium", atriumDel())
	b.Run("atrium-deletemerge10", atriumDel(ftsDeletemerge10, ftsDeletemerge10S))
	rawDel := func(setup ...string) func(b *testing.B) {
		return func(b *testing.B) {
			path, cleanup := copyTemplate(b)
			defer cleanup()
			r := openRaw(b, path, false)
			defer r.Close()
			execAll(b, r, setup)
			dm := mustPrepare(b, r, `DELETE FROM messages WHERE session_id = ?`)
			ds := mustPrepare(b, r, `DELETE FROM sessions WHERE id = ?`)
			ev := mustPrepare(b, r, rawEventInsert)
			i := 0
			for b.Loop() {
				id := c.Sessions[i%len(c.Sessions)].ID
				tx, err := r.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := tx.StmtContext(ctx, dm).ExecContext(ctx, id); err != nil {
					b.Fatal(err)
				}
				if _, err := tx.StmtContext(ctx, ds).ExecContext(ctx, id); err != nil {
					b.Fatal(err)
				}
				if _, err := tx.StmtContext(ctx, ev).ExecContext(ctx, id, "on_session_delete", `{"session_id":"`+id+`"}`, Now.UnixMilli()); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
				i++
			}
		}
	}
	b.Run("raw", rawDel())
	b.Run("raw-remove-in-delete", rawDel(removeInDelete...))
	b.Run("raw-autockpt-1000", rawDel(autoCheckpoint1000))
}

// BenchmarkArchive1000 archives the 1,000 sessions of the delete set in one
// call (one transaction, one event); 40 of them are archived already.
func BenchmarkArchive1000(b *testing.B) {
	c := getCorpus()
	archived := map[string]bool{}
	for _, s := range c.Sessions {
		archived[s.ID] = s.Archived
	}
	want := 0
	for _, id := range c.DeleteIDs {
		if !archived[id] {
			want++
		}
	}
	archive := func(e *atriumEnv) (sessions.Result, error) { return e.Svc.Archive(ctx, c.DeleteIDs) }
	b.Run("atrium", atriumDestructive(nil, archive, want))
	b.Run("raw", rawDestructive(c, nil, func(tb testing.TB, r *sql.DB) int64 {
		tx, err := r.Begin()
		if err != nil {
			tb.Fatal(err)
		}
		res, err := tx.Exec(`UPDATE sessions SET archived = 1, archived_at = ?, archived_by = 'user'
			WHERE id IN (`+placeholders(len(c.DeleteIDs))+`) AND +archived = 0 AND trashed_at IS NULL`,
			append([]any{Now.UnixMilli()}, anys(c.DeleteIDs)...)...)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := tx.Exec(rawEventInsert, "archive", "on_session_delete", "{}", 0); err != nil {
			tb.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			tb.Fatal(err)
		}
		n, _ := res.RowsAffected()
		return n
	}, want))
}

// emptySessions adds numEmpty ended sessions with no messages, an hour
// apart and a day before Now (the shared workload has N/20 of them; the
// corpus has none).
const numEmpty = 500

var emptySessions = fmt.Sprintf(`INSERT INTO sessions (id, source, title, profile, started_at, ended_at, last_activity_at)
	WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
	SELECT printf('empty-%%05d', i), 'cli', '', 'default', %[2]d + i * 3600000, %[2]d + i * 3600000, %[2]d + i * 3600000 FROM n`,
	numEmpty-1, Now.Add(-(numEmpty+24)*time.Hour).UnixMilli())

// BenchmarkSweepEmpty500 sweeps the 500 empty sessions out of the 10k store
// in one call (one transaction, one event; no trash), against raw SQL on
// the same schema: the same selection, the rows deleted by id (the
// messages' statement too, as a store that does not know they are empty
// must), and an event row carrying the ids.
func BenchmarkSweepEmpty500(b *testing.B) {
	c := getCorpus()
	sweep := func(e *atriumEnv) (sessions.Result, error) { return e.Svc.SweepEmpty(ctx, nil) }
	b.Run("atrium", atriumDestructive([]string{emptySessions}, sweep, numEmpty))
	b.Run("raw", rawDestructive(c, []string{emptySessions}, func(tb testing.TB, r *sql.DB) int64 {
		tx, err := r.Begin()
		if err != nil {
			tb.Fatal(err)
		}
		ids := rawIDs(tb, tx, `SELECT id FROM sessions WHERE ended_at IS NOT NULL AND archived = 0 AND message_count = 0
			AND trashed_at IS NULL ORDER BY last_activity_at, id`)
		n := rawDeleteTx(tb, tx, ids)
		payload, _ := json.Marshal(map[string]any{"deleted_ids": ids})
		if _, err := tx.Exec(rawEventInsert, "sweep", "on_session_delete", string(payload), Now.UnixMilli()); err != nil {
			tb.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			tb.Fatal(err)
		}
		return n
	}, numEmpty))
}
