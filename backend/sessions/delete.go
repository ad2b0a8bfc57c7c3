package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/samber/lo"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/hooks"
)

// chunkSize keeps every statement of a bulk operation far below SQLite's
// bound-parameter limit.
const chunkSize = 500

// Progress is told, from inside the transaction, how many of the rows of an
// operation are done.
type Progress func(done, total int)

// Per-id outcomes of an operation.
const (
	OutcomeDeleted    = "deleted"
	OutcomeArchived   = "archived"
	OutcomeUnarchived = "unarchived"
	OutcomeUnchanged  = "unchanged"
	OutcomeNotFound   = "not_found"
	OutcomeKept       = "kept"
)

// Outcome is what happened to one requested id.
type Outcome struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// Result is the result of a delete, archive or unarchive.
type Result struct {
	Op          string    `json:"op"`
	Reason      string    `json:"reason,omitempty"`
	SessionID   string    `json:"session_id,omitempty"` // the first requested id that was affected
	AffectedIDs []string  `json:"affected_ids"`         // every row removed/archived/unarchived, cascades included
	Outcomes    []Outcome `json:"outcomes"`
	Changed     bool      `json:"changed"`
	EventID     string    `json:"event_id,omitempty"`
}

// Delete removes sessions in one transaction and fires on_session_delete once.
func (s *Service) Delete(ctx context.Context, ids []string, progress Progress) (Result, error) {
	var out Result
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		var err error
		out, err = s.DeleteTx(ctx, tx, ids, progress)
		return err
	})
	return out, err
}

// DeleteTx deletes the requested sessions inside tx: their compression chains
// and delegate children go with them, branch children survive with the link
// cleared. Unknown ids are reported per id; if none is known, nothing changes
// and the error is not_found.
func (s *Service) DeleteTx(ctx context.Context, tx *db.Tx, ids []string, progress Progress) (Result, error) {
	ids, err := ValidateIDs(ids)
	if err != nil {
		return Result{}, err
	}
	found, outcomes, err := existing(ctx, tx, ids)
	if err != nil {
		return Result{}, err
	}
	if len(found) == 0 {
		return Result{}, notFound(ids)
	}
	closure, err := expand(ctx, tx.G, found, deleteCTE)
	if err != nil {
		return Result{}, fmt.Errorf("expand delete: %w", err)
	}
	affected := orderAffected(found, closure)
	if err := s.removeTx(ctx, tx, affected, progress); err != nil {
		return Result{}, err
	}
	for i := range outcomes {
		if outcomes[i].Status == "" {
			outcomes[i].Status = OutcomeDeleted
		}
	}
	res := Result{Op: "delete", Reason: hooks.ReasonDelete, SessionID: found[0], AffectedIDs: affected, Outcomes: outcomes, Changed: true}
	if err := s.fireDelete(ctx, tx, &res); err != nil {
		return Result{}, err
	}
	return res, nil
}

// removeTx deletes exactly the given rows (already closed under cascades),
// clears the parent link of surviving children, and schedules the sidecar
// files for removal after commit.
func (s *Service) removeTx(ctx context.Context, tx *db.Tx, affected []string, progress Progress) error {
	g := tx.G.WithContext(ctx)
	raw := jsonArray(affected)
	// Branch children (and anything else left outside the closure) survive
	// with their parent link cleared.
	if err := g.Exec(`UPDATE sessions SET parent_session_id = NULL, relation = ''
		WHERE parent_session_id IN (SELECT value FROM json_each(?)) AND id NOT IN (SELECT value FROM json_each(?))`, raw, raw).Error; err != nil {
		return fmt.Errorf("detach surviving children: %w", err)
	}
	done := 0
	for _, chunk := range lo.Chunk(affected, chunkSize) {
		if err := g.Exec(`DELETE FROM messages WHERE session_id IN ?`, chunk).Error; err != nil {
			return fmt.Errorf("delete messages: %w", err)
		}
		if err := g.Exec(`DELETE FROM sessions WHERE id IN ?`, chunk).Error; err != nil {
			return fmt.Errorf("delete sessions: %w", err)
		}
		done += len(chunk)
		if progress != nil {
			progress(done, len(affected))
		}
	}
	if s.sessionsDir != "" {
		dir := s.sessionsDir
		tx.AfterCommit(func() { s.removeSidecars(dir, affected) })
	}
	return nil
}

