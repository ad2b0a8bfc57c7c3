package sessions

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/hooks"
)

// The transcript primitives compaction composes inside its own transaction.

// MessagesTx reads a session's active transcript inside tx.
func (s *Service) MessagesTx(ctx context.Context, tx *db.Tx, id string) ([]Message, error) {
	var out []Message
	err := tx.G.WithContext(ctx).Raw(`SELECT * FROM messages WHERE session_id = ? AND active = 1 ORDER BY COALESCE(pos, id), id`, id).Scan(&out).Error
	return out, err
}

// GetTx reads one session inside tx.
func (s *Service) GetTx(ctx context.Context, tx *db.Tx, id string) (Session, error) {
	return getTx(ctx, tx, id)
}

// DeactivateTx marks messages of a session inactive (kept for audit) and
// returns how many were active; a caller that needs all of them to have been
// active treats a smaller count as "the transcript changed underneath".
func (s *Service) DeactivateTx(ctx context.Context, tx *db.Tx, sessionID string, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	res := tx.G.WithContext(ctx).Exec(`UPDATE messages SET active = 0 WHERE session_id = ? AND active = 1 AND id IN (SELECT value FROM json_each(?))`,
		sessionID, int64sJSON(ids))
	return res.RowsAffected, res.Error
}

// InsertAtTx inserts an active message at position pos of a session's
// transcript (counters are not touched: call RecountTx once at the end).
func (s *Service) InsertAtTx(ctx context.Context, tx *db.Tx, sessionID string, m NewMessage, pos *float64) (Message, error) {
	if err := validateOneOf("role", m.Role, Roles); err != nil {
		return Message{}, err
	}
	if m.TokenCount <= 0 {
		m.TokenCount = EstimateTokens(m.Content)
	}
	out := Message{SessionID: sessionID, Role: m.Role, Content: m.Content, SentContent: m.SentContent, ToolName: m.ToolName,
		ToolCallID: m.ToolCallID, TokenCount: m.TokenCount, CreatedAt: db.At(tx.Now), Active: true, Pos: pos}
	err := tx.G.WithContext(ctx).Raw(`INSERT INTO messages (session_id, role, content, sent_content, tool_name, tool_call_id, token_count, created_at, active, pos)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?) RETURNING id`, sessionID, m.Role, m.Content, m.SentContent, m.ToolName, m.ToolCallID,
		m.TokenCount, db.Ms(tx.Now), pos).Scan(&out.ID).Error
	return out, err
}

// RecountTx recomputes a session's counters from its active messages.
func (s *Service) RecountTx(ctx context.Context, tx *db.Tx, sessionID string) error {
	return tx.G.WithContext(ctx).Exec(`UPDATE sessions SET
		message_count = (SELECT COUNT(*) FROM messages WHERE session_id = sessions.id AND active = 1),
		token_count = (SELECT COALESCE(SUM(token_count), 0) FROM messages WHERE session_id = sessions.id AND active = 1),
		last_activity_at = ?
		WHERE id = ?`, db.Ms(tx.Now), sessionID).Error
}

// CreateTx is Create inside the caller's transaction (the parent must exist).
func (s *Service) CreateTx(ctx context.Context, tx *db.Tx, p CreateParams) (Session, error) {
	out := Session{ID: p.ID, Source: p.Source, Title: p.Title, Profile: s.profile, Relation: p.Relation,
		StartedAt: db.At(tx.Now), LastActivityAt: db.At(tx.Now), Pinned: p.Pinned,
		Platform: p.Platform, SenderID: p.SenderID, SenderName: p.SenderName}
	if p.ParentID != "" {
		out.ParentSessionID = &p.ParentID
	}
	if err := insertSessionTx(ctx, tx, &out); err != nil {
		return Session{}, err
	}
	return out, nil
}

// EndTx ends a live session inside tx; it is rejected when already ended.
func (s *Service) EndTx(ctx context.Context, tx *db.Tx, id, reason string) error {
	res := tx.G.WithContext(ctx).Exec(`UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL`, db.Ms(tx.Now), reason, id)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return apperr.New(apperr.Rejected, "session %s has already ended", id)
	}
	return nil
}

