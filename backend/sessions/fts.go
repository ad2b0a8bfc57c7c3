package sessions

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"

	"atrium/backend/db"
)

// Full-text indexing off the message writes.
//
// A new message is not indexed in its own transaction: every message above
// fts_mark.upto is not indexed yet (the tail), and fts_pending queues the
// ones at or below the mark that need indexing (edited ones, and new ones
// that got a deleted message's id); deleting (or editing) an indexed message
// queues it in fts_gone (triggers, 0007_store_speed.sql and 0008_fts_mark.sql).
// Indexing in the writing transaction cost two thirds of an append (FTS5
// writes a segment and merges in every transaction) and 40% of a bulk
// delete (tombstones); a queue row per new message cost a page of every
// append's commit. The indexer below, two background tasks of the store,
// applies them in batches: new and edited messages shortly after commits,
// removals once a burst of writes has ended; both when the store closes.
// Until then search and the match filter cover them: index
// entries of gone messages are left out (notGone), and the tail and queued
// messages are found by tailMatches: they are few (what arrived since the
// last batch), so they are matched in a private in-memory FTS5 table with
// the same tokenizer, which gives exactly the answer the index will give.

// unindexedTail selects the messages above the mark: not indexed yet.
const unindexedTail = `messages WHERE id > (SELECT upto FROM fts_mark)`

// notGone leaves out index entries of messages deleted or edited since they
// were indexed (f is messages_fts).
const notGone = ` AND f.rowid NOT IN (SELECT id FROM fts_gone)`

const (
	// indexDelay lets a burst of appends be indexed as one batch.
	indexDelay = 200 * time.Millisecond
	// goneMaxWait bounds how long removals from the index wait for a burst
	// of writes to end.
	goneMaxWait = 2 * time.Second
	// indexBatch bounds one indexing transaction (the writer is held
	// meanwhile; a few milliseconds).
	indexBatch = 1000
	// goneBatch: removals from the index wait until this many are queued.
	goneBatch = 500
	// FTSTokenizer is messages_fts's tokenizer (0001_init.sql); the queue is
	// matched with the same one (TestTailTokenizerIsTheIndexes).
	FTSTokenizer = `unicode61 remove_diacritics 2`
)

// IndexPending applies one batch of the index queues (removals first, then
// new messages) and reports whether more is queued. Tests and tools call
// it; in the background, removeGone and indexNew are two tasks.
func (s *Service) IndexPending(ctx context.Context) (bool, error) {
	if more, err := s.removeGone(ctx); err != nil || more {
		return more, err
	}
	return s.indexNew(ctx)
}

// removeGone takes one batch of removed or edited messages out of the index.
// Removals wait for a batch (or the store's closing): the index leaves gone
// entries out meanwhile, and removing a few rows costs FTS5 almost what
// removing a thousand does. In the background they also wait for the end
// of a burst of writes (goneMaxWait at most): removing the entries of 1,000
// sessions deleted one by one cost FTS5 ~90 ms, spent while the deletes
// waited for the writer.
func (s *Service) removeGone(ctx context.Context) (bool, error) {
	var gone bool
	if err := s.db.QueryRow(ctx, `SELECT count(*) >= ? FROM (SELECT 1 FROM fts_gone`+db.Limit(indexBatch)+`)`,
		s.goneBatch(ctx)).Scan(&gone); err != nil || !gone {
		return false, err
	}
	more := false
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		var n int
		var upto sql.NullInt64
		if err := tx.QueryRow(ctx, `SELECT max(id), count(*) FROM (SELECT id FROM fts_gone ORDER BY id`+db.Limit(indexBatch)+`)`).Scan(&upto, &n); err != nil {
			return err
		}
		if n < s.goneBatch(ctx) {
			return nil
		}
		if err := s.clearDoneSidecarsTx(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM messages_fts WHERE rowid IN (SELECT id FROM fts_gone WHERE id <= ?)`, upto.Int64); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM fts_gone WHERE id <= ?`, upto.Int64)
		more = true
		return err
	})
	if err != nil {
		return false, fmt.Errorf("remove deleted messages from the index: %w", err)
	}
	return more, nil
}

