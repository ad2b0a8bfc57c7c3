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
	"sort"
	"strings"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/sessions"
)

// Operations a receipt can cover.
const (
	OpDelete    = "delete"
	OpArchive   = "archive"
	OpUnarchive = "unarchive"
)

// Request is one client request.
type Request struct {
	RequestID  string   `json:"request_id"`
	Op         string   `json:"op"`
	SessionIDs []string `json:"session_ids"`
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
	switch r.Op {
	case OpDelete, OpArchive, OpUnarchive:
	default:
		return apperr.New(apperr.Invalid, "invalid operation %q (delete, archive or unarchive)", r.Op)
	}
	_, err := sessions.ValidateIDs(r.SessionIDs)
	return err
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
	sum := sha256.Sum256([]byte(r.Op + "\n" + strings.Join(uniq, "\n")))
	return hex.EncodeToString(sum[:])
}
