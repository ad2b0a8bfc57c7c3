// Package sessions is Atrium's session store: sessions, messages, lineage,
// search, and every path that deletes or archives a session. Each deleting
// path queues on_session_delete in its own transaction; the hook fires after
// commit, once, with every removed row.
package sessions

import (
	"strings"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/limits"
	"atrium/backend/llm"
)

// Sources a session can come from.
var Sources = []string{"cli", "desktop", "dashboard", "gateway", "cron", "subagent", "tool"}

// Relations of a child to its parent.
const (
	RelationDelegate    = "delegate"
	RelationBranch      = "branch"
	RelationCompression = "compression"
)

// Who archived a session.
const (
	ArchivedByUser     = "user"
	ArchivedByAuto     = "auto"
	ArchivedByAdoption = "adoption"
)

// SummaryPrefix starts a system message that holds the summary of the
// messages a compaction folded (compaction.SummaryPrefix is this one).
const SummaryPrefix = "[compaction summary]"

// Roles of a message.
var Roles = []string{"system", "user", "assistant", "tool"}

// Session is one row of the store.
type Session struct {
	PK              int64    `gorm:"column:pk;primaryKey" json:"-"`
	ID              string   `gorm:"column:id" json:"id"`
	Source          string   `gorm:"column:source" json:"source"`
	Title           string   `gorm:"column:title" json:"title"`
	Profile         string   `gorm:"column:profile" json:"profile"`
	ParentSessionID *string  `gorm:"column:parent_session_id" json:"parent_session_id"`
	Relation        string   `gorm:"column:relation" json:"relation"`
	StartedAt       db.Time  `gorm:"column:started_at" json:"started_at"`
	EndedAt         *db.Time `gorm:"column:ended_at" json:"ended_at"`
	EndReason       string   `gorm:"column:end_reason" json:"end_reason"`
	LastActivityAt  db.Time  `gorm:"column:last_activity_at" json:"last_activity_at"`
	Archived        bool     `gorm:"column:archived" json:"archived"`
	ArchivedAt      *db.Time `gorm:"column:archived_at" json:"archived_at"`
	ArchivedBy      string   `gorm:"column:archived_by" json:"archived_by"`
	Pinned          bool     `gorm:"column:pinned" json:"pinned"`
	MessageCount    int64    `gorm:"column:message_count" json:"message_count"`
	TokenCount      int64    `gorm:"column:token_count" json:"token_count"`
	Platform        string   `gorm:"column:platform" json:"platform"`
	SenderID        string   `gorm:"column:sender_id" json:"sender_id"`
	SenderName      string   `gorm:"column:sender_name" json:"sender_name"`
	TrashedAt       *db.Time `gorm:"column:trashed_at" json:"trashed_at"`
	TrashBatch      string   `gorm:"column:trash_batch" json:"-"`
	TrashReason     string   `gorm:"column:trash_reason" json:"trash_reason,omitempty"`
	TrashReported   bool     `gorm:"column:trash_reported" json:"-"`
	ChainRoot       *string  `gorm:"column:chain_root" json:"chain_root,omitempty"` // first part of its compression chain; nil if it continues none
}

// Trashed reports whether the session is in the trash.
func (s Session) Trashed() bool { return s.TrashedAt != nil }

// Where a session lives, for people: one of the scopes.
func (s Session) Where() string {
	switch {
	case s.Trashed():
		return ScopeTrash
	case s.Archived:
		return ScopeArchived
	}
	return ScopeActive
}

// TableName pins the gorm table.
func (Session) TableName() string { return "sessions" }

// Ended reports whether the session has ended.
func (s Session) Ended() bool { return s.EndedAt != nil }

// Message is one transcript entry.
type Message struct {
	ID          int64    `gorm:"column:id;primaryKey" json:"id"`
	SessionID   string   `gorm:"column:session_id" json:"session_id"`
	Role        string   `gorm:"column:role" json:"role"`
	Content     string   `gorm:"column:content" json:"content"`
	SentContent *string  `gorm:"column:sent_content" json:"sent_content,omitempty"`
	ToolName    string   `gorm:"column:tool_name" json:"tool_name,omitempty"`
	ToolCallID  string   `gorm:"column:tool_call_id" json:"tool_call_id,omitempty"`
	TokenCount  int64    `gorm:"column:token_count" json:"token_count"`
	CreatedAt   db.Time  `gorm:"column:created_at" json:"created_at"`
	Active      bool     `gorm:"column:active" json:"active"`
	Pos         *float64 `gorm:"column:pos" json:"-"`
}

// Position is the message's place in its transcript.
func (m Message) Position() float64 {
	if m.Pos != nil {
		return *m.Pos
	}
	return float64(m.ID)
}

// TableName pins the gorm table.
func (Message) TableName() string { return "messages" }

// wellFormedID reports whether id is 1-maxLen bytes of letters, digits, '_',
// '.' and '-', starting with a letter or a digit, without "..". Every read
// by id checks it: a loop, where a regular expression cost a transcript
// read 2%.
func wellFormedID(id string, maxLen int) bool {
	if len(id) == 0 || len(id) > maxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case i > 0 && (c == '_' || c == '-'):
		case i > 0 && c == '.':
			if id[i-1] == '.' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// ValidateID refuses ids that could address a file outside the sessions
// folder or confuse a terminal: path separators, "..", control characters,
// empty or over-long ids.
func ValidateID(id string) error {
	if !wellFormedID(id, 128) {
		return apperr.New(apperr.Invalid, "invalid session id %s: use 1-128 letters, digits, '-', '_' or '.', no '..'", limits.Echo(id))
	}
	return nil
}

// ValidateIDs validates every id and drops duplicates, keeping first-seen order.
func ValidateIDs(ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, apperr.New(apperr.Invalid, "no session id given")
	}
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if err := ValidateID(id); err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

func validateOneOf(field, v string, allowed []string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return apperr.New(apperr.Invalid, "invalid %s %q (one of %s)", field, v, strings.Join(allowed, ", "))
}

// EstimateTokens is llm.EstimateTokens, Atrium's one token estimator (about
// four bytes per token; see there how rough it is).
func EstimateTokens(text string) int64 { return int64(llm.EstimateTokens(text)) }
