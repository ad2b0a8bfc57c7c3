// Package receipts is the idempotent runtime-receipt path that desktop and
// dashboard deletes and archives go through. A request carries a client
// request id; the receipt (request id, fingerprint of the operation, result)
// is stored in the same transaction as the change, so an identical retry
// replays the receipt, changes nothing and fires nothing.
package receipts

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/limits"
	"atrium/backend/sessions"
)

// Operations a receipt can cover.
const (
	OpDelete     = "delete"      // to the trash (or for good with trash_days 0)
	OpArchive    = "archive"     //
	OpUnarchive  = "unarchive"   //
	OpRestore    = "restore"     // back from the trash
	OpPurge      = "purge"       // for good, now: trashed rows, or live ones ("delete now")
	OpEmptyTrash = "empty_trash" // purge the trash (what has been there OlderThan)
	OpUndo       = "undo"        // undo request Target as a whole
)

// Ops lists the operations.
var Ops = []string{OpDelete, OpArchive, OpUnarchive, OpRestore, OpPurge, OpEmptyTrash, OpUndo}

// ruleOps may name their sessions by a rule (Filter) instead of ids.
var ruleOps = []string{OpDelete, OpArchive, OpUnarchive, OpRestore, OpPurge}

// UndoPrefix makes the request id of the undo of a request, so that an
// undo retried replays instead of running twice.
const UndoPrefix = "undo:"

// Request is one client request.
type Request struct {
	RequestID  string   `json:"request_id"`
	Op         string   `json:"op"`
	SessionIDs []string `json:"session_ids"`
	// OlderThan (empty_trash): only what has been in the trash longer, as
	// sessions.ParseDuration reads it ("7d"); empty is all of it.
	OlderThan string `json:"older_than,omitempty"`
	// Filter names the sessions by a rule (sessions.ParseRule fields)
	// instead of ids: bulk by rule, resolved inside the one transaction.
	Filter map[string]string `json:"filter,omitempty"`
	// Target (undo) is the request to undo.
	Target string `json:"target,omitempty"`
}

// Receipt is the stored answer to a request.
type Receipt struct {
	RequestID string          `json:"request_id"`
	Op        string          `json:"op"`
	Result    sessions.Result `json:"result"`
	CreatedAt time.Time       `json:"created_at"`
	Replayed  bool            `json:"replayed"`
	Undoable  bool            `json:"undoable"` // it can be undone as a whole (Service.Undo)
	Undone    bool            `json:"undone"`   // it was undone
}

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

// ValidRequestID checks a request id (an undo's is "undo:" and the id).
func ValidRequestID(id string) error {
	if !requestIDPattern.MatchString(strings.TrimPrefix(id, UndoPrefix)) {
		return apperr.New(apperr.Invalid, "invalid request id %s: use 1-128 letters, digits, '-', '_', '.' or ':'", limits.Echo(id))
	}
	return nil
}

// Validate checks the request before anything runs.
func (r Request) Validate() error {
	if err := ValidRequestID(r.RequestID); err != nil {
		return err
	}
	if !slices.Contains(Ops, r.Op) {
		return apperr.New(apperr.Invalid, "invalid operation %s (one of %s)", limits.Echo(r.Op), strings.Join(Ops, ", "))
	}
	if r.Op == OpUndo {
		if r.Target == "" || len(r.SessionIDs) > 0 || r.Filter != nil {
			return apperr.New(apperr.Invalid, "undo names the request to undo, and no sessions")
		}
		return ValidRequestID(r.Target)
	}
	if r.Target != "" {
		return apperr.New(apperr.Invalid, "target is only for undo")
	}
	if r.Filter != nil {
		if !slices.Contains(ruleOps, r.Op) {
			return apperr.New(apperr.Invalid, "%s takes no filter", r.Op)
		}
		if len(r.SessionIDs) > 0 {
			return apperr.New(apperr.Invalid, "give session ids or a filter, not both")
		}
		_, err := r.Rule()
		return err
	}
	if r.Op == OpEmptyTrash {
		if len(r.SessionIDs) > 0 {
			return apperr.New(apperr.Invalid, "empty_trash takes no session ids")
		}
		_, err := r.olderThan()
		return err
	}
	if r.OlderThan != "" {
		return apperr.New(apperr.Invalid, "older_than is only for empty_trash")
	}
	_, err := sessions.ValidateIDs(r.SessionIDs)
	return err
}

// Rule is the request's filter, with the scope its operation implies when
// the filter names none (unarchive: archived; restore: trash). A rule with
// no condition is refused for operations that remove or hide sessions, so a
// slip never takes everything.
func (r Request) Rule() (sessions.Rule, error) {
	fields := make(map[string]string, len(r.Filter)+1)
	for k, v := range r.Filter {
		fields[k] = v
	}
	if strings.TrimSpace(fields[sessions.FieldScope]) == "" {
		switch r.Op {
		case OpUnarchive:
			fields[sessions.FieldScope] = sessions.ScopeArchived
		case OpRestore:
			fields[sessions.FieldScope] = sessions.ScopeTrash
		}
	}
	rule, err := sessions.ParseRule(fields)
	if err != nil {
		return sessions.Rule{}, err
	}
	want := map[string][]string{
		OpDelete:    {sessions.ScopeActive, sessions.ScopeArchived, sessions.ScopeAll},
		OpArchive:   {sessions.ScopeActive, sessions.ScopeAll},
		OpUnarchive: {sessions.ScopeArchived},
		OpRestore:   {sessions.ScopeTrash},
		OpPurge:     sessions.Scopes,
	}[r.Op]
	if !slices.Contains(want, rule.Scope) {
		return sessions.Rule{}, apperr.New(apperr.Invalid, "filter field scope: %s applies to %s, not %s", r.Op, strings.Join(want, " or "), rule.Scope)
	}
	if rule.Empty() && r.Op != OpRestore && !(r.Op == OpPurge && rule.Scope == sessions.ScopeTrash) {
		return sessions.Rule{}, apperr.New(apperr.Invalid, "a rule for %s needs at least one condition besides its scope (source, inactive_for, messages, ...)", r.Op)
	}
	return rule, nil
}

func (r Request) olderThan() (time.Duration, error) {
	if r.OlderThan == "" {
		return 0, nil
	}
	return sessions.ParseDuration("older_than", r.OlderThan)
}

// Fingerprint identifies what a request asks, independent of id order and
// repetition.
func (r Request) Fingerprint() string {
	ids := append([]string(nil), r.SessionIDs...)
	sort.Strings(ids)
	uniq := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			uniq = append(uniq, id)
		}
	}
	key := r.Op + "\n" + strings.Join(uniq, "\n")
	switch {
	case r.Op == OpEmptyTrash:
		key = r.Op + "\nolder_than=" + strings.ToLower(strings.TrimSpace(r.OlderThan))
	case r.Op == OpUndo:
		key = r.Op + "\ntarget=" + r.Target
	case r.Filter != nil:
		rule, _ := r.Rule()
		key = r.Op + "\nrule\n" + rule.Canonical()
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
