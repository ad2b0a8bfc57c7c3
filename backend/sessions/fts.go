package sessions

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"atrium/backend/db"
)

// Full-text indexing off the append.
//
// Appending a message queues its id in fts_pending (a trigger); indexing it
// in the appending transaction cost two thirds of an append (FTS5 writes a
// segment and merges in every transaction). The indexer below, a
// background task of the store, moves the queue into messages_fts in
// batches, shortly after commits and when the store closes. Until then,
// search and the match filter find queued messages through tailMatches: the
// queue is small (what arrived since the last batch), so it is matched in a
// private in-memory FTS5 table with the same tokenizer, which gives exactly
// the answer the index will give.

const (
	// indexDelay lets a burst of appends be indexed as one batch.
	indexDelay = 200 * time.Millisecond
	// indexBatch bounds one indexing transaction (the writer is held
	// meanwhile; a few milliseconds).
	indexBatch = 2000
	// FTSTokenizer is messages_fts's tokenizer (0001_init.sql); the queue is
	// matched with the same one (TestTailTokenizerIsTheIndexes).
	FTSTokenizer = `unicode61 remove_diacritics 2`
)

// IndexPending indexes one batch of queued messages and reports whether
// more are queued. The background task calls it; tests and tools may too.
func (s *Service) IndexPending(ctx context.Context) (bool, error) {
	var any bool
	if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM fts_pending)`).Scan(&any); err != nil || !any {
		return false, err
	}
	more := false
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		var upto sql.NullInt64
		var n int
		if err := tx.QueryRow(ctx, `SELECT max(id), count(*) FROM (SELECT id FROM fts_pending ORDER BY id LIMIT ?)`, indexBatch).
			Scan(&upto, &n); err != nil || n == 0 {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO messages_fts (rowid, content)
			SELECT m.id, m.content FROM fts_pending p JOIN messages m ON m.id = p.id WHERE p.id <= ?`, upto.Int64); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM fts_pending WHERE id <= ?`, upto.Int64); err != nil {
			return err
		}
		more = n == indexBatch
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("index messages: %w", err)
	}
	return more, nil
}

// queryFunc reads through the read pool (db.DB.Query) or a write
// transaction (db.Tx.Query).
type queryFunc func(ctx context.Context, q string, args ...any) (*sql.Rows, error)

// tailMatches returns the ids of queued (not yet indexed) messages that
// match the FTS query, newest first. Read the queue before the index: a
// message indexed in between is then found by the index (the other order
// could miss it).
func (s *Service) tailMatches(ctx context.Context, read queryFunc, match string) ([]int64, error) {
	rows, err := read(ctx, `SELECT p.id, m.content FROM fts_pending p JOIN messages m ON m.id = p.id ORDER BY p.id DESC`)
	if err != nil {
		return nil, fmt.Errorf("read the index queue: %w", err)
	}
	type row struct {
		id      int64
		content string
	}
	var queued []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.content); err != nil {
			rows.Close()
			return nil, err
		}
		queued = append(queued, r)
	}
	if err := rows.Close(); err != nil || len(queued) == 0 {
		return nil, err
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
		if queued, err = s.tailMatches(ctx, read, r.Match); err != nil {
			return "", nil, err
		}
	}
	w, args := r.where(now, chain, queued)
	return w, args, nil
}
