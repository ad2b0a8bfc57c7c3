package sessions

import (
	"context"
	"fmt"
	"time"

	"github.com/samber/lo"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/hooks"
)

// The trash: a user delete moves its rows here in one transaction (see
// DeleteTx). They keep their messages and sidecar files, stay out of every
// list and search, and come back with Restore until they are purged (by age
// in maintenance, by EmptyTrash, or by Purge).

const (
	// trashFamilyCTE: what purging trashed rows takes along: deleteCTE
	// restricted to rows in the trash.
	trashFamilyCTE = `WITH RECURSIVE c(id) AS (
		SELECT s.id FROM sessions s WHERE s.id IN (SELECT value FROM json_each(?)) AND s.trashed_at IS NOT NULL
		UNION
		SELECT s.id FROM sessions s JOIN c ON s.parent_session_id = c.id
			WHERE s.relation IN ('delegate', 'compression') AND s.trashed_at IS NOT NULL
		UNION
		SELECT p.id FROM sessions s JOIN c ON s.id = c.id JOIN sessions p ON p.id = s.parent_session_id
			WHERE s.relation = 'compression' AND p.trashed_at IS NOT NULL
	) SELECT id FROM c`
	// restoreCTE: what restoring a trashed row brings back: every row that
	// went to the trash in the same operation and is linked to it by a
	// compression or delegate link, either way (a delegate child brings its
	// parent back, with the rest of that delete).
	restoreCTE = `WITH RECURSIVE f(id, batch) AS (
		SELECT s.id, s.trash_batch FROM sessions s WHERE s.id IN (SELECT value FROM json_each(?)) AND s.trashed_at IS NOT NULL
		UNION
		SELECT s.id, f.batch FROM sessions s JOIN f ON s.parent_session_id = f.id
			WHERE s.relation IN ('delegate', 'compression') AND s.trashed_at IS NOT NULL AND s.trash_batch = f.batch
		UNION
		SELECT p.id, f.batch FROM f JOIN sessions c ON c.id = f.id JOIN sessions p ON p.id = c.parent_session_id
			WHERE c.relation IN ('delegate', 'compression') AND p.trashed_at IS NOT NULL AND p.trash_batch = f.batch
	) SELECT DISTINCT id FROM f`
)

// Restore brings sessions back from the trash, with what went there with
// them, and fires on_session_restore (reason trash) once. Ids that exist but
// are not in the trash are reported unchanged and fire nothing.
func (s *Service) Restore(ctx context.Context, ids []string) (Result, error) {
	var out Result
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		var err error
		out, err = s.RestoreTx(ctx, tx, ids)
		return err
	})
	return out, err
}

// RestoreTx is Restore inside the caller's transaction.
func (s *Service) RestoreTx(ctx context.Context, tx *db.Tx, ids []string) (Result, error) {
	ids, err := ValidateIDs(ids)
	if err != nil {
		return Result{}, err
	}
	states, err := lookupTx(ctx, tx, ids)
	if err != nil {
		return Result{}, err
	}
	if len(states) == 0 {
		return Result{}, notFound(ids)
	}
	outcomes := make([]Outcome, len(ids))
	var seeds []string
	for i, id := range ids {
		outcomes[i].ID = id
		st, ok := states[id]
		switch {
		case !ok:
			outcomes[i].Status, outcomes[i].Error = OutcomeNotFound, "session not found"
		case !st.trashed:
			outcomes[i].Status, outcomes[i].Error = OutcomeUnchanged, "not in the trash"
		default:
			outcomes[i].Status = OutcomeRestored
			seeds = append(seeds, id)
		}
	}
	res, err := s.restoreTx(ctx, tx, seeds)
	if err != nil {
		return Result{}, err
	}
	res.Outcomes = outcomes
	return res, nil
}

// RestoreBatchTx restores every row still in the trash from batch (the undo
// of one delete request). Nothing left there is a no-op.
func (s *Service) RestoreBatchTx(ctx context.Context, tx *db.Tx, batch string) (Result, error) {
	var seeds []string
	if err := tx.G.WithContext(ctx).Raw(`SELECT id FROM sessions WHERE trash_batch = ? AND trashed_at IS NOT NULL ORDER BY id`, batch).
		Scan(&seeds).Error; err != nil {
		return Result{}, err
	}
	res, err := s.restoreTx(ctx, tx, seeds)
	if err != nil {
		return Result{}, err
	}
	res.Outcomes = lo.Map(res.AffectedIDs, func(id string, _ int) Outcome { return Outcome{ID: id, Status: OutcomeRestored} })
	return res, nil
}

func (s *Service) restoreTx(ctx context.Context, tx *db.Tx, seeds []string) (Result, error) {
	res := Result{Op: "restore", Reason: hooks.RestoreTrash, AffectedIDs: []string{}, Outcomes: []Outcome{}}
	if len(seeds) == 0 {
		return res, nil
	}
	family, err := expand(ctx, tx.Query, seeds, restoreCTE)
	if err != nil {
		return Result{}, fmt.Errorf("expand restore: %w", err)
	}
	var back []string
	if err := tx.G.WithContext(ctx).Raw(`UPDATE sessions SET trashed_at = NULL, trash_batch = '', trash_reason = '', trash_reported = 0
		WHERE trashed_at IS NOT NULL AND id IN (SELECT value FROM json_each(?)) RETURNING id`, jsonArray(family)).Scan(&back).Error; err != nil {
		return Result{}, fmt.Errorf("restore from the trash: %w", err)
	}
	res.AffectedIDs = orderAffected(lo.Intersect(seeds, back), back)
	if len(back) == 0 {
		return res, nil
	}
	res.SessionID, res.Changed = res.AffectedIDs[0], true
	if err := s.fireRestore(ctx, tx, &res); err != nil {
		return Result{}, err
	}
	return res, nil
}

