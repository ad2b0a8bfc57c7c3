// Package apperr holds Atrium's one coded error type. Every layer wraps with
// context (fmt.Errorf("...: %w", err)); the code survives the wrapping and is
// what callers (the command line, the desktop, the JSON API) branch on.
package apperr

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable error class.
type Code string

const (
	Invalid  Code = "invalid"
	NotFound Code = "not_found"
	Conflict Code = "conflict"
	Rejected Code = "rejected"
	Internal Code = "internal"
)

// Error is a coded error with a message meant for people.
type Error struct {
	Code    Code
	Message string
	Err     error // optional cause
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// New builds a coded error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap attaches a code and message to a cause.
func Wrap(code Code, err error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: err}
}

// CodeOf returns the code of the first coded error in err's chain;
// anything uncoded is internal, and nil has no code.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// Is reports whether err carries the given code.
func Is(err error, code Code) bool { return err != nil && CodeOf(err) == code }