func (s *Service) fireDelete(ctx context.Context, tx *db.Tx, res *Result) error {
	if s.bus == nil {
		return apperr.New(apperr.Internal, "session store of profile %s has no hook bus", s.profile)
	}
	ev, err := s.bus.EnqueueTx(ctx, tx, hooks.OnSessionDelete, hooks.SessionDelete{
		SessionID: res.SessionID, Reason: res.Reason, Profile: s.profile, DeletedIDs: res.AffectedIDs, SessionsDir: s.sessionsDir,
	})
	if err != nil {
		return err
	}
	res.EventID = ev.ID
	return nil
}

// removeSidecars deletes <id>.* (and a folder named <id>) in dir for every id.
// Ids were validated, so no name can leave dir.
func (s *Service) removeSidecars(dir string, ids []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("read sessions folder", "dir", dir, "error", err)
		}
		return
	}
	gone := lo.SliceToMap(ids, func(id string) (string, bool) { return id, true })
	for _, e := range entries {
		name := e.Name()
		id, _, _ := strings.Cut(name, ".")
		if !gone[id] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			s.log.Warn("remove sidecar file", "file", name, "error", err)
		}
	}
}

// existing returns the requested ids that exist (request order) and one
// outcome per requested id, not_found filled in.
func existing(ctx context.Context, tx *db.Tx, ids []string) ([]string, []Outcome, error) {
	var have []string
	if err := tx.G.WithContext(ctx).Raw(`SELECT id FROM sessions WHERE id IN (SELECT value FROM json_each(?))`, jsonArray(ids)).Scan(&have).Error; err != nil {
		return nil, nil, fmt.Errorf("look up sessions: %w", err)
	}
	set := lo.SliceToMap(have, func(id string) (string, bool) { return id, true })
	var found []string
	outcomes := make([]Outcome, len(ids))
	for i, id := range ids {
		outcomes[i].ID = id
		if set[id] {
			found = append(found, id)
		} else {
			outcomes[i].Status = OutcomeNotFound
			outcomes[i].Error = "session not found"
		}
	}
	return found, outcomes, nil
}

func notFound(ids []string) error {
	if len(ids) == 1 {
		return apperr.New(apperr.NotFound, "session %s not found", ids[0])
	}
	return apperr.New(apperr.NotFound, "none of the %d sessions was found", len(ids))
}

// orderAffected lists the requested rows first, in request order, then the
// cascaded ones sorted, so payloads are deterministic.
func orderAffected(requested, closure []string) []string {
	req := lo.SliceToMap(requested, func(id string) (string, bool) { return id, true })
	var rest []string
	for _, id := range closure {
		if !req[id] {
			rest = append(rest, id)
		}
	}
	sort.Strings(rest)
	out := append([]string{}, requested...)
	return append(out, rest...)
}

func jsonArray(ids []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		// ids are validated: no quote or backslash can appear.
		b.WriteByte('"')
		b.WriteString(id)
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return b.String()
}

// Archive hides sessions (with their whole compression lineage) for the user
// and fires on_session_delete (reason archive) once, for the rows that really
// went from not archived to archived. Nothing changes, nothing fires, for
// sessions already archived.
func (s *Service) Archive(ctx context.Context, ids []string) (Result, error) {
	var out Result
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		var err error
		out, err = s.ArchiveTx(ctx, tx, ids)
		return err
	})
	return out, err
}

// ArchiveTx is Archive inside the caller's transaction.
func (s *Service) ArchiveTx(ctx context.Context, tx *db.Tx, ids []string) (Result, error) {
	res, err := s.setArchivedTx(ctx, tx, ids, true, ArchivedByUser)
	if err != nil || !res.Changed {
		return res, err
	}
	res.Reason = hooks.ReasonArchive
	if err := s.fireDelete(ctx, tx, &res); err != nil {
		return Result{}, err
	}
	return res, nil
}

