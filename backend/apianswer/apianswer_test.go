package apianswer

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// Each API's shape of a refusal gives its message; anything else its
// start, on one line; a key echoed is taken out.
func TestMessage(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		`{"error": {"message": "Invalid voice", "type": "invalid_request_error"}}`: "Invalid voice",
		`{"error": "rate limited"}`:       "rate limited",
		`{"message": "Bad input"}`:        "Bad input",
		`{"detail": "Not authenticated"}`: "Not authenticated",
		`{"detail": {"status": "voice_not_found", "message": "A voice with the voice_id x was not found."}}`: "A voice with the voice_id x was not found.",
		`{"detail": [{"loc": ["body"], "msg": "field required"}]}`:                                           `[{"loc": ["body"], "msg": "field required"}]`,
		"<html>\n  <body>502 Bad Gateway</body>\n</html>":                                                    "<html> <body>502 Bad Gateway</body> </html>",
		"": "an empty answer",
	} {
		if got := Message([]byte(raw)); got != want {
			t.Errorf("%q: %q, want %q", raw, got, want)
		}
	}
	if got := Message([]byte(strings.Repeat("x", 400))); len([]rune(got)) != 301 || !strings.HasSuffix(got, "…") {
		t.Fatalf("clipped: %d", len([]rune(got)))
	}
	if got := Scrub("bad key sk-secret-1 refused", "sk-secret-1"); got != "bad key [key] refused" {
		t.Fatal(got)
	}
	if got := Scrub("abc", "ab"); got != "abc" {
		t.Fatal("a short key is not scrubbed from every word")
	}
	err := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/audio/speech", Err: errors.New("dial tcp 127.0.0.1:1: connection refused")}
	if got := Transport(err); got != "dial tcp 127.0.0.1:1: connection refused" {
		t.Fatal(got)
	}
	if got := Transport(errors.New("plain")); got != "plain" {
		t.Fatal(got)
	}
	for status, want := range map[int]string{401: " (the key in X_KEY was refused)", 403: " (the key in X_KEY was refused)",
		429: " (rate-limited or out of quota: try again later)", 502: " (the provider failed: try again later)", 400: ""} {
		if got := Hint(status, "X_KEY"); got != want {
			t.Errorf("%d: %q", status, got)
		}
	}
}