func int64sJSON(ids []int64) string {
	b := make([]byte, 0, len(ids)*8+2)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Appendf(b, "%d", id)
	}
	return string(append(b, ']'))
}

// Reset records that /new replaced session old by next in the same
// conversation: it fires on_session_reset with both ids.
func (s *Service) Reset(ctx context.Context, old, next, platform string) error {
	return s.db.InTx(ctx, func(tx *db.Tx) error {
		if s.bus == nil {
			return apperr.New(apperr.Internal, "session store of profile %s has no hook bus", s.profile)
		}
		if err := s.MarkStartTx(ctx, tx, next, StartClear); err != nil {
			return err
		}
		_, err := s.bus.EnqueueTx(ctx, tx, hooks.OnSessionReset, hooks.SessionReset{OldSessionID: old, SessionID: next,
			NewSessionID: next, Platform: platform, Reason: "new"})
		return err
	})
}

// InsertManyAtTx inserts messages in order with one statement (the rows go
// through json_each, so no count meets the bound-parameter limit). pos[i]
// is the position of msgs[i], nil for "its id". Counters are not touched.
func (s *Service) InsertManyAtTx(ctx context.Context, tx *db.Tx, sessionID string, msgs []NewMessage, pos []*float64) error {
	if len(msgs) == 0 {
		return nil
	}
	type row struct {
		Role       string   `json:"r"`
		Content    string   `json:"c"`
		Sent       *string  `json:"s"`
		ToolName   string   `json:"tn"`
		ToolCallID string   `json:"ti"`
		Tokens     int64    `json:"k"`
		Pos        *float64 `json:"p"`
	}
	rows := make([]row, len(msgs))
	for i, m := range msgs {
		if err := validateOneOf("role", m.Role, Roles); err != nil {
			return err
		}
		if m.TokenCount <= 0 {
			m.TokenCount = EstimateTokens(m.Content)
		}
		rows[i] = row{Role: m.Role, Content: m.Content, Sent: m.SentContent, ToolName: m.ToolName, ToolCallID: m.ToolCallID, Tokens: m.TokenCount}
		if pos != nil {
			rows[i].Pos = pos[i]
		}
	}
	raw, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	return tx.G.WithContext(ctx).Exec(`INSERT INTO messages (session_id, role, content, sent_content, tool_name, tool_call_id, token_count, created_at, active, pos)
		SELECT ?, value ->> '$.r', value ->> '$.c', value ->> '$.s', value ->> '$.tn', value ->> '$.ti', value ->> '$.k', ?, 1, value ->> '$.p'
		FROM json_each(?) ORDER BY key`, sessionID, db.Ms(tx.Now), string(raw)).Error
}

// Start sources: why a session's next turn begins its context anew (Claude
// Code's SessionStart source). A session's first turn is StartStartup
// unless marked otherwise.
const (
	StartStartup = "startup"
	StartClear   = "clear"   // the first turn of a session /new started
	StartCompact = "compact" // the first turn after a compaction rewrote it
)

// MarkStartTx records why id's next turn begins its context anew (StartClear,
// StartCompact), inside the caller's transaction.
func (s *Service) MarkStartTx(ctx context.Context, tx *db.Tx, id, source string) error {
	return tx.G.WithContext(ctx).Exec(`UPDATE sessions SET start_source = ? WHERE id = ?`, source, id).Error
}

// StartSource is the mark MarkStartTx left on id, "" when none.
func (s *Service) StartSource(ctx context.Context, id string) (string, error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	v, err := s.db.Row(ctx, `SELECT start_source FROM sessions WHERE id = ?`, id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", apperr.New(apperr.NotFound, "session %s not found", id)
	case err != nil:
		return "", fmt.Errorf("start source of %s: %w", id, err)
	}
	return vStr(v[0]), nil
}

// ClearStartTx removes the mark once the turn it was for is stored.
func (s *Service) ClearStartTx(ctx context.Context, tx *db.Tx, id string) error {
	return tx.G.WithContext(ctx).Exec(`UPDATE sessions SET start_source = '' WHERE id = ? AND start_source <> ''`, id).Error
}
