package sessions

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/hooks"
)

// Options configure a Service.
type Options struct {
	Profile     string // the profile that owns the store ("default" for the root home)
	SessionsDir string // the profile's sessions/ folder, for sidecar files
	Logger      *slog.Logger
	// TrashDays is how long deleted sessions stay restorable in the trash
	// (sessions.trash_days); nil means DefaultTrashDays, 0 deletes at once.
	TrashDays *int
	// TrashAutomatic sends automatic deletes (empty sweep, ghost prune,
	// retention prune) to the trash too (sessions.trash_automatic); nil
	// means true.
	TrashAutomatic *bool
	// Trash, when set, gives sessions.trash_days and trash_automatic as
	// they are at each operation that needs them (config.yaml changed while
	// the process runs applies to the next delete), instead of TrashDays and
	// TrashAutomatic. A negative days is DefaultTrashDays.
	Trash func() (days int, automatic bool)
	// SearchTimeout bounds one Search (default sessions.SearchTimeout).
	SearchTimeout time.Duration
	// ManualIndex leaves the search-index queue to IndexPending calls (tests
	// that look at the queue); by default a background task indexes it.
	ManualIndex bool
}

// DefaultTrashDays is sessions.trash_days when unset.
const DefaultTrashDays = 30

// Service owns the session store. Public methods own their transaction;
// the *Tx variants run inside a caller's.
type Service struct {
	db          *db.DB
	bus         *hooks.Bus
	profile     string
	sessionsDir string
	log         *slog.Logger
	trashNow    func() (int, bool) // Options.Trash, or TrashDays and TrashAutomatic
	background  bool               // background tasks run IndexPending's work
	sidecars    *sidecarState      // shared by the store's services with this sessions folder; nil without one

	searchTimeout time.Duration
}

// NewService builds the store service. bus may be nil only for a store that is
// written to by adoption alone (the target of a profile move).
func NewService(d *db.DB, bus *hooks.Bus, opts Options) *Service {
	p := opts.Profile
	if p == "" {
		p = "default"
	}
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	trash := opts.Trash
	if trash == nil {
		days, auto := -1, true // -1: DefaultTrashDays
		if opts.TrashDays != nil {
			days = *opts.TrashDays
		}
		if opts.TrashAutomatic != nil {
			auto = *opts.TrashAutomatic
		}
		trash = func() (int, bool) { return days, auto }
	}
	s := &Service{db: d, bus: bus, profile: p, sessionsDir: opts.SessionsDir, log: lg, trashNow: trash, searchTimeout: opts.SearchTimeout}
	if !opts.ManualIndex {
		s.background = true
		s.db.AddTask("fts-index", indexDelay, s.indexNew)
		s.db.AddQuietTask("fts-gone", indexDelay, goneMaxWait, s.removeGone)
	}
	if s.sessionsDir != "" {
		// Every service of the store with this folder shares the task's
		// state; the first one registers the task.
		name := "sidecars " + s.sessionsDir
		s.sidecars = s.db.Shared(name, func() any { return &sidecarState{look: true, done: map[string]bool{}} }).(*sidecarState)
		s.db.AddTask(name, sidecarDelay, s.removePendingSidecars)
	}
	return s
}

// TrashDays is how long deleted sessions stay restorable (0: deleted at once).
func (s *Service) TrashDays() int {
	days, _ := s.trash()
	return days
}

// trash is trash_days and trash_automatic now: an operation reads them once.
func (s *Service) trash() (days int, automatic bool) {
	days, automatic = s.trashNow()
	if days < 0 {
		days = DefaultTrashDays
	}
	return days, automatic
}

// Profile is the profile that owns this store.
func (s *Service) Profile() string { return s.profile }

// SessionsDir is the profile's sessions/ folder.
func (s *Service) SessionsDir() string { return s.sessionsDir }

// DB exposes the store for composition by sibling services (receipts).
func (s *Service) DB() *db.DB { return s.db }

// CreateParams describe a new session.
type CreateParams struct {
	ID       string // optional; a UUIDv7 is made when empty
	Title    string
	Source   string // default "cli"
	ParentID string
	Relation string // required with ParentID
	Pinned   bool
	// Where a gateway session comes from (issue #13); empty for local ones.
	Platform   string
	SenderID   string
	SenderName string
	// A delegate child's task as the subagent was given it, whole
	// (subagent_start's child_goal; the title when empty: a title is one
	// line of at most 300 characters), and the parent's turn that handed
	// it over (parent_turn_id).
	Goal         string
	ParentTurnID string
}

