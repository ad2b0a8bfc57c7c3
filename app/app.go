// Package app is the thin layer the desktop window (Wails bindings) and the
// dashboard (the JSON API of `atrium serve`) share: each method converts a
// DTO, makes one backend call and maps the result. No gorm, rules or hook
// dispatch live here.
package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/plugins"
	"atrium/backend/stack"
	"atrium/backend/turns"
)

// Per-call timeouts derived from the base ctx.
const (
	readTimeout  = 30 * time.Second
	writeTimeout = 2 * time.Minute
	turnTimeout  = 10 * time.Minute // a model turn can be slow
)

// Platform names of the two surfaces, told to plugins with every turn.
const (
	PlatformDesktop   = "desktop"
	PlatformDashboard = "dashboard"
)

// base holds the ctx given at construction (Wails' OnStartup ctx, or the
// serve command's); calls derive their timeouts from it.
type base struct{ ctx context.Context }

func (b base) with(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.ctx, d)
}

// App is every bindable service of one profile.
type App struct {
	Sessions *Sessions
	Plugins  *Plugins
	Activity *Activity
	Settings *Settings
	log      *slog.Logger
}

// New builds the services of st. platform is PlatformDesktop or
// PlatformDashboard.
func New(ctx context.Context, st *stack.Stack, loop *turns.Loop, mgr *plugins.Manager, platform string) *App {
	return &App{
		Sessions: NewSessions(ctx, st, loop, platform),
		Plugins:  NewPlugins(ctx, mgr),
		Activity: NewActivity(ctx, st),
		Settings: NewSettings(st),
		log:      st.Logger(),
	}
}

// ErrorDTO is what a caller sees of an error.
type ErrorDTO struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// internalMessage replaces the text of every internal error.
const internalMessage = "Internal error."

// ErrorFormatter is Wails' ErrorFormatter: {code, message}; internal errors
// say only "Internal error." and their full chain goes to the log.
func (a *App) ErrorFormatter(err error) any { return FormatError(a.log, err) }

// FormatError maps err to its DTO, logging internal errors on lg.
func FormatError(lg *slog.Logger, err error) ErrorDTO {
	code := apperr.CodeOf(err)
	if code == apperr.Internal || code == "" {
		if lg == nil {
			lg = slog.Default()
		}
		lg.Error("internal error", "error", err)
		return ErrorDTO{Code: string(apperr.Internal), Message: internalMessage}
	}
	return ErrorDTO{Code: string(code), Message: err.Error()}
}

// invalid wraps a decoding problem as an invalid error.
func invalid(err error, what string) error {
	var e *apperr.Error
	if errors.As(err, &e) {
		return err
	}
	return apperr.Wrap(apperr.Invalid, err, "invalid %s", what)
}
