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
	"atrium/backend/cron"
	"atrium/backend/maintenance"
	"atrium/backend/plugins"
	"atrium/backend/sessions"
	"atrium/backend/stack"
	"atrium/backend/turns"
)

// Per-call timeouts derived from the base ctx.
const (
	readTimeout  = 30 * time.Second
	writeTimeout = 2 * time.Minute
	turnTimeout  = 10 * time.Minute // a model turn can be slow; a person's answer is not counted (turns.WithBudget)
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
	Storage  *Storage
	Gateway  *Gateway
	Cron     *Cron
	log      *slog.Logger
	live     *live
	emit     Emitter
}

// Options are what the surface (window or dashboard) gives the services.
type Options struct {
	Platform string  // PlatformDesktop or PlatformDashboard
	Version  string  // shown in Settings.Info
	Emitter  Emitter // live events to the UI; nil drops them
	Picker   Picker  // native file dialogs; nil: Plugins.Browse is unsupported
	Saver    Saver   // a native save dialog; nil: Sessions.SaveExport is unsupported
	Opener   Opener  // opens a folder in the file manager; nil: Plugins.Open only reports the path
	// Ready runs once when the UI reports its first paint (Settings.Ready).
	Ready func()
	// Cron is the scheduler this process hosts (nil: a store-only one, for
	// the page and "run now").
	Cron *cron.Service
	// Approvals asks the person here about tool calls a plugin wants
	// approved: the loop's Approve is its Ask (nil: none is ever asked).
	Approvals *Approvals
	// Clarify asks the person here the clarify tool's questions: the
	// loop's Clarify is its Ask (nil: none is ever asked).
	Clarify *Clarifications
}

// New builds the services of st. Call Run to push live events.
func New(ctx context.Context, st *stack.Stack, loop *turns.Loop, mgr *plugins.Manager, o Options) *App {
	if o.Emitter == nil {
		o.Emitter = nopEmitter{}
	}
	if o.Cron == nil {
		o.Cron = cron.New(st.CronOptions(loop))
	}
	if o.Approvals == nil {
		o.Approvals = NewApprovals(0)
	}
	o.Approvals.setEmitter(o.Emitter)
	if o.Clarify == nil {
		o.Clarify = NewClarifications()
	}
	o.Clarify.setEmitter(o.Emitter)
	a := &App{
		Sessions: NewSessions(ctx, st, loop, o.Platform, o.Emitter).withSaver(o.Saver).withApprovals(o.Approvals).withClarifications(o.Clarify),
		Plugins:  NewPlugins(ctx, mgr, o.Platform, o.Picker, o.Opener),
		Activity: NewActivity(ctx, st),
		Settings: NewSettings(st, o.Platform, o.Version, o.Ready),
		Storage:  NewStorage(ctx, st),
		Gateway:  NewGateway(ctx, st),
		Cron:     NewCron(ctx, st, o.Cron),
		log:      st.Logger(),
		emit:     o.Emitter,
		live:     newLive(st, o.Emitter),
	}
	st.Maintenance.OnRetentionPending(func(p sessions.PrunePreview) {
		o.Emitter.Emit(EventRetentionPending, toRetention(maintenance.Retention{AutoPrune: true, Days: p.Days, Preview: p, NeedsConfirmation: true}))
	})
	mgr.OnChange(func(c plugins.Change) {
		o.Emitter.Emit(EventPluginState, PluginStateDTO{Name: c.Name, State: c.State, Error: c.Error})
	})
	return a
}

// Run pushes hook activity to the emitter, batched, until ctx ends.
func (a *App) Run(ctx context.Context) { a.live.run(ctx) }

// OpenSession asks the UI to show session id (a second `atrium --open ID`).
func (a *App) OpenSession(id string) { a.emit.Emit(EventOpenSession, OpenSessionDTO{ID: id}) }

// Bindings are the services the window binds, for Wails' Bind option.
func (a *App) Bindings() []any {
	return []any{a.Sessions, a.Plugins, a.Activity, a.Settings, a.Storage, a.Gateway, a.Cron}
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

// FormatError maps err to its DTO, logging internal errors on lg. A call
// cancelled because its caller went away (the window closing while a query
// ran) is logged at debug level: nothing failed.
func FormatError(lg *slog.Logger, err error) ErrorDTO {
	code := apperr.CodeOf(err)
	if code == apperr.Internal || code == "" {
		if lg == nil {
			lg = slog.Default()
		}
		if errors.Is(err, context.Canceled) {
			lg.Debug("call cancelled", "error", err)
		} else {
			lg.Error("internal error", "error", err)
		}
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
