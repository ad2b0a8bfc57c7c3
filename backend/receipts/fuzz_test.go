package receipts_test

import (
	"strings"
	"testing"

	"atrium/backend/apperr"
	"atrium/backend/receipts"
)

// FuzzRequestValidate: a request id and session ids from a client are
// accepted only in their documented alphabet and refused as invalid, in a
// short message, otherwise.
func FuzzRequestValidate(f *testing.F) {
	f.Add("ui-42", "delete", "s-1")
	f.Add("a:b.c", "archive", "../x")
	f.Add(strings.Repeat("r", 300), "unarchive", "")
	f.Fuzz(func(t *testing.T, rid, op, id string) {
		err := receipts.Request{RequestID: rid, Op: op, SessionIDs: []string{id}}.Validate()
		if err == nil {
			if len(rid) > 128 || strings.ContainsAny(rid, "/\\\x00\n ") || strings.ContainsAny(id, "/\\\x00") || strings.Contains(id, "..") {
				t.Fatalf("accepted %q %q %q", rid, op, id)
			}
			return
		}
		if apperr.CodeOf(err) != apperr.Invalid || len(err.Error()) > 400 {
			t.Fatalf("refusal: %v", err)
		}
	})
}
