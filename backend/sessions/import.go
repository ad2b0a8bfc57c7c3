package sessions

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"atrium/backend/apperr"
	"atrium/backend/db"
)

// Kinds of agent a session can be imported from.
const (
	ImportHermes   = "hermes"      // the familiar Python agent's state.db
	ImportClaude   = "claude-code" // Claude Code's projects/<dir>/<id>.jsonl
	ImportCodex    = "codex"       // Codex's sessions/YYYY/MM/DD/rollout-*.jsonl
	ImportGemini   = "gemini-cli"  // Gemini CLI's tmp/<project>/chats/session-*.json(l)
	ImportOpenCode = "opencode"    // OpenCode's opencode.db (or its earlier storage/ files)
)

// ImportKinds lists the kinds Import takes.
var ImportKinds = []string{ImportHermes, ImportClaude, ImportCodex, ImportGemini, ImportOpenCode}

// Import statuses, one per session offered.
const (
	ImportStatusImported  = "imported"  // a new session
	ImportStatusUpdated   = "updated"   // imported before; its new messages were added
	ImportStatusUnchanged = "unchanged" // imported before; nothing new
	ImportStatusSkipped   = "skipped"   // nothing to import (no message), or in the trash
	ImportStatusConflict  = "conflict"  // its id belongs to a session that was not imported from it
)

// Origin is where an imported session comes from: the agent's kind, the
// session's own id there, and the file it was read from (shown only).
type Origin struct {
	Kind string `json:"kind"`
	Key  string `json:"key"`
	Path string `json:"path,omitempty"`
}

// Imported is one session read from another agent, in Atrium's terms. A
// reader gives every message of the session, oldest first, the same way at
// every run: an import run again takes the messages past those it took
// before.
type Imported struct {
	Origin Origin
	// Reading names how the reader turns its source into messages, and is
	// changed with it: what was taken before is compared with the source
	// only when it was read the same way (a better reading of an unchanged
	// source is not a source rewritten).
	Reading   string
	Title     string
	Source    string // one of Sources; "cli" when empty
	Platform  string // a chat platform, when the session came from one
	SenderID  string
	ParentKey string // the parent's Origin.Key, same kind; dropped when that parent is not in the store
	Relation  string // with ParentKey
	StartedAt time.Time
	EndedAt   *time.Time
	EndReason string
	Messages  []ImportedMessage
}

// ImportedMessage is one message of an imported session. An assistant's tool
// call is a message of its own, as the turn loop stores it: role assistant,
// the call's arguments as content, ToolName and ToolCallID set.
type ImportedMessage struct {
	Role       string
	Content    string
	ToolName   string
	ToolCallID string
	CreatedAt  time.Time
}

// ImportOutcome says what became of one offered session.
type ImportOutcome struct {
	ID       string `json:"id"`
	Origin   Origin `json:"origin"`
	Status   string `json:"status"`
	Messages int    `json:"messages"` // messages added
	Title    string `json:"title,omitempty"`
	Note     string `json:"note,omitempty"`
}

// ImportResult is one Import call's outcomes, in the order offered.
type ImportResult struct {
	Outcomes []ImportOutcome `json:"outcomes"`
	Messages int             `json:"messages"` // messages added in all
}

// Count is the number of outcomes with status.
func (r ImportResult) Count(status string) int {
	n := 0
	for _, o := range r.Outcomes {
		if o.Status == status {
			n++
		}
	}
	return n
}

// ImportOptions adjust Import.
type ImportOptions struct {
	DryRun bool // say what would happen; write nothing
	// Planned carries a dry run over several calls: the sessions earlier
	// calls would have imported (keyed by kind and key), so a child in a
	// later call is not said to lose its parent. Import adds to it.
	Planned map[Origin]bool
}

var errImportDryRun = errors.New("dry run")

// Import writes sessions read from another agent into the store, in one
// transaction: new ones as they were (their times, titles, lineage, ended or
// not), and for one imported before, only the messages past those taken
// then. Parents should come before their children, in this call or an
// earlier one; a parent that is not in the store leaves its child without a
// link. Import is history, not activity: it fires no hook (like a profile
// move's adoption), and a session imported open stays open, to be continued.
func (s *Service) Import(ctx context.Context, items []Imported, o ImportOptions) (ImportResult, error) {
	res := ImportResult{Outcomes: make([]ImportOutcome, 0, len(items))}
	for i := range items {
		if err := normalizeImport(&items[i]); err != nil {
			return ImportResult{}, err
		}
	}
	err := s.db.InTx(ctx, func(tx *db.Tx) error {
		res.Messages = 0
		res.Outcomes = res.Outcomes[:0]
		for i := range items {
			out, err := s.importOneTx(ctx, tx, &items[i], o.Planned)
			if err != nil {
				return fmt.Errorf("import %s %s: %w", items[i].Origin.Kind, items[i].Origin.Key, err)
			}
			res.Outcomes = append(res.Outcomes, out)
			res.Messages += out.Messages
		}
		if o.DryRun {
			return errImportDryRun
		}
		return nil
	})
	if err != nil && !(o.DryRun && errors.Is(err, errImportDryRun)) {
		return ImportResult{}, err
	}
	return res, nil
}

