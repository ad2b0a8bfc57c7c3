package sessions

import (
	"context"
	"fmt"

	"atrium/backend/apperr"
	"atrium/backend/db"
)

// Undone is what Undo took back.
type Undone struct {
	Exchanges int    // how many of the person's messages, with what followed each
	Messages  int    // how many messages in all
	LastText  string // the earliest message taken back, as the person wrote it
}

// Undo takes back a session's last n exchanges (the familiar /undo N): its
// n-th last user message and every message after it leave the transcript
// the model reads; they stay in the store, inactive, as messages a
// compaction folded do (for audit). The counters follow. A session with
// fewer user messages takes back what it has; one with none, or that has
// ended or is in the trash, is refused.
func (s *Service) Undo(ctx context.Context, id string, n int) (Undone, error) {
	if err := ValidateID(id); err != nil {
		return Undone{}, err
	}
	if n < 1 {
		return Undone{}, apperr.New(apperr.Invalid, "undo takes back one exchange or more, not %d", n)
	}
	var out Undone
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		cur, err := getTx(ctx, tx, id)
		if err != nil {
			return err
		}
		switch {
		case cur.Trashed():
			return apperr.New(apperr.Rejected, "session %s is in the trash; restore it first", id)
		case cur.Ended():
			return apperr.New(apperr.Rejected, "session %s has ended (%s)", id, cur.EndReason)
		}
		// The n-th last of the person's messages (fewer: the first), in
		// the transcript's order; it and everything after it go.
		var users []struct {
			ID      int64
			O       float64
			Content string
		}
		if err := tx.G.WithContext(ctx).Raw(`SELECT id, COALESCE(pos, id) AS o, content FROM messages
			WHERE session_id = ? AND active = 1 AND role = 'user' ORDER BY o DESC, id DESC LIMIT ?`, id, n).Scan(&users).Error; err != nil {
			return err
		}
		if len(users) == 0 {
			return apperr.New(apperr.Rejected, "nothing to undo: the session has no message of yours")
		}
		from := users[len(users)-1]
		res := tx.G.WithContext(ctx).Exec(`UPDATE messages SET active = 0 WHERE session_id = ? AND active = 1
			AND (COALESCE(pos, id) > ? OR (COALESCE(pos, id) = ? AND id >= ?))`, id, from.O, from.O, from.ID)
		if res.Error != nil {
			return res.Error
		}
		out.Exchanges, out.Messages, out.LastText = len(users), int(res.RowsAffected), from.Content
		return s.RecountTx(ctx, tx, id)
	})
	if err != nil {
		return Undone{}, fmt.Errorf("undo in session %s: %w", id, err)
	}
	return out, nil
}

// Spoken reports whether a message of the person ever came to the session,
// taken back or not: a session whose only exchange was undone has started
// all the same (on_session_start is not told of it again).
func (s *Service) Spoken(ctx context.Context, id string) (bool, error) {
	if err := ValidateID(id); err != nil {
		return false, err
	}
	v, err := s.db.Row(ctx, `SELECT EXISTS(SELECT 1 FROM messages WHERE session_id = ? AND role = 'user')`, id)
	if err != nil {
		return false, fmt.Errorf("messages of %s: %w", id, err)
	}
	return vInt(v[0]) == 1, nil
}
