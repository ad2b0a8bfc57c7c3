package sessions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/samber/lo"

	"atrium/backend/apperr"
	"atrium/backend/db"
)

// A conversation, as people see it: a compression chain is one row (its
// newest part), delegate children (subagents) are nested under their parent
// rather than listed beside it, and branch children are rows of their own
// that say where they branched from.

// Conversation is one row of the conversation list.
type Conversation struct {
	Session                // the newest part of the chain
	Parts         int      `json:"parts"`          // 1 for a session that continues nothing
	ChainIDs      []string `json:"chain_ids"`      // first part to newest
	TotalMessages int64    `json:"total_messages"` // over every part
	TotalTokens   int64    `json:"total_tokens"`
	Subagents     int      `json:"subagents"`              // delegate children of any part, in the same view
	OriginTitle   string   `json:"origin_title,omitempty"` // the parent's title, for a branch or a subagent
}

// ConversationFilter narrows Conversations.
type ConversationFilter struct {
	Rule      Rule
	Subagents bool   // list delegate children as rows too
	Limit     int    // default 50, at most 1000
	Cursor    string // from a previous page
}

// ConversationPage is one page of Conversations.
type ConversationPage struct {
	Rows []Conversation `json:"rows"`
	Next string         `json:"next,omitempty"`
}

// nested hides a subagent whose parent is shown in the same view (so it
// sits under its parent, counted, instead of beside it).
const nested = ` AND NOT EXISTS (SELECT 1 FROM sessions sr JOIN sessions sp ON sp.id = sr.parent_session_id
	WHERE sr.id = COALESCE(s.chain_root, s.id) AND sr.relation = 'delegate'
	AND (sp.trashed_at IS NULL) = (s.trashed_at IS NULL) AND sp.archived = s.archived)`

// where is the filter as SQL over sessions aliased s.
func (f ConversationFilter) where(ctx context.Context, s *Service) (string, []any, error) {
	w, args, err := s.ruleWhere(ctx, s.db.Query, f.Rule, s.db.Now(), true)
	if err == nil && !f.Subagents {
		w += nested
	}
	return w, args, err
}

// Conversations lists conversations, newest activity first (in the trash,
// newest deletion first), keyset-paged.
func (s *Service) Conversations(ctx context.Context, f ConversationFilter) (ConversationPage, error) {
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = 50
	case limit > 1000:
		limit = 1000
	}
	where, args, err := f.where(ctx, s)
	if err != nil {
		return ConversationPage{}, fmt.Errorf("list conversations: %w", err)
	}
	col := orderColumn(f.Rule.Scope)
	if f.Cursor != "" {
		c, err := decodeCursor(f.Cursor)
		if err != nil {
			return ConversationPage{}, err
		}
		where += ` AND (s.` + col + ` < ? OR (s.` + col + ` = ? AND s.id < ?))`
		args = append(args, c.At, c.At, c.ID)
	}
	rows, err := eachSession(ctx, s.db.Each, `SELECT `+sessionColsS+` FROM sessions s WHERE `+where+` ORDER BY s.`+col+` DESC, s.id DESC`+db.Limit(limit+1),
		args, limit+1, nil)
	if err != nil {
		return ConversationPage{}, fmt.Errorf("list conversations: %w", err)
	}
	p := ConversationPage{}
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[limit-1]
		at := last.LastActivityAt.Time
		if col == "trashed_at" && last.TrashedAt != nil {
			at = last.TrashedAt.Time
		}
		raw, _ := json.Marshal(cursor{At: db.Ms(at), ID: last.ID})
		p.Next = base64.RawURLEncoding.EncodeToString(raw)
	}
	if p.Rows, err = s.annotate(ctx, rows); err != nil {
		return ConversationPage{}, err
	}
	return p, nil
}

