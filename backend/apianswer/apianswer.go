// Package apianswer reads what an HTTP API answered when it refused (the
// transcription and speech APIs): its message on one line, bounded, and
// never the key the request carried.
package apianswer

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Message is an error answer's message: error.message (or error, message,
// detail.message, detail) of JSON, else the start of its text.
func Message(raw []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(raw, &v) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &nested) == nil && nested.Message != "":
			return Clip(nested.Message)
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return Clip(s)
		case v.Message != "":
			return Clip(v.Message)
		case json.Unmarshal(v.Detail, &s) == nil && s != "":
			return Clip(s)
		case json.Unmarshal(v.Detail, &nested) == nil && nested.Message != "":
			return Clip(nested.Message)
		case len(v.Detail) > 0:
			return Clip(string(v.Detail))
		}
	}
	return Snippet(raw)
}

// Snippet is the start of an answer, on one line.
func Snippet(raw []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(raw), "\uFFFD")), " ")
	if s == "" {
		return "an empty answer"
	}
	return Clip(s)
}

// Clip is s's first 300 characters.
func Clip(s string) string {
	if r := []rune(s); len(r) > 300 {
		return string(r[:300]) + "…"
	}
	return s
}

// Scrub takes key out of s, wherever a server or a library echoed it.
func Scrub(s, key string) string {
	if len(key) < 4 {
		return s
	}
	return strings.ReplaceAll(s, key, "[key]")
}

// Transport is a transport error without the *url.Error's method and URL
// ("dial tcp …: connection refused", not "Post \"http://…\": dial tcp …").
func Transport(err error) string {
	var u *url.Error
	if errors.As(err, &u) && u.Err != nil {
		return u.Err.Error()
	}
	return err.Error()
}

// Hint says what an error status means for the person: the key in keyVar
// refused, a rate limit, the provider down ("" for any other).
func Hint(status int, keyVar string) string {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Sprintf(" (the key in %s was refused)", keyVar)
	case status == http.StatusTooManyRequests:
		return " (rate-limited or out of quota: try again later)"
	case status >= 500:
		return " (the provider failed: try again later)"
	}
	return ""
}