func (s *Service) fireRestore(ctx context.Context, tx *db.Tx, res *Result) error {
	if s.bus == nil {
		return apperr.New(apperr.Internal, "session store of profile %s has no hook bus", s.profile)
	}
	ev, err := s.bus.EnqueueTx(ctx, tx, hooks.OnSessionRestore, hooks.SessionRestore{
		SessionID: res.SessionID, RestoredIDs: res.AffectedIDs, Reason: res.Reason, Profile: s.profile,
	})
	if err != nil {
		return err
	}
	res.EventID = ev.ID
	return nil
}

// EmptyTrash purges every row that has been in the trash for more than
// olderThan (0: all of it) in one transaction. Plugins were told of these
// rows when they went to the trash, so normally nothing fires.
func (s *Service) EmptyTrash(ctx context.Context, olderThan time.Duration, progress Progress) (Result, error) {
	var out Result
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		var err error
		out, err = s.EmptyTrashTx(ctx, tx, olderThan, progress)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("empty the trash: %w", err)
	}
	return out, nil
}

// EmptyTrashTx is EmptyTrash inside the caller's transaction.
func (s *Service) EmptyTrashTx(ctx context.Context, tx *db.Tx, olderThan time.Duration, progress Progress) (Result, error) {
	if olderThan < 0 {
		return Result{}, apperr.New(apperr.Invalid, "older than must not be negative")
	}
	var ids []string
	if err := tx.G.WithContext(ctx).Raw(`SELECT id FROM sessions WHERE trashed_at IS NOT NULL AND trashed_at <= ? ORDER BY trashed_at, id`,
		db.Ms(tx.Now.Add(-olderThan))).Scan(&ids).Error; err != nil {
		return Result{}, err
	}
	reason := hooks.ReasonDelete
	if len(ids) > 0 {
		var r string
		if err := tx.G.WithContext(ctx).Raw(`SELECT trash_reason FROM sessions WHERE id = ?`, ids[0]).Scan(&r).Error; err == nil && r != "" {
			reason = r
		}
	}
	res, err := s.purgeTx(ctx, tx, reason, nil, ids, true, progress)
	if err != nil {
		return Result{}, err
	}
	res.Op = "empty_trash"
	res.Outcomes = lo.Map(res.AffectedIDs, func(id string, _ int) Outcome { return Outcome{ID: id, Status: OutcomeDeleted} })
	return res, nil
}

// PurgeExpired purges what has been in the trash for trash_days (the
// maintenance task). With trash_days 0 nothing waits in the trash, and rows
// left there from before are purged.
func (s *Service) PurgeExpired(ctx context.Context, progress Progress) (Result, error) {
	days, _ := s.trash()
	return s.EmptyTrash(ctx, time.Duration(days)*24*time.Hour, progress)
}

// TrashSummary describes what the trash holds.
type TrashSummary struct {
	Sessions  int64      `json:"sessions"`
	Messages  int64      `json:"messages"`
	Bytes     int64      `json:"bytes"` // text of their messages
	TrashDays int        `json:"trash_days"`
	Oldest    *time.Time `json:"oldest_trashed_at,omitempty"`
	NextPurge *time.Time `json:"next_purge_at,omitempty"`
}

// Trash summarises the trash: counts, the size of its messages, and when the
// next rows leave it for good.
func (s *Service) Trash(ctx context.Context) (TrashSummary, error) {
	var row struct {
		N      int64
		Oldest *int64
	}
	g := s.db.Read.WithContext(ctx)
	if err := g.Raw(`SELECT count(*) AS n, min(trashed_at) AS oldest FROM sessions WHERE trashed_at IS NOT NULL`).Scan(&row).Error; err != nil {
		return TrashSummary{}, fmt.Errorf("trash: %w", err)
	}
	days, _ := s.trash()
	out := TrashSummary{Sessions: row.N, TrashDays: days}
	if row.N > 0 {
		var m struct{ N, Bytes int64 }
		if err := g.Raw(`SELECT count(*) AS n, COALESCE(sum(length(CAST(m.content AS BLOB))), 0) AS bytes FROM messages m
			WHERE m.session_id IN (SELECT id FROM sessions WHERE trashed_at IS NOT NULL)`).Scan(&m).Error; err != nil {
			return TrashSummary{}, fmt.Errorf("trash: %w", err)
		}
		out.Messages, out.Bytes = m.N, m.Bytes
	}
	if row.Oldest != nil {
		o := time.UnixMilli(*row.Oldest).UTC()
		next := o.Add(time.Duration(days) * 24 * time.Hour)
		out.Oldest, out.NextPurge = &o, &next
	}
	return out, nil
}