// ImportID is the Atrium id of a session imported from kind with key: the
// key itself when it is a valid id, else one derived from it.
func ImportID(kind, key string) string {
	if ValidateID(key) == nil {
		return key
	}
	sum := sha256.Sum256([]byte(kind + "\x00" + key))
	return kind + "-" + hex.EncodeToString(sum[:12])
}

// normalizeImport checks what cannot be mended and mends the rest: a title
// cut to one clean line, an unknown platform dropped, roles checked.
func normalizeImport(it *Imported) error {
	if err := validateOneOf("import kind", it.Origin.Kind, ImportKinds); err != nil {
		return err
	}
	if it.Origin.Key == "" || len(it.Origin.Key) > 512 || !utf8.ValidString(it.Origin.Key) {
		return apperr.New(apperr.Invalid, "an imported session needs its id in %s (at most 512 bytes of UTF-8)", it.Origin.Kind)
	}
	if it.Source == "" {
		it.Source = "cli"
	}
	if err := validateOneOf("source", it.Source, Sources); err != nil {
		return err
	}
	if it.Platform != "" && !namePattern.MatchString(it.Platform) {
		it.Platform = ""
	}
	if len(it.SenderID) > 256 || strings.ContainsFunc(it.SenderID, unicode.IsControl) {
		it.SenderID = ""
	}
	it.Title = ImportTitle(it.Title)
	if it.ParentKey != "" {
		if it.Relation == "" {
			it.Relation = RelationBranch
		}
		if err := validateOneOf("relation", it.Relation, []string{RelationDelegate, RelationBranch, RelationCompression}); err != nil {
			return err
		}
	}
	// Times: a message without one takes the one before it; a session
	// without a start starts at its first message.
	if it.StartedAt.IsZero() {
		for _, m := range it.Messages {
			if !m.CreatedAt.IsZero() {
				it.StartedAt = m.CreatedAt
				break
			}
		}
		if it.StartedAt.IsZero() {
			it.StartedAt = time.Now()
		}
	}
	prev := it.StartedAt
	for i := range it.Messages {
		m := &it.Messages[i]
		if err := validateOneOf("role", m.Role, Roles); err != nil {
			return fmt.Errorf("message %d of %s: %w", i+1, it.Origin.Key, err)
		}
		if m.CreatedAt.IsZero() {
			m.CreatedAt = prev
		}
		prev = m.CreatedAt
	}
	if it.EndedAt != nil && it.EndedAt.IsZero() {
		it.EndedAt = nil
	}
	return nil
}

