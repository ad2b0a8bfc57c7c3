package receipts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/sessions"
)

// DefaultTTL is how long a receipt is kept (receipts.ttl).
const DefaultTTL = 24 * time.Hour

// Service applies requests through receipts.
type Service struct {
	db       *db.DB
	sessions *sessions.Service
	ttl      time.Duration
}

// NewService builds the receipt path over the session store.
func NewService(d *db.DB, s *sessions.Service, ttl time.Duration) *Service {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Service{db: d, sessions: s, ttl: ttl}
}

type row struct {
	RequestID   string
	Op          string
	Fingerprint string
	Result      string
	CreatedAt   int64
	ExpiresAt   int64
}

// Apply runs req once. In one transaction it looks up the receipt: an
// identical request replays it (Replayed, nothing changes, nothing fires); the
// same request id for another operation is a conflict; otherwise the
// operation runs and its receipt is stored with it. Hooks fire after commit,
// once, from the session store.
func (s *Service) Apply(ctx context.Context, req Request, progress sessions.Progress) (Receipt, error) {
	if err := req.Validate(); err != nil {
		return Receipt{}, err
	}
	fp := req.Fingerprint()
	var out Receipt
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		g := tx.G.WithContext(ctx)
		var rows []row
		if err := g.Raw(`SELECT * FROM receipts WHERE request_id = ?`, req.RequestID).Scan(&rows).Error; err != nil {
			return err
		}
		if len(rows) == 1 {
			r := rows[0]
			if r.ExpiresAt > db.Ms(tx.Now) {
				if r.Fingerprint != fp {
					return apperr.New(apperr.Conflict,
						"request id %s was already used for a different request (%s of other sessions); use a new request id", req.RequestID, r.Op)
				}
				if err := json.Unmarshal([]byte(r.Result), &out.Result); err != nil {
					return fmt.Errorf("stored receipt %s: %w", req.RequestID, err)
				}
				out.RequestID, out.Op, out.Replayed = r.RequestID, r.Op, true
				out.CreatedAt = time.UnixMilli(r.CreatedAt).UTC()
				undone, err := undoneTx(ctx, tx, r.RequestID)
				out.Undoable, out.Undone = undoable(r.Op, out.Result) && !undone, undone
				return err
			}
			if err := g.Exec(`DELETE FROM receipts WHERE request_id = ?`, req.RequestID).Error; err != nil {
				return err
			}
		}
		res, err := s.runTx(ctx, tx, req, progress)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(res)
		if err != nil {
			return err
		}
		// CreatedAt as stored (milliseconds), so a replay returns the same value.
		out = Receipt{RequestID: req.RequestID, Op: req.Op, Result: res, CreatedAt: time.UnixMilli(db.Ms(tx.Now)).UTC(),
			Undoable: undoable(req.Op, res)}
		return g.Exec(`INSERT INTO receipts (request_id, op, fingerprint, result, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
			req.RequestID, req.Op, fp, string(raw), db.Ms(tx.Now), db.Ms(tx.Now.Add(s.ttl))).Error
	})
	if err != nil {
		return Receipt{}, fmt.Errorf("%s via request %s: %w", req.Op, req.RequestID, err)
	}
	return out, nil
}

// runTx runs the operation of req inside tx: ids, a rule resolved now, or
// the undo of another request.
func (s *Service) runTx(ctx context.Context, tx *db.Tx, req Request, progress sessions.Progress) (sessions.Result, error) {
	if req.Op == OpUndo {
		return s.undoTx(ctx, tx, req)
	}
	if req.Op == OpEmptyTrash {
		d, _ := req.olderThan()
		return s.sessions.EmptyTrashTx(ctx, tx, d, progress)
	}
	ids, matched := req.SessionIDs, -1
	if req.Filter != nil {
		rule, err := req.Rule()
		if err != nil {
			return sessions.Result{}, err
		}
		if ids, err = s.sessions.MatchTx(ctx, tx, rule); err != nil {
			return sessions.Result{}, err
		}
		matched = len(ids)
		if matched == 0 {
			return sessions.Result{Op: req.Op, AffectedIDs: []string{}, Outcomes: []sessions.Outcome{}}, nil
		}
	}
	var res sessions.Result
	var err error
	switch req.Op {
	case OpDelete:
		res, err = s.sessions.DeleteTx(ctx, tx, ids, sessions.DeleteOptions{Batch: req.RequestID, Progress: progress})
	case OpArchive:
		res, err = s.sessions.ArchiveTx(ctx, tx, ids)
	case OpUnarchive:
		res, err = s.sessions.UnarchiveTx(ctx, tx, ids)
	case OpRestore:
		res, err = s.sessions.RestoreTx(ctx, tx, ids)
	case OpPurge:
		res, err = s.sessions.DeleteTx(ctx, tx, ids, sessions.DeleteOptions{Now: true, Progress: progress})
	}
	if matched >= 0 {
		res.Matched = matched
	}
	return res, err
}

// undoTx undoes request req.Target as a whole: a delete is restored from the
// trash, an archive unarchived, an unarchive archived again, a restore moved
// back to the trash. What was deleted for good cannot come back.
func (s *Service) undoTx(ctx context.Context, tx *db.Tx, req Request) (sessions.Result, error) {
	var rows []row
	if err := tx.G.WithContext(ctx).Raw(`SELECT * FROM receipts WHERE request_id = ? AND expires_at > ?`, req.Target, db.Ms(tx.Now)).
		Scan(&rows).Error; err != nil {
		return sessions.Result{}, err
	}
	if len(rows) == 0 {
		return sessions.Result{}, apperr.New(apperr.NotFound, "request %s is unknown or too old to undo (requests are remembered for %s)", req.Target, s.ttl)
	}
	var done sessions.Result
	if err := json.Unmarshal([]byte(rows[0].Result), &done); err != nil {
		return sessions.Result{}, fmt.Errorf("stored receipt %s: %w", req.Target, err)
	}
	op := rows[0].Op
	switch {
	case op == OpUndo:
		return sessions.Result{}, apperr.New(apperr.Rejected, "request %s is an undo; an undo cannot be undone: do the action again", req.Target)
	case !undoable(op, done) && done.Changed:
		return sessions.Result{}, apperr.New(apperr.Rejected, "request %s deleted sessions for good; that cannot be undone", req.Target)
	case !done.Changed:
		return sessions.Result{}, apperr.New(apperr.Rejected, "request %s changed nothing, so there is nothing to undo", req.Target)
	}
	switch op {
	case OpDelete:
		return s.sessions.RestoreBatchTx(ctx, tx, done.Batch)
	case OpArchive:
		return s.sessions.UnarchiveTx(ctx, tx, done.AffectedIDs)
	case OpUnarchive:
		return s.sessions.ArchiveTx(ctx, tx, done.AffectedIDs)
	default: // OpRestore
		return s.sessions.DeleteTx(ctx, tx, done.AffectedIDs, sessions.DeleteOptions{Batch: req.RequestID})
	}
}

// undoable: what a request did can be undone as a whole.
func undoable(op string, res sessions.Result) bool {
	switch op {
	case OpDelete:
		return res.Changed && res.Trashed
	case OpArchive, OpUnarchive, OpRestore:
		return res.Changed
	}
	return false
}

func undoneTx(ctx context.Context, tx *db.Tx, requestID string) (bool, error) {
	var n int64
	err := tx.G.WithContext(ctx).Raw(`SELECT count(*) FROM receipts WHERE request_id = ?`, UndoPrefix+requestID).Scan(&n).Error
	return n > 0, err
}

// Undo undoes request target as a whole, through its own receipt (request
// id "undo:" + target): an undo retried replays, it never runs twice.
func (s *Service) Undo(ctx context.Context, target string) (Receipt, error) {
	return s.Apply(ctx, Request{RequestID: UndoPrefix + target, Op: OpUndo, Target: target}, nil)
}

// errDryRun rolls a preview back.
var errDryRun = errors.New("dry run")

// Preview runs req as Apply would, in a transaction that is rolled back:
// its result says exactly what the request would change now (count and
// cascade), and nothing is stored and nothing fires.
func (s *Service) Preview(ctx context.Context, req Request) (sessions.Result, error) {
	if req.RequestID == "" {
		req.RequestID = "preview"
	}
	if err := req.Validate(); err != nil {
		return sessions.Result{}, err
	}
	if req.Op == OpDelete || req.Op == OpPurge {
		return s.previewDelete(ctx, req)
	}
	var out sessions.Result
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		res, err := s.runTx(ctx, tx, req, nil)
		if err != nil {
			return err
		}
		out = res
		return errDryRun
	})
	if !errors.Is(err, errDryRun) {
		return sessions.Result{}, fmt.Errorf("preview %s: %w", req.Op, err)
	}
	out.EventID = ""
	return out, nil
}

// previewDelete answers a delete or purge preview reading only (no write
// lock, however large the selection), with the store's own classification
// and closure.
func (s *Service) previewDelete(ctx context.Context, req Request) (sessions.Result, error) {
	ids, matched := req.SessionIDs, -1
	if req.Filter != nil {
		rule, err := req.Rule()
		if err != nil {
			return sessions.Result{}, err
		}
		if ids, err = s.sessions.Match(ctx, rule); err != nil {
			return sessions.Result{}, err
		}
		matched = len(ids)
		if matched == 0 {
			return sessions.Result{Op: req.Op, AffectedIDs: []string{}, Outcomes: []sessions.Outcome{}}, nil
		}
	}
	res, err := s.sessions.PreviewDelete(ctx, ids, req.Op == OpPurge)
	if matched >= 0 {
		res.Matched = matched
	}
	return res, err
}

// Recent returns the remembered requests, newest first, each saying whether
// it can still be undone (the activity panel's undo).
func (s *Service) Recent(ctx context.Context, limit int) ([]Receipt, error) {
	if limit <= 0 || limit > 500 {
		limit = 50
	}
	var rows []row
	g := s.db.Read.WithContext(ctx)
	if err := g.Raw(`SELECT * FROM receipts WHERE expires_at > ? ORDER BY created_at DESC, request_id DESC`+db.Limit(limit),
		db.Ms(s.db.Now())).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("recent requests: %w", err)
	}
	var undone []string
	if err := g.Raw(`SELECT substr(request_id, ?) FROM receipts WHERE request_id LIKE 'undo:%' AND expires_at > ?`,
		len(UndoPrefix)+1, db.Ms(s.db.Now())).Scan(&undone).Error; err != nil {
		return nil, fmt.Errorf("recent requests: %w", err)
	}
	out := make([]Receipt, 0, len(rows))
	for _, r := range rows {
		rc := Receipt{RequestID: r.RequestID, Op: r.Op, CreatedAt: time.UnixMilli(r.CreatedAt).UTC()}
		if err := json.Unmarshal([]byte(r.Result), &rc.Result); err != nil {
			return nil, fmt.Errorf("stored receipt %s: %w", r.RequestID, err)
		}
		rc.Undone = slices.Contains(undone, r.RequestID)
		rc.Undoable = undoable(r.Op, rc.Result) && !rc.Undone
		out = append(out, rc)
	}
	return out, nil
}

// Expire removes receipts past their time; it returns how many went.
func (s *Service) Expire(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		res := tx.G.WithContext(ctx).Exec(`DELETE FROM receipts WHERE expires_at <= ?`, db.Ms(tx.Now))
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}