// Create starts a session.
func (s *Service) Create(ctx context.Context, p CreateParams) (Session, error) {
	if p.Source == "" {
		p.Source = "cli"
	}
	if err := validateOneOf("source", p.Source, Sources); err != nil {
		return Session{}, err
	}
	if p.Platform != "" && !namePattern.MatchString(p.Platform) {
		return Session{}, apperr.New(apperr.Invalid, "invalid platform %q", p.Platform)
	}
	if len(p.SenderID) > 256 || len([]rune(p.SenderName)) > 256 || strings.ContainsFunc(p.SenderID+p.SenderName, func(r rune) bool { return r < 0x20 }) {
		return Session{}, apperr.New(apperr.Invalid, "invalid sender: at most 256 characters, no control characters")
	}
	if p.ID == "" {
		p.ID = uuid.Must(uuid.NewV7()).String()
	} else if err := ValidateID(p.ID); err != nil {
		return Session{}, err
	}
	p.Title = strings.TrimSpace(p.Title)
	if err := validateTitle(p.Title); err != nil {
		return Session{}, err
	}
	switch {
	case p.ParentID == "" && p.Relation != "":
		return Session{}, apperr.New(apperr.Invalid, "relation %q needs a parent session", p.Relation)
	case p.ParentID != "":
		if err := ValidateID(p.ParentID); err != nil {
			return Session{}, err
		}
		if err := validateOneOf("relation", p.Relation, []string{RelationDelegate, RelationBranch, RelationCompression}); err != nil {
			return Session{}, err
		}
	}
	var out Session
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		if p.ParentID != "" {
			if _, err := getTx(ctx, tx, p.ParentID); err != nil {
				return fmt.Errorf("parent: %w", err)
			}
		}
		out = Session{ID: p.ID, Source: p.Source, Title: p.Title, Profile: s.profile, Relation: p.Relation,
			StartedAt: db.At(tx.Now), LastActivityAt: db.At(tx.Now), Pinned: p.Pinned,
			Platform: p.Platform, SenderID: p.SenderID, SenderName: p.SenderName}
		if p.ParentID != "" {
			out.ParentSessionID = &p.ParentID
		}
		if err := insertSessionTx(ctx, tx, &out); err != nil {
			return err
		}
		if p.Relation == RelationDelegate && s.bus != nil {
			// A delegate child is a subagent's session: its task starts.
			_, err := s.bus.EnqueueTx(ctx, tx, hooks.SubagentStart, hooks.SubagentStartPayload{ParentSessionID: p.ParentID,
				ParentTurnID: hooks.StrOrNil(p.ParentTurnID), ChildSessionID: out.ID, ChildSubagentID: out.ID,
				ChildGoal: cmp.Or(p.Goal, out.Title), Profile: s.profile})
			return err
		}
		return nil
	})
	if err != nil {
		return Session{}, fmt.Errorf("create session: %w", err)
	}
	return out, nil
}

