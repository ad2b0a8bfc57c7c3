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
)

// Ops lists the operations.
var Ops = []string{OpDelete, OpArchive, OpUnarchive, OpRestore, OpPurge, OpEmptyTrash}

// Request is one client request.
type Request struct {
	RequestID  string   `json:"request_id"`
	Op         string   `json:"op"`
	SessionIDs []string `json:"session_ids"`
	// OlderThan (empty_trash): only what has been in the trash longer, as
	// sessions.ParseDuration reads it ("7d"); empty is all of it.
	OlderThan string `json:"older_than,omitempty"`
}

// Receipt is the stored answer to a request.
type Receipt struct {
	RequestID string          `json:"request_id"`
	Op        string          `json:"op"`
	Result    sessions.Result `json:"result"`
	CreatedAt time.Time       `json:"created_at"`
	Replayed  bool            `json:"replayed"`
}

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$`)

// Validate checks the request before anything runs.
func (r Request) Validate() error {
	if !requestIDPattern.MatchString(r.RequestID) {
		return apperr.New(apperr.Invalid, "invalid request id %q: use 1-128 letters, digits, '-', '_', '.' or ':'", r.RequestID)
	}
	if !slices.Contains(Ops, r.Op) {
		return apperr.New(apperr.Invalid, "invalid operation %q (one of %s)", r.Op, strings.Join(Ops, ", "))
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
	if r.Op == OpEmptyTrash {
		key = r.Op + "\nolder_than=" + strings.ToLower(strings.TrimSpace(r.OlderThan))
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
