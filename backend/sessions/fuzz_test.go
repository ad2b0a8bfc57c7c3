package sessions_test

import (
	"context"
	"strings"
	"testing"

	"atrium/backend/apperr"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

// FuzzValidateID: an accepted id can never address a file outside the
// sessions folder; a refused one is invalid, in a short message.
func FuzzValidateID(f *testing.F) {
	for _, s := range []string{"01a23cb6-74e5-724e-804a-877b891fa127", "../etc/passwd", "a..b", "x/y", "a\x00b", strings.Repeat("x", 200), "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := sessions.ValidateID(id)
		if err == nil {
			if id == "" || len(id) > 128 || strings.ContainsAny(id, "/\\\x00\n\r") || strings.Contains(id, "..") || strings.HasPrefix(id, ".") {
				t.Fatalf("accepted %q", id)
			}
			return
		}
		if apperr.CodeOf(err) != apperr.Invalid || len(err.Error()) > 400 {
			t.Fatalf("refusal of a %d-byte id: %v", len(id), err)
		}
	})
}

// FuzzSearch: whatever a person types, search answers or refuses it as
// invalid; FTS5 syntax in the input never reaches SQLite as syntax.
func FuzzSearch(f *testing.F) {
	e := sessionstest.New(f)
	ctx := context.Background()
	s := e.MustCreate(f, sessions.CreateParams{Title: "deploy on fridays"})
	if _, err := e.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: "the staging endpoint is /v2/payments"}); err != nil {
		f.Fatal(err)
	}
	for _, q := range []string{"deploy", `payments-prod AND (" NEAR`, "namespace OR", "*", "\"", "a:b", "NEAR(a b)", "^x", strings.Repeat("w ", 40), "é ü"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		_, err := e.Sessions.Search(ctx, q, sessions.SearchOptions{})
		if err != nil && apperr.CodeOf(err) != apperr.Invalid {
			t.Fatalf("search %q: %v", q, err)
		}
	})
}