// insertSessionTx inserts a new session row (the columns a new session
// sets; the rest take their defaults) and sets its pk.
func insertSessionTx(ctx context.Context, tx *db.Tx, out *Session) error {
	res, err := tx.Exec(ctx, `INSERT INTO sessions (id, source, title, profile, parent_session_id, relation, started_at, last_activity_at,
		pinned, platform, sender_id, sender_name) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		out.ID, out.Source, out.Title, out.Profile, out.ParentSessionID, out.Relation, db.Ms(out.StartedAt.Time), db.Ms(out.LastActivityAt.Time),
		out.Pinned, out.Platform, out.SenderID, out.SenderName)
	if err != nil {
		return err
	}
	out.PK, err = res.LastInsertId()
	return err
}

// NewMessage is a message to append.
type NewMessage struct {
	Role        string
	Content     string
	SentContent *string // the text as sent to the model, when it differs
	ToolName    string
	ToolCallID  string
	TokenCount  int64 // estimated from Content when 0
}

// AppendMessage adds a message to a live session in its own transaction.
func (s *Service) AppendMessage(ctx context.Context, sessionID string, m NewMessage) (Message, error) {
	var out Message
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		var err error
		out, err = s.AppendMessageTx(ctx, tx, sessionID, m)
		return err
	})
	return out, err
}

// AppendMessageTx adds a message inside the caller's transaction.
func (s *Service) AppendMessageTx(ctx context.Context, tx *db.Tx, sessionID string, m NewMessage) (Message, error) {
	if err := ValidateID(sessionID); err != nil {
		return Message{}, err
	}
	if err := validateOneOf("role", m.Role, Roles); err != nil {
		return Message{}, err
	}
	if m.TokenCount <= 0 {
		m.TokenCount = EstimateTokens(m.Content)
	}
	now := db.Ms(tx.Now)
	// Update the counters first: it tells in one statement whether the
	// session exists and is live, before anything is inserted.
	res, err := tx.Exec(ctx, `UPDATE sessions SET message_count = message_count + 1, token_count = token_count + ?, last_activity_at = ?
		WHERE id = ? AND ended_at IS NULL AND trashed_at IS NULL`, m.TokenCount, now, sessionID)
	if err != nil {
		return Message{}, fmt.Errorf("append message to %s: %w", sessionID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		cur, err := getTx(ctx, tx, sessionID)
		if err != nil {
			return Message{}, fmt.Errorf("append message: %w", err)
		}
		if cur.Trashed() {
			return Message{}, apperr.New(apperr.Rejected, "session %s is in the trash; restore it first", sessionID)
		}
		return Message{}, apperr.New(apperr.Rejected, "session %s has ended; messages cannot be appended", sessionID)
	}
	out := Message{SessionID: sessionID, Role: m.Role, Content: m.Content, SentContent: m.SentContent,
		ToolName: m.ToolName, ToolCallID: m.ToolCallID, TokenCount: m.TokenCount, CreatedAt: db.At(tx.Now), Active: true}
	res, err = tx.Exec(ctx, `INSERT INTO messages (session_id, role, content, sent_content, tool_name, tool_call_id, token_count, created_at, active)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)`,
		sessionID, m.Role, m.Content, m.SentContent, m.ToolName, m.ToolCallID, m.TokenCount, now)
	if err == nil {
		out.ID, err = res.LastInsertId()
	}
	if err != nil {
		return Message{}, fmt.Errorf("append message to %s: %w", sessionID, err)
	}
	return out, nil
}

// End ends a live session and fires on_session_finalize. Ending an ended
// session changes nothing, fires nothing and reports changed=false. (A
// compression rotation ends the old link without finalizing: the
// conversation goes on in its continuation.)
func (s *Service) End(ctx context.Context, id, reason string) (Session, bool, error) {
	return s.EndWith(ctx, id, reason, EndInfo{})
}

// EndInfo is what the caller knows of an end, for on_session_finalize.
type EndInfo struct {
	Platform     string // the surface that ended it ("" unknown)
	NewSessionID string // the session the conversation goes on in (/new), "" when none
	// A delegate child's whole task and its parent's turn, as at Create
	// (subagent_stop's child_goal, default the title, and parent_turn_id).
	Goal         string
	ParentTurnID string
}

// EndWith is End with what the caller knows of it. Ending a delegate child
// (a subagent's session) also fires subagent_stop.
func (s *Service) EndWith(ctx context.Context, id, reason string, info EndInfo) (Session, bool, error) {
	if err := ValidateID(id); err != nil {
		return Session{}, false, err
	}
	if reason == "" {
		reason = "user"
	}
	var out Session
	var changed bool
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		// One statement ends the session and returns its row; a session
		// that had ended already (or does not exist) is read after.
		var err error
		out, err = scanSession(tx.QueryRow(ctx, `UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL
			RETURNING `+sessionColumnList, db.Ms(tx.Now), reason, id))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			out, err = getTx(ctx, tx, id)
			return err
		case err != nil:
			return err
		}
		changed = true
		if s.bus == nil {
			return apperr.New(apperr.Internal, "session store of profile %s has no hook bus", s.profile)
		}
		fin := hooks.SessionFinalize{SessionID: id, Platform: hooks.StrOrNil(info.Platform), Reason: reason,
			NewSessionID: hooks.StrOrNil(info.NewSessionID)}
		if info.NewSessionID != "" {
			fin.OldSessionID = &id
		}
		if _, err = s.bus.EnqueueTx(ctx, tx, hooks.OnSessionFinalize, fin); err != nil {
			return err
		}
		if out.ParentSessionID != nil && (out.Relation == RelationDelegate || out.Relation == RelationCompression && out.ChainRoot != nil) {
			return s.subagentStopTx(ctx, tx, out, reason, info)
		}
		return nil
	})
	if err != nil {
		return Session{}, false, fmt.Errorf("end session %s: %w", id, err)
	}
	return out, changed, nil
}

// SetPinned pins or unpins a session (pinned sessions are spared by retention
// pruning and idle archiving).
func (s *Service) SetPinned(ctx context.Context, id string, pinned bool) (Session, error) {
	if err := ValidateID(id); err != nil {
		return Session{}, err
	}
	var out Session
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		if err := tx.G.WithContext(ctx).Exec(`UPDATE sessions SET pinned = ? WHERE id = ? AND trashed_at IS NULL`, pinned, id).Error; err != nil {
			return err
		}
		var err error
		if out, err = getTx(ctx, tx, id); err == nil && out.Trashed() {
			err = apperr.New(apperr.Rejected, "session %s is in the trash; restore it first", id)
		}
		return err
	})
	if err != nil {
		return Session{}, fmt.Errorf("pin session %s: %w", id, err)
	}
	return out, nil
}

// Get returns one session.
func (s *Service) Get(ctx context.Context, id string) (Session, error) {
	if err := ValidateID(id); err != nil {
		return Session{}, err
	}
	v, err := s.db.Row(ctx, `SELECT `+sessionColumnList+` FROM sessions WHERE id = ?`, id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Session{}, apperr.New(apperr.NotFound, "session %s not found", id)
	case err != nil:
		return Session{}, fmt.Errorf("get session %s: %w", id, err)
	}
	return sessionOf(v), nil
}

// Messages returns a session's transcript in order; inactive (compacted away)
// messages are included only when all is true. One query, in the index's
// order; only an empty transcript asks whether the session exists.
func (s *Service) Messages(ctx context.Context, id string, all bool) ([]Message, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	q := sqlTranscript
	if all {
		q = sqlTranscriptAll
	}
	var out []Message
	err := s.db.Each(ctx, q, []any{id}, func(v []driver.Value) error {
		out = append(out, messageOf(id, v))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("messages of %s: %w", id, err)
	}
	if len(out) == 0 {
		if _, err := s.Get(ctx, id); err != nil {
			return nil, err
		}
		out = []Message{}
	}
	return out, nil
}

// The transcript queries: the messages_session index gives their order.
const (
	sqlTranscriptAll = `SELECT ` + messageColumnList + ` FROM messages WHERE session_id = ? ORDER BY COALESCE(pos, id), id`
	sqlTranscript    = `SELECT ` + messageColumnList + ` FROM messages WHERE session_id = ? AND active = 1 ORDER BY COALESCE(pos, id), id`
)

// Lineage returns the compression chain a session belongs to, root to tip.
func (s *Service) Lineage(ctx context.Context, id string) ([]Session, error) {
	if _, err := s.Get(ctx, id); err != nil {
		return nil, err
	}
	ids, err := expand(ctx, s.db.Query, []string{id}, lineageCTE)
	if err != nil {
		return nil, fmt.Errorf("lineage of %s: %w", id, err)
	}
	var rows []Session
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT * FROM sessions WHERE id IN ?`, ids).Scan(&rows).Error; err != nil {
		return nil, err
	}
	return orderChain(rows), nil
}