// CountConversations is how many rows Conversations would list.
func (s *Service) CountConversations(ctx context.Context, f ConversationFilter) (int64, error) {
	if f.Rule.Empty() {
		return s.countHeads(ctx, f)
	}
	where, args, err := f.where(ctx, s)
	if err != nil {
		return 0, fmt.Errorf("count conversations: %w", err)
	}
	var n int64
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT count(*) FROM sessions s WHERE `+where, args...).Scan(&n).Error; err != nil {
		return 0, fmt.Errorf("count conversations: %w", err)
	}
	return n, nil
}

// countHeads counts the rows of a whole scope (the window's title) from the
// few rows that have a parent, instead of testing every row: every session,
// less the parts a compression chain continues, less the nested subagents.
func (s *Service) countHeads(ctx context.Context, f ConversationFilter) (int64, error) {
	scope := scopeWhere(f.Rule.Scope, "s")
	var continued, nestedN int64
	g := s.db.Read.WithContext(ctx)
	all, err := s.scopeCount(ctx, f.Rule.Scope)
	if err == nil {
		// CROSS JOIN keeps this order: the few children first, not every row.
		err = g.Raw(`SELECT count(DISTINCT s.id) FROM sessions c INDEXED BY sessions_parent CROSS JOIN sessions s ON s.id = c.parent_session_id
			WHERE c.parent_session_id IS NOT NULL AND c.relation = 'compression' AND ` + scope).Scan(&continued).Error
	}
	if err == nil && !f.Subagents {
		err = g.Raw(`SELECT count(*) FROM sessions s INDEXED BY sessions_parent WHERE s.parent_session_id IS NOT NULL AND ` + scope + `
			AND NOT EXISTS (SELECT 1 FROM sessions nx WHERE nx.parent_session_id = s.id AND nx.relation = 'compression')` +
			strings.Replace(nested, "AND NOT EXISTS", "AND EXISTS", 1)).Scan(&nestedN).Error
	}
	if err != nil {
		return 0, fmt.Errorf("count conversations: %w", err)
	}
	return all - continued - nestedN, nil
}

// ConversationIDs are the ids of every row Conversations would list, in its
// order ("select all" in the conversation view).
func (s *Service) ConversationIDs(ctx context.Context, f ConversationFilter) ([]string, error) {
	where, args, err := f.where(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("conversation ids: %w", err)
	}
	ids := []string{}
	col := orderColumn(f.Rule.Scope)
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT s.id FROM sessions s WHERE `+where+` ORDER BY s.`+col+` DESC, s.id DESC`, args...).
		Scan(&ids).Error; err != nil {
		return nil, fmt.Errorf("conversation ids: %w", err)
	}
	return ids, nil
}

// Conversation is the conversation that session id belongs to, as a row:
// the newest part of its chain.
func (s *Service) Conversation(ctx context.Context, id string) (Conversation, error) {
	chain, err := s.Lineage(ctx, id)
	if err != nil {
		return Conversation{}, err
	}
	rows, err := s.annotate(ctx, chain[len(chain)-1:])
	if err != nil {
		return Conversation{}, err
	}
	return rows[0], nil
}

