package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"
	"github.com/samber/lo"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/hooks"
)

// Resolver opens the store of another profile, for moves.
type Resolver func(ctx context.Context, profile string) (*Service, func(), error)

type moveRow struct {
	ID         string
	ToProfile  string
	SessionIDs string
}

// Move copies sessions (with their chains, delegate children and messages)
// into the store of profile `to`, where the adoption is silent, and only once
// that store has committed them removes them here, firing on_session_delete
// (profile_repair) here. A journal row makes an interrupted move finishable
// with RepairProfile.
func (s *Service) Move(ctx context.Context, ids []string, to string, resolve Resolver) (Result, error) {
	ids, err := ValidateIDs(ids)
	if err != nil {
		return Result{}, err
	}
	if err := ValidateProfileName(to); err != nil {
		return Result{}, err
	}
	if to == s.profile {
		return Result{}, apperr.New(apperr.Invalid, "sessions already belong to profile %s", to)
	}
	var mv moveRow
	err = s.db.InTx(ctx, func(tx *db.Tx) error {
		found, _, err := existing(ctx, tx, ids)
		if err != nil {
			return err
		}
		if len(found) < len(ids) {
			missing := lo.Without(ids, found...)
			return apperr.New(apperr.NotFound, "session %s not found", missing[0])
		}
		closure, err := expand(ctx, tx.Query, found, deleteCTE)
		if err != nil {
			return err
		}
		raw, _ := json.Marshal(orderAffected(found, closure))
		mv = moveRow{ID: uuid.Must(uuid.NewV7()).String(), ToProfile: to, SessionIDs: string(raw)}
		return tx.G.WithContext(ctx).Exec(`INSERT INTO profile_moves (id, to_profile, session_ids, created_at) VALUES (?, ?, ?, ?)`,
			mv.ID, mv.ToProfile, mv.SessionIDs, db.Ms(tx.Now)).Error
	})
	if err != nil {
		return Result{}, fmt.Errorf("move to profile %s: %w", to, err)
	}
	return s.finishMove(ctx, mv, resolve)
}

