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
		out, err = s.discardTx(ctx, tx, reason, true, true, ids, progress)
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
// for profile moves) the rows are deleted for good, their surviving
// children detached unless the caller knows there are none (detach false).
func (s *Service) discardTx(ctx context.Context, tx *db.Tx, reason string, automatic, detach bool, ids []string, progress Progress) (Result, error) {
	var res Result
	var err error
	if days, auto := s.trash(); automatic && auto && days > 0 {
		res, err = s.trashTx(ctx, tx, reason, days, ids, ids, "", progress)
	} else {
		res, err = s.purgeTx(ctx, tx, reason, ids, ids, detach, progress)
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
		ids, detach, err := pruneSet(ctx, tx.Query, db.Ms(tx.Now.Add(-time.Duration(days)*24*time.Hour)))
		if err != nil {
			return err
		}
		out, err = s.discardTx(ctx, tx, hooks.ReasonPrune, true, detach, ids, progress)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("prune: %w", err)
	}
	return out, nil
}

// pruneQualifies is what retention takes: ended, unpinned, idle since
// before the bound cutoff.
const pruneQualifies = `ended_at IS NOT NULL AND pinned = 0 AND last_activity_at < ?`

// pruneSet returns what a prune with cutoff removes, oldest activity first:
// the qualifying sessions whose delete closure holds only rows that qualify
// too (a row already in the trash never blocks: it is gone from view), plus
// those closures. detach is false when every candidate is alone (no child,
// not in a chain), as most are: then none leaves a child behind.
func pruneSet(ctx context.Context, read queryFunc, cutoff int64) (ids []string, detach bool, err error) {
	rows, err := read(ctx, `SELECT id, `+aloneColumn+` FROM sessions WHERE trashed_at IS NULL AND `+pruneQualifies+`
		ORDER BY last_activity_at, id`, cutoff)
	cands, err := scanAll(rows, err, func(sc scanner) (candidate, error) {
		var c candidate
		err := sc.Scan(&c.id, &c.alone)
		return c, err
	})
	if err != nil {
		return nil, false, err
	}
	return closedSet(ctx, read, cands, cutoff)
}

// candidate is a row a prune would take, and whether a delete takes it
// alone (aloneColumn).
type candidate struct {
	id    string
	alone bool
}

// closedSet returns the candidates (in order) whose delete closure holds only
// rows that qualify for a prune with cutoff (or are in the trash already),
// plus those closures, and whether any of them may leave a child behind. A candidate that is alone is its own closure,
// and qualifies: only the others take the recursion and the check. Nothing
// that is alone is ever dragged in by a blocker either: it has no child and
// continues no chain.
func closedSet(ctx context.Context, read queryFunc, cands []candidate, cutoff int64) ([]string, bool, error) {
	var related []string
	for _, c := range cands {
		if !c.alone {
			related = append(related, c.id)
		}
	}
	closure, err := expand(ctx, read, related, deleteCTE)
	if err != nil {
		return nil, false, err
	}
	var drop map[string]bool
	if len(closure) > 0 {
		blockers, err := queryColumn[string](ctx, read, `SELECT id FROM sessions WHERE id IN (SELECT value FROM json_each(?))
			AND NOT (trashed_at IS NOT NULL OR (`+pruneQualifies+`))`, jsonArray(closure), cutoff)
		if err != nil {
			return nil, false, err
		}
		if len(blockers) > 0 {
			dragging, err := expand(ctx, read, blockers, draggedByCTE)
			if err != nil {
				return nil, false, err
			}
			drop = lo.SliceToMap(dragging, func(id string) (string, bool) { return id, true })
			related = lo.Filter(related, func(id string, _ int) bool { return !drop[id] })
			if closure, err = expand(ctx, read, related, deleteCTE); err != nil {
				return nil, false, err
			}
		}
	}
	kept := make([]string, 0, len(cands))
	for _, c := range cands {
		if !drop[c.id] {
			kept = append(kept, c.id)
		}
	}
	return orderAffected(kept, closure), len(related) > 0, nil
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