// ImportTitle makes a title of text: its first non-empty line, spaces
// collapsed, control characters dropped, cut to the store's limit.
func ImportTitle(text string) string {
	line := ""
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			line = l
			break
		}
	}
	line = strings.Join(strings.FieldsFunc(line, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	line = strings.ToValidUTF8(line, "")
	if r := []rune(line); len(r) > maxTitle {
		line = strings.TrimSpace(string(r[:maxTitle-1])) + "…"
	}
	return line
}

func (s *Service) importOneTx(ctx context.Context, tx *db.Tx, it *Imported, planned map[Origin]bool) (ImportOutcome, error) {
	id := ImportID(it.Origin.Kind, it.Origin.Key)
	out := ImportOutcome{ID: id, Origin: it.Origin, Title: it.Title}
	var recID string
	var prev importedBefore
	err := tx.QueryRow(ctx, `SELECT session_id, messages, digest, last_message FROM session_imports WHERE kind = ? AND source_key = ?`,
		it.Origin.Kind, it.Origin.Key).Scan(&recID, &prev.taken, &prev.digest, &prev.last)
	if errors.Is(err, sql.ErrNoRows) {
		recID = ""
	} else if err != nil {
		return out, err
	}
	if recID != "" {
		cur, err := getTx(ctx, tx, recID)
		switch {
		case apperr.CodeOf(err) == apperr.NotFound:
			recID = "" // deleted for good since: import it anew
		case err != nil:
			return out, err
		default:
			out.ID = recID
			return s.importMoreTx(ctx, tx, it, cur, prev, out)
		}
	}
	if len(it.Messages) == 0 {
		out.Status, out.Note = ImportStatusSkipped, "no messages"
		return out, nil
	}
	if existing, err := getTx(ctx, tx, id); err == nil {
		out.Status = ImportStatusConflict
		out.Note = fmt.Sprintf("session %s exists and was not imported from this %s session", existing.ID, it.Origin.Kind)
		return out, nil
	} else if apperr.CodeOf(err) != apperr.NotFound {
		return out, err
	}
	row := Session{ID: id, Source: it.Source, Title: it.Title, Profile: s.profile, StartedAt: db.At(it.StartedAt),
		Platform: it.Platform, SenderID: it.SenderID}
	if it.ParentKey != "" {
		parent, note, err := importedParent(ctx, tx, it)
		if err != nil {
			return out, err
		}
		if parent == "" && planned[Origin{Kind: it.Origin.Kind, Key: it.ParentKey}] {
			note = "" // imported by an earlier part of this dry run
		}
		if parent != "" {
			row.ParentSessionID, row.Relation = &parent, it.Relation
		}
		out.Note = note
	}
	last, tokens := importTotals(it.Messages, it.StartedAt)
	row.LastActivityAt = db.At(last)
	var ended *int64
	if it.EndedAt != nil {
		v := db.Ms(*it.EndedAt)
		ended = &v
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sessions (id, source, title, profile, parent_session_id, relation, started_at, ended_at, end_reason,
		last_activity_at, message_count, token_count, platform, sender_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		row.ID, row.Source, row.Title, row.Profile, row.ParentSessionID, row.Relation, db.Ms(row.StartedAt.Time), ended, it.EndReason,
		db.Ms(row.LastActivityAt.Time), len(it.Messages), tokens, row.Platform, row.SenderID); err != nil {
		return out, err
	}
	if row.Relation == RelationCompression {
		// The divider between the two parts of the conversation.
		if _, err := tx.Exec(ctx, `INSERT OR REPLACE INTO session_rotations (session_id, from_session_id, kind, reason, created_at)
			VALUES (?, ?, 'summarize', 'unknown', ?)`, row.ID, *row.ParentSessionID, db.Ms(row.StartedAt.Time)); err != nil {
			return out, err
		}
	}
	lastID, err := insertImportedTx(ctx, tx, id, it.Messages)
	if err != nil {
		return out, err
	}
	if _, err := tx.Exec(ctx, `INSERT OR REPLACE INTO session_imports (kind, source_key, session_id, path, messages, digest, last_message, imported_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, it.Origin.Kind, it.Origin.Key, id, it.Origin.Path, len(it.Messages), importDigestOf(it, it.Messages), lastID,
		db.Ms(tx.Now), db.Ms(tx.Now)); err != nil {
		return out, err
	}
	if planned != nil {
		planned[Origin{Kind: it.Origin.Kind, Key: it.Origin.Key}] = true
	}
	out.Status, out.Messages = ImportStatusImported, len(it.Messages)
	return out, nil
}

// importedBefore is what an earlier import took of a session: how many of
// its source's messages, their digest ("" when the version that took them
// kept none; else the reading's name, ":", ImportDigest), and the last
// message it wrote (0: not kept).
type importedBefore struct {
	taken  int
	digest string
	last   int64
}

// importMoreTx adds to a session imported before the messages its source
// gained since, and its end if it has ended since; only while the messages
// taken then are still the source's first ones, and the session was not
// continued here after them.
func (s *Service) importMoreTx(ctx context.Context, tx *db.Tx, it *Imported, cur Session, prev importedBefore, out ImportOutcome) (ImportOutcome, error) {
	out.Title = cur.Title
	taken := prev.taken
	if cur.Trashed() {
		out.Status, out.Note = ImportStatusSkipped, "in the trash: restore it, or empty the trash to import it again"
		return out, nil
	}
	if len(it.Messages) < taken {
		out.Status = ImportStatusUnchanged
		out.Note = fmt.Sprintf("the source now has %d messages, fewer than the %d imported; left as imported", len(it.Messages), taken)
		return out, nil
	}
	same := prev.digest != "" && strings.HasPrefix(prev.digest, it.Reading+":")
	if same && importDigestOf(it, it.Messages[:taken]) != prev.digest {
		out.Status = ImportStatusConflict
		out.Note = fmt.Sprintf("its first %d messages changed in %s since they were imported (rewound or edited there); left as imported: "+
			"delete it here and empty it from the trash to import it as it is now", taken, it.Origin.Kind)
		return out, nil
	}
	more := it.Messages[taken:]
	endNow := it.EndedAt != nil && !cur.Ended()
	if len(more) == 0 && !endNow {
		out.Status = ImportStatusUnchanged
		if !same {
			// Taken by a version that kept no digest, or read another way:
			// the messages taken are the source's first ones now, as far
			// as anyone can tell; from here on a rewind is told apart.
			_, err := tx.Exec(ctx, `UPDATE session_imports SET digest = ? WHERE kind = ? AND source_key = ?`,
				importDigestOf(it, it.Messages), it.Origin.Kind, it.Origin.Key)
			return out, err
		}
		return out, nil
	}
	if prev.last > 0 {
		var own int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM messages WHERE session_id = ? AND id > ?`, cur.ID, prev.last).Scan(&own); err != nil {
			return out, err
		}
		if own > 0 {
			out.Status = ImportStatusConflict
			out.Note = fmt.Sprintf("continued here since it was imported (%d message(s) of its own after the imported ones): "+
				"the %d new in %s are not added after them; left as it is", own, len(more), it.Origin.Kind)
			return out, nil
		}
	}
	lastID := prev.last
	if len(more) > 0 {
		last, tokens := importTotals(more, cur.LastActivityAt.Time)
		if _, err := tx.Exec(ctx, `UPDATE sessions SET message_count = message_count + ?, token_count = token_count + ?,
			last_activity_at = MAX(last_activity_at, ?) WHERE id = ?`, len(more), tokens, db.Ms(last), cur.ID); err != nil {
			return out, err
		}
		var err error
		if lastID, err = insertImportedTx(ctx, tx, cur.ID, more); err != nil {
			return out, err
		}
	}
	if endNow {
		if _, err := tx.Exec(ctx, `UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL`,
			db.Ms(*it.EndedAt), it.EndReason, cur.ID); err != nil {
			return out, err
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE session_imports SET messages = ?, digest = ?, last_message = ?, path = ?, updated_at = ? WHERE kind = ? AND source_key = ?`,
		len(it.Messages), importDigestOf(it, it.Messages), lastID, it.Origin.Path, db.Ms(tx.Now), it.Origin.Kind, it.Origin.Key); err != nil {
		return out, err
	}
	out.Status, out.Messages = ImportStatusUpdated, len(more)
	return out, nil
}

// ImportDigest identifies messages by what they say, in order: roles,
// texts and tool calls, not their times.
func ImportDigest(ms []ImportedMessage) string {
	h := sha256.New()
	for _, m := range ms {
		for _, f := range []string{m.Role, m.Content, m.ToolName, m.ToolCallID} {
			fmt.Fprintf(h, "%d:%s", len(f), f)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// importDigestOf is the digest kept of ms, messages of it: its reading,
// then ImportDigest.
func importDigestOf(it *Imported, ms []ImportedMessage) string {
	return it.Reading + ":" + ImportDigest(ms)
}

// importedParent is the Atrium id of it's parent when that parent is in the
// store, and a note when it is not.
func importedParent(ctx context.Context, tx *db.Tx, it *Imported) (string, string, error) {
	var parent string
	err := tx.QueryRow(ctx, `SELECT i.session_id FROM session_imports i JOIN sessions s ON s.id = i.session_id
		WHERE i.kind = ? AND i.source_key = ?`, it.Origin.Kind, it.ParentKey).Scan(&parent)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Sprintf("its parent %s is not in the store; imported without the link", it.ParentKey), nil
	}
	return parent, "", err
}

// importTotals are the time of the last message (at least from) and the
// messages' token estimate.
func importTotals(ms []ImportedMessage, from time.Time) (time.Time, int64) {
	last, tokens := from, int64(0)
	for _, m := range ms {
		if m.CreatedAt.After(last) {
			last = m.CreatedAt
		}
		tokens += EstimateTokens(m.Content)
	}
	return last, tokens
}

// insertImportedTx writes ms into session id and returns the last one's id.
func insertImportedTx(ctx context.Context, tx *db.Tx, id string, ms []ImportedMessage) (int64, error) {
	var last int64
	for _, m := range ms {
		res, err := tx.Exec(ctx, `INSERT INTO messages (session_id, role, content, tool_name, tool_call_id, token_count, created_at, active)
			VALUES (?, ?, ?, ?, ?, ?, ?, 1)`, id, m.Role, strings.ToValidUTF8(m.Content, "\uFFFD"), m.ToolName, m.ToolCallID,
			EstimateTokens(m.Content), db.Ms(m.CreatedAt))
		if err == nil {
			last, err = res.LastInsertId()
		}
		if err != nil {
			return 0, err
		}
	}
	return last, nil
}
