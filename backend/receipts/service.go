package receipts

import (
	"context"
	"encoding/json"
	"fmt"
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
				return nil
			}
			if err := g.Exec(`DELETE FROM receipts WHERE request_id = ?`, req.RequestID).Error; err != nil {
				return err
			}
		}
		var res sessions.Result
		var err error
		switch req.Op {
		case OpDelete:
			res, err = s.sessions.DeleteTx(ctx, tx, req.SessionIDs, sessions.DeleteOptions{Batch: req.RequestID, Progress: progress})
		case OpArchive:
			res, err = s.sessions.ArchiveTx(ctx, tx, req.SessionIDs)
		case OpUnarchive:
			res, err = s.sessions.UnarchiveTx(ctx, tx, req.SessionIDs)
		case OpRestore:
			res, err = s.sessions.RestoreTx(ctx, tx, req.SessionIDs)
		case OpPurge:
			res, err = s.sessions.DeleteTx(ctx, tx, req.SessionIDs, sessions.DeleteOptions{Now: true, Progress: progress})
		case OpEmptyTrash:
			d, _ := req.olderThan()
			res, err = s.sessions.EmptyTrashTx(ctx, tx, d, progress)
		}
		if err != nil {
			return err
		}
		raw, err := json.Marshal(res)
		if err != nil {
			return err
		}
		// CreatedAt as stored (milliseconds), so a replay returns the same value.
		out = Receipt{RequestID: req.RequestID, Op: req.Op, Result: res, CreatedAt: time.UnixMilli(db.Ms(tx.Now)).UTC()}
		return g.Exec(`INSERT INTO receipts (request_id, op, fingerprint, result, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
			req.RequestID, req.Op, fp, string(raw), db.Ms(tx.Now), db.Ms(tx.Now.Add(s.ttl))).Error
	})
	if err != nil {
		return Receipt{}, fmt.Errorf("%s via request %s: %w", req.Op, req.RequestID, err)
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