// orderChain sorts a compression chain from its root to its tip.
func orderChain(rows []Session) []Session {
	byParent := map[string]Session{}
	in := map[string]bool{}
	for _, r := range rows {
		in[r.ID] = true
	}
	var root *Session
	for i, r := range rows {
		if r.ParentSessionID != nil && r.Relation == RelationCompression && in[*r.ParentSessionID] {
			byParent[*r.ParentSessionID] = r
		} else if root == nil {
			root = &rows[i]
		}
	}
	if root == nil {
		return rows
	}
	out := []Session{*root}
	for cur := root.ID; ; {
		next, ok := byParent[cur]
		if !ok || len(out) > len(rows) {
			break
		}
		out = append(out, next)
		cur = next.ID
	}
	return out
}

func getTx(ctx context.Context, tx *db.Tx, id string) (Session, error) {
	out, err := scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumnList+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, apperr.New(apperr.NotFound, "session %s not found", id)
	}
	return out, err
}

// subagentStopTx fires subagent_stop for a delegate child that ended, or
// the continuation of one's compression chain (a subagent whose context
// was compacted ends there): its task, how it ended, its last answer and
// how long it ran, under the id subagent_start gave it.
func (s *Service) subagentStopTx(ctx context.Context, tx *db.Tx, ended Session, reason string, info EndInfo) error {
	child := ended
	if ended.Relation == RelationCompression {
		root, err := getTx(ctx, tx, *ended.ChainRoot)
		if err != nil {
			return err
		}
		if root.Relation != RelationDelegate || root.ParentSessionID == nil {
			return nil // a compacted conversation of no subagent
		}
		child = root
	}
	var last struct{ Content string }
	if err := tx.G.WithContext(ctx).Raw(`SELECT content FROM messages WHERE session_id = ? AND role = 'assistant' AND active = 1
		ORDER BY COALESCE(pos, id) DESC LIMIT 1`, ended.ID).Scan(&last).Error; err != nil {
		return err
	}
	status := "completed"
	switch reason {
	case "failed", "error", "interrupted", "timeout", "cancelled":
		status = reason
	}
	var dur int64
	if ended.EndedAt != nil {
		dur = ended.EndedAt.Time.Sub(child.StartedAt.Time).Milliseconds()
	}
	_, err := s.bus.EnqueueTx(ctx, tx, hooks.SubagentStop, hooks.SubagentStopPayload{ParentSessionID: *child.ParentSessionID,
		ParentTurnID: hooks.StrOrNil(info.ParentTurnID), ChildSessionID: child.ID, ChildSubagentID: child.ID,
		ChildGoal: cmp.Or(info.Goal, child.Title), ChildStatus: status,
		ChildSummary: hooks.StrOrNil(last.Content), DurationMS: dur, Reason: reason, Profile: s.profile})
	return err
}