// indexNew indexes one batch of new and edited messages: the queue first
// (at or below the mark), then the tail.
func (s *Service) indexNew(ctx context.Context) (bool, error) {
	var pending bool
	if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM fts_pending) OR EXISTS (SELECT 1 FROM `+unindexedTail+`)`).
		Scan(&pending); err != nil || !pending {
		return false, err
	}
	more := false
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		var n int
		var upto sql.NullInt64
		// The queue first (at or below the mark).
		if err := tx.QueryRow(ctx, `SELECT max(id), count(*) FROM (SELECT id FROM fts_pending ORDER BY id`+db.Limit(indexBatch)+`)`).Scan(&upto, &n); err != nil {
			return err
		}
		if n > 0 {
			if err := s.clearDoneSidecarsTx(ctx, tx); err != nil {
				return err
			}
			// A queued message whose old entry still waits for its removal
			// (an edit, or a deleted message's id given to a new one): the
			// removal goes first, in this batch, or the old entry would
			// stay, and the removal applied later would take the new one.
			for _, q := range []string{
				`DELETE FROM messages_fts WHERE rowid IN (SELECT p.id FROM fts_pending p CROSS JOIN fts_gone g ON g.id = p.id WHERE p.id <= ?)`,
				`DELETE FROM fts_gone WHERE id IN (SELECT id FROM fts_pending WHERE id <= ?)`,
				// CROSS JOIN keeps the queue the outer loop: with a plain
				// JOIN the planner carried p.id <= ? over to m.id and walked
				// every message up to the batch's last id, once per batch,
				// so indexing grew with the store (85 us of CPU per message
				// at 600,000 messages against 32 at 200,000).
				`INSERT INTO messages_fts (rowid, content)
					SELECT m.id, m.content FROM fts_pending p CROSS JOIN messages m ON m.id = p.id WHERE p.id <= ?`,
				`DELETE FROM fts_pending WHERE id <= ?`,
			} {
				if _, err := tx.Exec(ctx, q, upto.Int64); err != nil {
					return err
				}
			}
			more = true
			return nil
		}
		// Then the tail, in id order, and the mark moves past it.
		if err := tx.QueryRow(ctx, `SELECT max(id), count(*) FROM (SELECT id FROM `+unindexedTail+` ORDER BY id`+db.Limit(indexBatch)+`)`).
			Scan(&upto, &n); err != nil || n == 0 {
			return err
		}
		if err := s.clearDoneSidecarsTx(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO messages_fts (rowid, content)
			SELECT id, content FROM `+unindexedTail+` AND id <= ?`, upto.Int64); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE fts_mark SET upto = ?`, upto.Int64)
		more = n == indexBatch
		return err
	})
	if err != nil {
		return false, fmt.Errorf("index messages: %w", err)
	}
	return more, nil
}

// goneBatch is how many removals the indexer waits for (1 when the store
// closes, or for an IndexPending of a test or tool).
func (s *Service) goneBatch(ctx context.Context) int {
	if db.FinalRun(ctx) || !s.background {
		return 1
	}
	return goneBatch
}

// queryFunc reads through the read pool (db.DB.Query) or a write
// transaction (db.Tx.Query).
type queryFunc func(ctx context.Context, q string, args ...any) (*sql.Rows, error)

// eachFunc reads rows one by one: db.DB.Each on the read pool, the Each of
// a db.DB.View (one snapshot), or eachOf a write transaction's reads.
type eachFunc = db.EachFunc

// eachOf reads through read the way db.DB.Each reads the pool.
func eachOf(read queryFunc) eachFunc {
	return func(ctx context.Context, q string, args []any, row func(v []driver.Value) error) error {
		rows, err := read(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			return err
		}
		for rows.Next() {
			v, err := scanValues(rows, len(cols))
			if err != nil {
				return err
			}
			if err := row(v); err != nil {
				return err
			}
		}
		return rows.Err()
	}
}

// tailMatches returns the ids of queued (not yet indexed) messages that
// match the FTS query, newest first. Read the queue before the index: a
// message indexed in between is then found by the index (the other order
// could miss it).
func (s *Service) tailMatches(ctx context.Context, each eachFunc, match string) ([]int64, error) {
	// The tail and the queue never share an id (the queue holds ids at or
	// below the mark).
	type row struct {
		id      int64
		content string
	}
	var queued []row
	err := each(ctx, `SELECT id, content FROM `+unindexedTail+`
		UNION ALL SELECT p.id, m.content FROM fts_pending p CROSS JOIN messages m ON m.id = p.id`, nil, func(v []driver.Value) error {
		queued = append(queued, row{id: vInt(v[0]), content: vStr(v[1])})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the index queue: %w", err)
	}
	if len(queued) == 0 {
		return nil, nil
	}
	// A private in-memory database, gone when closed.
	mem, err := db.OpenMemory()
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	mtx, err := mem.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = mtx.Rollback() }()
	if _, err := mtx.ExecContext(ctx, `CREATE VIRTUAL TABLE q USING fts5(content, content='', tokenize='`+FTSTokenizer+`')`); err != nil {
		return nil, err
	}
	ins, err := mtx.PrepareContext(ctx, `INSERT INTO q (rowid, content) VALUES (?, ?)`)
	if err != nil {
		return nil, err
	}
	for _, r := range queued {
		if _, err := ins.ExecContext(ctx, r.id, r.content); err != nil {
			return nil, err
		}
	}
	return queryColumn[int64](ctx, mtx.QueryContext, `SELECT rowid FROM q WHERE q MATCH ? ORDER BY rowid DESC`, match)
}

// ruleWhere is rule.where with the index queue covered: with a match
// condition, the queued messages that match are looked up first.
func (s *Service) ruleWhere(ctx context.Context, read queryFunc, r Rule, now time.Time, chain bool) (string, []any, error) {
	var queued []int64
	if r.Match != "" {
		var err error
		if queued, err = s.tailMatches(ctx, eachOf(read), r.Match); err != nil {
			return "", nil, err
		}
	}
	w, args := r.where(now, chain, queued)
	return w, args, nil
}

// FlushIndex applies both index queues to the end now, removals whatever
// their number (a vacuum after a delete then also gets back the pages of
// the deleted messages' index entries, and no background batch frees pages
// after it).
func (s *Service) FlushIndex(ctx context.Context) error {
	flush := &Service{db: s.db}
	for {
		more, err := flush.IndexPending(ctx)
		if err != nil || !more {
			return err
		}
	}
}

// MergeIndex is the search index's upkeep (maintenance): it applies both
// queues to the end, then merges index segments, which drops the entries of
// deleted messages (deletes never merge on their own: deletemerge 0), in
// steps of one transaction each until nothing is left to merge or budget is
// spent. It reports how many steps did work.
func (s *Service) MergeIndex(ctx context.Context, budget time.Duration) (int, error) {
	if err := s.FlushIndex(ctx); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(budget)
	steps := 0
	for time.Now().Before(deadline) {
		worked := false
		err := s.db.InTx(ctx, func(tx *db.Tx) error {
			for _, t := range []string{"messages_fts", "sessions_fts"} {
				var before, after int64
				if err := tx.QueryRow(ctx, `SELECT total_changes()`).Scan(&before); err != nil {
					return err
				}
				// A negative page count merges segments of any level (up to
				// 1,000 pages a step), as 'optimize' would, a step at a time.
				if _, err := tx.Exec(ctx, `INSERT INTO `+t+` (`+t+`, rank) VALUES ('merge', -1000)`); err != nil {
					return err
				}
				if err := tx.QueryRow(ctx, `SELECT total_changes()`).Scan(&after); err != nil {
					return err
				}
				worked = worked || after-before >= 2 // FTS5's "it did some work"
			}
			return nil
		})
		if err != nil {
			return steps, fmt.Errorf("merge the search index: %w", err)
		}
		if !worked {
			break
		}
		steps++
	}
	return steps, nil
}