// Subagents are the delegate children of every part of id's conversation,
// as conversations, newest first, those in the trash left out unless the
// parent is there too.
func (s *Service) Subagents(ctx context.Context, id string) ([]Conversation, error) {
	parent, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	key := id
	if parent.ChainRoot != nil {
		key = *parent.ChainRoot
	}
	var rows []Session
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT s.* FROM sessions s JOIN sessions r ON r.id = COALESCE(s.chain_root, s.id)
		WHERE r.relation = 'delegate' AND (s.trashed_at IS NULL) = ?
		AND r.parent_session_id IN (SELECT x.id FROM sessions x WHERE x.id = ? OR x.chain_root = ?)
		AND NOT EXISTS (SELECT 1 FROM sessions nx WHERE nx.parent_session_id = s.id AND nx.relation = 'compression')
		ORDER BY s.last_activity_at DESC, s.id DESC`, !parent.Trashed(), key, key).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("subagents of %s: %w", id, err)
	}
	return s.annotate(ctx, rows)
}

// annotate adds to each row its chain (parts, totals), its subagent count and
// the title of its origin, in three set-based queries for the whole page.
func (s *Service) annotate(ctx context.Context, rows []Session) ([]Conversation, error) {
	out := make([]Conversation, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	keyOf := func(r Session) string {
		if r.ChainRoot != nil {
			return *r.ChainRoot
		}
		return r.ID
	}
	keys := lo.Uniq(lo.Map(rows, func(r Session, _ int) string { return keyOf(r) }))
	g := s.db.Read.WithContext(ctx)
	links, err := eachSession(ctx, s.db.Each, `SELECT `+sessionCols+` FROM sessions
		WHERE id IN (SELECT value FROM json_each(?)) OR chain_root IN (SELECT value FROM json_each(?))`, []any{jsonArray(keys), jsonArray(keys)}, len(keys), nil)
	if err != nil {
		return nil, fmt.Errorf("conversation parts: %w", err)
	}
	chains := map[string][]Session{}
	for _, l := range links {
		chains[keyOf(l)] = append(chains[keyOf(l)], l)
	}
	var subs []struct {
		K string
		N int
	}
	if err := g.Raw(`SELECT COALESCE(l.chain_root, l.id) AS k, count(*) AS n FROM sessions c JOIN sessions l ON l.id = c.parent_session_id
		WHERE c.relation = 'delegate' AND (c.trashed_at IS NULL) = (l.trashed_at IS NULL) AND c.archived = l.archived
		AND (l.id IN (SELECT value FROM json_each(?)) OR l.chain_root IN (SELECT value FROM json_each(?)))
		GROUP BY k`, jsonArray(keys), jsonArray(keys)).Scan(&subs).Error; err != nil {
		return nil, fmt.Errorf("conversation subagents: %w", err)
	}
	subCount := lo.SliceToMap(subs, func(x struct {
		K string
		N int
	}) (string, int) {
		return x.K, x.N
	})
	// The origin of a row is the parent of its chain's first part.
	origins := map[string]string{}
	for _, k := range keys {
		for _, l := range chains[k] {
			if l.ID == k && l.ParentSessionID != nil && l.Relation != RelationCompression {
				origins[k] = *l.ParentSessionID
			}
		}
	}
	var titles []struct{ ID, Title string }
	if len(origins) > 0 {
		if err := g.Raw(`SELECT id, title FROM sessions WHERE id IN (SELECT value FROM json_each(?))`, jsonArray(lo.Values(origins))).
			Scan(&titles).Error; err != nil {
			return nil, fmt.Errorf("conversation origins: %w", err)
		}
	}
	titleOf := lo.SliceToMap(titles, func(t struct{ ID, Title string }) (string, string) { return t.ID, t.Title })
	for i, r := range rows {
		k := keyOf(r)
		chain := orderChain(chains[k])
		c := Conversation{Session: r, Parts: len(chain), Subagents: subCount[k]}
		if len(chain) == 0 {
			chain = []Session{r}
			c.Parts = 1
		}
		for _, l := range chain {
			c.ChainIDs = append(c.ChainIDs, l.ID)
			c.TotalMessages += l.MessageCount
			c.TotalTokens += l.TokenCount
		}
		if o, ok := origins[k]; ok {
			c.OriginTitle = titleOf[o]
			if c.OriginTitle == "" {
				c.OriginTitle = "Untitled session"
			}
		}
		out[i] = c
	}
	return out, nil
}

// Rotation is what a compaction that continued a conversation in a new
// session recorded: the divider between two parts.
type Rotation struct {
	SessionID     string  `gorm:"column:session_id" json:"session_id"`
	FromSessionID string  `gorm:"column:from_session_id" json:"from_session_id"`
	Kind          string  `gorm:"column:kind" json:"kind"`
	Reason        string  `gorm:"column:reason" json:"reason"`
	BeforeTokens  *int64  `gorm:"column:before_tokens" json:"before_tokens"`
	AfterTokens   *int64  `gorm:"column:after_tokens" json:"after_tokens"`
	CreatedAt     db.Time `gorm:"column:created_at" json:"created_at"`
}

// RecordRotationTx records a rotation inside the compaction's transaction.
func (s *Service) RecordRotationTx(ctx context.Context, tx *db.Tx, r Rotation) error {
	return tx.G.WithContext(ctx).Exec(`INSERT OR REPLACE INTO session_rotations (session_id, from_session_id, kind, reason, before_tokens, after_tokens, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, r.SessionID, r.FromSessionID, r.Kind, r.Reason, r.BeforeTokens, r.AfterTokens, db.Ms(tx.Now)).Error
}