// RepairProfile finishes every move that was interrupted between its two
// commits. It returns one result per finished move.
func (s *Service) RepairProfile(ctx context.Context, resolve Resolver) ([]Result, error) {
	var rows []moveRow
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT id, to_profile, session_ids FROM profile_moves ORDER BY created_at`).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("repair profile: %w", err)
	}
	out := []Result{}
	for _, mv := range rows {
		r, err := s.finishMove(ctx, mv, resolve)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *Service) finishMove(ctx context.Context, mv moveRow, resolve Resolver) (Result, error) {
	var ids []string
	if err := json.Unmarshal([]byte(mv.SessionIDs), &ids); err != nil {
		return Result{}, fmt.Errorf("move %s: corrupt journal: %w", mv.ID, err)
	}
	target, closeTarget, err := resolve(ctx, mv.ToProfile)
	if err != nil {
		return Result{}, fmt.Errorf("open profile %s: %w", mv.ToProfile, err)
	}
	defer closeTarget()
	// Snapshot what is still here (a repair may find some rows gone).
	var rows []Session
	var msgs []Message
	g := s.db.Read.WithContext(ctx)
	if err := g.Raw(`SELECT * FROM sessions WHERE id IN (SELECT value FROM json_each(?))`, jsonArray(ids)).Scan(&rows).Error; err != nil {
		return Result{}, err
	}
	if err := g.Raw(`SELECT * FROM messages WHERE session_id IN (SELECT value FROM json_each(?)) ORDER BY id`, jsonArray(ids)).Scan(&msgs).Error; err != nil {
		return Result{}, err
	}
	if err := target.adopt(ctx, rows, msgs); err != nil {
		return Result{}, fmt.Errorf("copy into profile %s: %w", mv.ToProfile, err)
	}
	if err := copySidecars(s.sessionsDir, target.sessionsDir, ids); err != nil {
		return Result{}, fmt.Errorf("copy sidecar files to profile %s: %w", mv.ToProfile, err)
	}
	present := lo.Map(rows, func(r Session, _ int) string { return r.ID })
	present = lo.Filter(ids, func(id string, _ int) bool { return lo.Contains(present, id) })
	var res Result
	err = s.db.InTx(ctx, func(tx *db.Tx) error {
		if err := tx.G.WithContext(ctx).Exec(`DELETE FROM profile_moves WHERE id = ?`, mv.ID).Error; err != nil {
			return err
		}
		var err error
		res, err = s.discardTx(ctx, tx, hooks.ReasonProfileRepair, false, true, present, nil)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("remove moved sessions: %w", err)
	}
	res.Op = "move"
	return res, nil
}

// adopt inserts rows copied from another profile's store, parents first. It
// is silent: adoption fires nothing, archived rows stay archived. Rows already
// present (a repeated repair) are left as they are.
func (s *Service) adopt(ctx context.Context, rows []Session, msgs []Message) error {
	return s.db.InTx(ctx, func(tx *db.Tx) error {
		g := tx.G.WithContext(ctx)
		in := lo.SliceToMap(rows, func(r Session) (string, bool) { return r.ID, true })
		inserted := map[string]bool{}
		// Parents first: repeat passes until every row whose parent is in the
		// set has been placed after it.
		pending := rows
		for len(pending) > 0 {
			var next []Session
			for _, r := range pending {
				if r.ParentSessionID != nil && in[*r.ParentSessionID] && !inserted[*r.ParentSessionID] {
					next = append(next, r)
					continue
				}
				r.PK = 0
				r.Profile = s.profile
				if r.ParentSessionID != nil && !in[*r.ParentSessionID] {
					var n int64
					if err := g.Raw(`SELECT COUNT(*) FROM sessions WHERE id = ?`, *r.ParentSessionID).Scan(&n).Error; err != nil {
						return err
					}
					if n == 0 {
						r.ParentSessionID, r.Relation = nil, ""
					}
				}
				// A row in the trash arrives in the trash, with its batch; this
				// profile's plugins were never told of it (trash_reported 0),
				// so its purge here reports it.
				res := g.Exec(`INSERT INTO sessions (id, source, title, profile, parent_session_id, relation, started_at, ended_at, end_reason,
					last_activity_at, archived, archived_at, archived_by, pinned, message_count, token_count,
					platform, sender_id, sender_name, trashed_at, trash_batch, trash_reason, trash_reported)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0) ON CONFLICT (id) DO NOTHING`,
					r.ID, r.Source, r.Title, r.Profile, r.ParentSessionID, r.Relation, r.StartedAt, r.EndedAt, r.EndReason,
					r.LastActivityAt, r.Archived, r.ArchivedAt, r.ArchivedBy, r.Pinned, r.MessageCount, r.TokenCount,
					r.Platform, r.SenderID, r.SenderName, r.TrashedAt, r.TrashBatch, r.TrashReason)
				if res.Error != nil {
					return res.Error
				}
				if res.RowsAffected == 0 {
					in[r.ID] = false // already adopted earlier: keep its messages as they are
				}
				inserted[r.ID] = true
			}
			if len(next) == len(pending) {
				return apperr.New(apperr.Internal, "parent cycle among moved sessions")
			}
			pending = next
		}
		for _, chunk := range lo.Chunk(msgs, 200) {
			for _, m := range chunk {
				if !in[m.SessionID] {
					continue
				}
				if err := g.Exec(`INSERT INTO messages (session_id, role, content, sent_content, tool_name, tool_call_id, token_count, created_at, active)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, m.SessionID, m.Role, m.Content, m.SentContent, m.ToolName, m.ToolCallID,
					m.TokenCount, m.CreatedAt, m.Active).Error; err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func copySidecars(from, to string, ids []string) error {
	if from == "" || to == "" {
		return nil
	}
	entries, err := os.ReadDir(from)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	want := lo.SliceToMap(ids, func(id string) (string, bool) { return id, true })
	for _, e := range entries {
		id, _, _ := strings.Cut(e.Name(), ".")
		if !want[id] || !e.Type().IsRegular() {
			continue
		}
		if err := os.MkdirAll(to, 0o700); err != nil {
			return err
		}
		if err := copyFile(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600) // sidecars are as private as transcripts
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// ValidateProfileName refuses names that could leave the profiles folder.
func ValidateProfileName(name string) error {
	if name == "default" {
		return nil
	}
	if !wellFormedID(name, 64) {
		return apperr.New(apperr.Invalid, "invalid profile name %q: use letters, digits, '-', '_' or '.'", name)
	}
	return nil
}
