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
const standalone = ` AND s.relation <> 'compression'
	AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = s.id)`

// SweepEmpty deletes ended, unarchived sessions with no messages, firing
// on_session_delete (empty_sweep) once for all of them. Nothing to sweep
// fires nothing.
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
		out, err = s.removeAllTx(ctx, tx, reason, ids, progress)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", reason, err)
	}
	return out, nil
}

// removeAllTx deletes a set that is already closed under cascades and fires
// one event for it; an empty set is a no-op.
func (s *Service) removeAllTx(ctx context.Context, tx *db.Tx, reason string, ids []string, progress Progress) (Result, error) {
	res := Result{Op: "delete", Reason: reason, AffectedIDs: ids, Outcomes: []Outcome{}}
	if len(ids) == 0 {
		res.AffectedIDs = []string{}
		return res, nil
	}
	if err := s.removeTx(ctx, tx, ids, progress); err != nil {
		return Result{}, err
	}
	res.SessionID, res.Changed = ids[0], true
	for _, id := range ids {
		res.Outcomes = append(res.Outcomes, Outcome{ID: id, Status: OutcomeDeleted})
	}
	if err := s.fireDelete(ctx, tx, &res); err != nil {
		return Result{}, err
	}
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
		if err := g.Raw(`SELECT id FROM sessions WHERE `+qualifies+` ORDER BY last_activity_at, id`, cutoff).Scan(&cands).Error; err != nil {
			return err
		}
		ids, err := closedSet(ctx, tx, cands, qualifies, cutoff)
		if err != nil {
			return err
		}
		out, err = s.removeAllTx(ctx, tx, hooks.ReasonPrune, ids, progress)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("prune: %w", err)
	}
	return out, nil
}

// closedSet returns the candidates (in order) whose delete closure holds only
// rows satisfying qualifies, plus those closures.
func closedSet(ctx context.Context, tx *db.Tx, cands []string, qualifies string, args ...any) ([]string, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	g := tx.G.WithContext(ctx)
	closure, err := expand(ctx, g, cands, deleteCTE)
	if err != nil {
		return nil, err
	}
	var blockers []string
	if err := g.Raw(`SELECT id FROM sessions WHERE id IN (SELECT value FROM json_each(?)) AND NOT (`+qualifies+`)`,
		append([]any{jsonArray(closure)}, args...)...).Scan(&blockers).Error; err != nil {
		return nil, err
	}
	if len(blockers) > 0 {
		dragging, err := expand(ctx, g, blockers, draggedByCTE)
		if err != nil {
			return nil, err
		}
		drop := lo.SliceToMap(dragging, func(id string) (string, bool) { return id, true })
		cands = lo.Filter(cands, func(id string, _ int) bool { return !drop[id] })
		if closure, err = expand(ctx, g, cands, deleteCTE); err != nil {
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
		if err := g.Raw(`SELECT id FROM sessions WHERE archived = 0 AND pinned = 0 AND last_activity_at < ? ORDER BY last_activity_at, id`, cutoff).Scan(&cands).Error; err != nil {
			return err
		}
		var ids []string
		seen := map[string]bool{}
		for _, id := range cands {
			if seen[id] {
				continue
			}
			lineage, err := expand(ctx, g, []string{id}, lineageCTE)
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
