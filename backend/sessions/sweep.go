package sessions

import (
	"context"
	"fmt"
	"time"

	"github.com/samber/lo"

	"atrium/backend/db"
	"atrium/backend/hooks"
)

// standalone restricts a sweep to sessions that are not part of a compression
// chain and have no children, so removing them never splits a chain nor
// cascades into rows that did not qualify.
const standalone = ` AND s.trashed_at IS NULL AND s.relation <> 'compression'
	AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id AND c.trashed_at IS NULL)`

// SweepEmpty deletes ended, unarchived sessions with no messages, firing
// on_session_delete (empty_sweep) once for all of them. Nothing to sweep
// fires nothing. Like every automatic delete, it moves the rows to the trash
// unless sessions.trash_automatic is false (or trash_days 0).
func (s *Service) SweepEmpty(ctx context.Context, progress Progress) (Result, error) {
	return s.sweep(ctx, hooks.ReasonEmptySweep, progress, func(tx *db.Tx) (string, []any) {
		return `SELECT s.id FROM sessions s WHERE s.ended_at IS NOT NULL AND s.archived = 0 AND s.message_count = 0` + standalone, nil
	})
}

// PruneGhosts deletes ghost rows: no title, no messages, started over 24 h
// ago and never ended (a process died before its first turn).
func (s *Service) PruneGhosts(ctx context.Context, progress Progress) (Result, error) {
	return s.sweep(ctx, hooks.ReasonGhostPrune, progress, func(tx *db.Tx) (string, []any) {
		return `SELECT s.id FROM sessions s WHERE s.ended_at IS NULL AND s.title = '' AND s.message_count = 0
			AND s.started_at < ?` + standalone, []any{db.Ms(tx.Now.Add(-24 * time.Hour))}
	})
}

func (s *Service) sweep(ctx context.Context, reason string, progress Progress, query func(tx *db.Tx) (string, []any)) (Result, error) {
	var out Result
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		q, args := query(tx)
		var ids []string
		if err := tx.G.WithContext(ctx).Raw(q+` ORDER BY s.last_activity_at, s.id`, args...).Scan(&ids).Error; err != nil {
			return err
		}
		var err error
		out, err = s.discardTx(ctx, tx, reason, true, ids, progress)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", reason, err)
	}
	return out, nil
}

// discardTx removes a set that is already closed under cascades and fires
// one event for it; an empty set is a no-op. An automatic removal goes to
// the trash when the store keeps one for automatic deletes; otherwise (and
// for profile moves) the rows are deleted for good.
func (s *Service) discardTx(ctx context.Context, tx *db.Tx, reason string, automatic bool, ids []string, progress Progress) (Result, error) {
	var res Result
	var err error
	if automatic && s.trashAuto && s.trashDays > 0 {
		res, err = s.trashTx(ctx, tx, reason, ids, ids, "", progress)
	} else {
		res, err = s.purgeTx(ctx, tx, reason, ids, ids, true, progress)
	}
	if err != nil {
		return Result{}, err
	}
	res.Op = "delete"
	res.Outcomes = lo.Map(res.AffectedIDs, func(id string, _ int) Outcome { return Outcome{ID: id, Status: OutcomeDeleted} })
	return res, nil
}

// Prune applies retention: ended sessions whose last activity is older than
// days, pinned ones spared, deleted in one transaction (statements chunked)
// with one on_session_delete (prune). A conversation is never split: a
// candidate whose chain or delegate family holds a row that does not qualify
// (live, recent or pinned) stays, with its whole family.
func (s *Service) Prune(ctx context.Context, days int, progress Progress) (Result, error) {
	if days <= 0 {
		return Result{}, fmt.Errorf("prune: retention days must be positive, got %d", days)
	}
	var out Result
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		g := tx.G.WithContext(ctx)
		cutoff := db.Ms(tx.Now.Add(-time.Duration(days) * 24 * time.Hour))
		qualifies := `ended_at IS NOT NULL AND pinned = 0 AND last_activity_at < ?`
		var cands []string
		if err := g.Raw(`SELECT id FROM sessions WHERE trashed_at IS NULL AND `+qualifies+` ORDER BY last_activity_at, id`, cutoff).Scan(&cands).Error; err != nil {
			return err
		}
		// A row already in the trash never blocks: it is gone from view.
		ids, err := closedSet(ctx, tx.Query, cands, `trashed_at IS NOT NULL OR (`+qualifies+`)`, cutoff)
		if err != nil {
			return err
		}
		out, err = s.discardTx(ctx, tx, hooks.ReasonPrune, true, ids, progress)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("prune: %w", err)
	}
	return out, nil
}

// closedSet returns the candidates (in order) whose delete closure holds only
// rows satisfying qualifies, plus those closures.
func closedSet(ctx context.Context, read queryFunc, cands []string, qualifies string, args ...any) ([]string, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	closure, err := expand(ctx, read, cands, deleteCTE)
	if err != nil {
		return nil, err
	}
	blockers, err := queryColumn[string](ctx, read, `SELECT id FROM sessions WHERE id IN (SELECT value FROM json_each(?)) AND NOT (`+qualifies+`)`,
		append([]any{jsonArray(closure)}, args...)...)
	if err != nil {
		return nil, err
	}
	if len(blockers) > 0 {
		dragging, err := expand(ctx, read, blockers, draggedByCTE)
		if err != nil {
			return nil, err
		}
		drop := lo.SliceToMap(dragging, func(id string) (string, bool) { return id, true })
		cands = lo.Filter(cands, func(id string, _ int) bool { return !drop[id] })
		if closure, err = expand(ctx, read, cands, deleteCTE); err != nil {
			return nil, err
		}
	}
	return orderAffected(cands, closure), nil
}

// ArchiveIdle archives, silently (archived_by auto), unpinned sessions idle for
// more than days; a chain is archived only when every link is idle.
func (s *Service) ArchiveIdle(ctx context.Context, days int) (Result, error) {
	if days <= 0 {
		return Result{}, fmt.Errorf("archive idle: days must be positive, got %d", days)
	}
	var out Result
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		g := tx.G.WithContext(ctx)
		cutoff := db.Ms(tx.Now.Add(-time.Duration(days) * 24 * time.Hour))
		var cands []string
		if err := g.Raw(`SELECT id FROM sessions WHERE archived = 0 AND trashed_at IS NULL AND pinned = 0 AND last_activity_at < ? ORDER BY last_activity_at, id`, cutoff).Scan(&cands).Error; err != nil {
			return err
		}
		var ids []string
		seen := map[string]bool{}
		for _, id := range cands {
			if seen[id] {
				continue
			}
			lineage, err := expand(ctx, tx.Query, []string{id}, lineageCTE)
			if err != nil {
				return err
			}
			for _, l := range lineage {
				seen[l] = true
			}
			var busy int64
			if err := g.Raw(`SELECT COUNT(*) FROM sessions WHERE id IN (SELECT value FROM json_each(?)) AND (pinned = 1 OR last_activity_at >= ?)`,
				jsonArray(lineage), cutoff).Scan(&busy).Error; err != nil {
				return err
			}
			if busy == 0 {
				ids = append(ids, lineage...)
			}
		}
		changed, err := flipArchived(ctx, tx, ids, true, ArchivedByAuto)
		if err != nil {
			return err
		}
		out = Result{Op: "archive", Reason: "auto", AffectedIDs: changed, Changed: len(changed) > 0, Outcomes: []Outcome{}}
		if out.AffectedIDs == nil {
			out.AffectedIDs = []string{}
		}
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("archive idle: %w", err)
	}
	return out, nil
}