// Unarchive brings sessions (and their lineage) back. It fires nothing.
func (s *Service) Unarchive(ctx context.Context, ids []string) (Result, error) {
	var out Result
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		var err error
		out, err = s.UnarchiveTx(ctx, tx, ids)
		return err
	})
	return out, err
}

// UnarchiveTx is Unarchive inside the caller's transaction.
func (s *Service) UnarchiveTx(ctx context.Context, tx *db.Tx, ids []string) (Result, error) {
	return s.setArchivedTx(ctx, tx, ids, false, "")
}

func (s *Service) setArchivedTx(ctx context.Context, tx *db.Tx, ids []string, archive bool, by string) (Result, error) {
	ids, err := ValidateIDs(ids)
	if err != nil {
		return Result{}, err
	}
	found, outcomes, err := existing(ctx, tx, ids)
	if err != nil {
		return Result{}, err
	}
	if len(found) == 0 {
		return Result{}, notFound(ids)
	}
	op, status := "archive", OutcomeArchived
	if !archive {
		op, status = "unarchive", OutcomeUnarchived
	}
	res := Result{Op: op, Outcomes: outcomes, AffectedIDs: []string{}}
	// Each requested id takes its lineage along; outcome per requested id.
	changedSet := map[string]bool{}
	for _, id := range found {
		lineage, err := expand(ctx, tx.G, []string{id}, lineageCTE)
		if err != nil {
			return Result{}, err
		}
		changed, err := flipArchived(ctx, tx, lineage, archive, by)
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", op, err)
		}
		for _, c := range changed {
			changedSet[c] = true
		}
		st := OutcomeUnchanged
		if len(changed) > 0 || changedSet[id] {
			st = status
			if res.SessionID == "" {
				res.SessionID = id
			}
		}
		for i := range res.Outcomes {
			if res.Outcomes[i].ID == id {
				res.Outcomes[i].Status = st
			}
		}
	}
	res.AffectedIDs = orderAffected(lo.Filter(found, func(id string, _ int) bool { return changedSet[id] }), lo.Keys(changedSet))
	res.Changed = len(res.AffectedIDs) > 0
	return res, nil
}

func flipArchived(ctx context.Context, tx *db.Tx, ids []string, archive bool, by string) ([]string, error) {
	var changed []string
	var err error
	g := tx.G.WithContext(ctx)
	if archive {
		err = g.Raw(`UPDATE sessions SET archived = 1, archived_at = ?, archived_by = ?
			WHERE archived = 0 AND id IN (SELECT value FROM json_each(?)) RETURNING id`, db.Ms(tx.Now), by, jsonArray(ids)).Scan(&changed).Error
	} else {
		err = g.Raw(`UPDATE sessions SET archived = 0, archived_at = NULL, archived_by = ''
			WHERE archived = 1 AND id IN (SELECT value FROM json_each(?)) RETURNING id`, jsonArray(ids)).Scan(&changed).Error
	}
	return changed, err
}

// DeleteCurrent is the exit_delete path (/exit --delete, sessions delete
// --if-empty): it deletes the caller's session, and with ifEmpty only when it
// has no messages and no children, checked in the same transaction. A kept
// session is reported with changed=false and fires nothing.
func (s *Service) DeleteCurrent(ctx context.Context, id string, ifEmpty bool) (Result, error) {
	if err := ValidateID(id); err != nil {
		return Result{}, err
	}
	var out Result
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		sess, err := getTx(ctx, tx, id)
		if err != nil {
			return err
		}
		if ifEmpty {
			var children int64
			if err := tx.G.WithContext(ctx).Raw(`SELECT COUNT(*) FROM sessions WHERE parent_session_id = ?`, id).Scan(&children).Error; err != nil {
				return err
			}
			if sess.MessageCount > 0 || children > 0 {
				out = Result{Op: "delete", AffectedIDs: []string{}, Outcomes: []Outcome{{ID: id, Status: OutcomeKept,
					Error: fmt.Sprintf("not empty: %d messages, %d child sessions", sess.MessageCount, children)}}}
				return nil
			}
		}
		out, err = s.DeleteTx(ctx, tx, []string{id}, nil)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("delete session %s: %w", id, err)
	}
	return out, nil
}