// Chain is a whole conversation to read as one scroll: its parts, first to
// newest, their active messages in order, and the rotation between each
// part and the next (nil where none was recorded).
type Chain struct {
	Parts     []Session
	Messages  [][]Message // per part
	Rotations []*Rotation // Rotations[i] led into Parts[i]; nil for the first part
}

// ChainOf reads the conversation session id belongs to.
func (s *Service) ChainOf(ctx context.Context, id string) (Chain, error) {
	parts, err := s.Lineage(ctx, id)
	if err != nil {
		return Chain{}, err
	}
	ids := lo.Map(parts, func(p Session, _ int) string { return p.ID })
	g := s.db.Read.WithContext(ctx)
	var msgs []Message
	if err := g.Raw(`SELECT * FROM messages WHERE session_id IN (SELECT value FROM json_each(?)) AND active = 1 ORDER BY COALESCE(pos, id), id`,
		jsonArray(ids)).Scan(&msgs).Error; err != nil {
		return Chain{}, fmt.Errorf("conversation of %s: %w", id, err)
	}
	var rots []Rotation
	if err := g.Raw(`SELECT * FROM session_rotations WHERE session_id IN (SELECT value FROM json_each(?))`, jsonArray(ids)).Scan(&rots).Error; err != nil {
		return Chain{}, fmt.Errorf("conversation of %s: %w", id, err)
	}
	byPart := lo.GroupBy(msgs, func(m Message) string { return m.SessionID })
	byRot := lo.KeyBy(rots, func(r Rotation) string { return r.SessionID })
	out := Chain{Parts: parts}
	for i, p := range parts {
		out.Messages = append(out.Messages, byPart[p.ID])
		var rot *Rotation
		if r, ok := byRot[p.ID]; ok && i > 0 {
			rot = &r
		}
		out.Rotations = append(out.Rotations, rot)
	}
	return out, nil
}

// maxTitle bounds a title, in characters.
const maxTitle = 300

// Rename sets a session's title (its search index follows). A session in the
// trash must be restored first.
func (s *Service) Rename(ctx context.Context, id, title string) (Session, error) {
	if err := ValidateID(id); err != nil {
		return Session{}, err
	}
	title = strings.TrimSpace(title)
	if err := validateTitle(title); err != nil {
		return Session{}, err
	}
	var out Session
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		cur, err := getTx(ctx, tx, id)
		if err != nil {
			return err
		}
		if cur.Trashed() {
			return apperr.New(apperr.Rejected, "session %s is in the trash; restore it first", id)
		}
		if err := tx.G.WithContext(ctx).Exec(`UPDATE sessions SET title = ? WHERE id = ? AND title <> ?`, title, id, title).Error; err != nil {
			return err
		}
		out, err = getTx(ctx, tx, id)
		return err
	})
	if err != nil {
		return Session{}, fmt.Errorf("rename session %s: %w", id, err)
	}
	return out, nil
}

func validateTitle(title string) error {
	if len([]rune(title)) > maxTitle {
		return apperr.New(apperr.Invalid, "title is %d characters long; at most %d", len([]rune(title)), maxTitle)
	}
	if strings.ContainsFunc(title, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return apperr.New(apperr.Invalid, "title contains a control character or a line break")
	}
	return nil
}
