// Package desktop runs Atrium's window: Wails v2 around the services of
// app/, with the web UI of frontend/. Only this package and main touch
// Wails; the window's runtime calls (events, dialogs, the file manager) sit
// behind app's Emitter, Picker and Opener, so app/ is tested without a
// window. Build with -tags desktop,production,webkit2_41 for the real
// window; without the desktop tag, Run reports that the build has none.
package desktop

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"time"

	"atrium/app"
	"atrium/backend/cron"
	"atrium/backend/plugins"
	"atrium/backend/turns"
)

// Options are what the command line gives the window.
type Options struct {
	Version string
	Open    string // a session to show once the window is up
	Loop    *turns.Loop
	Plugins *plugins.Manager
	// Ready runs once the UI has painted its first page, or readyAfter
	// after the page loaded, whichever comes first (it starts the plugin
	// processes kept back so the window paints sooner).
	Ready func()
	// Cron is the scheduler this process hosts (the Cron page's "run now"
	// and new jobs reach it at once); nil for a store-only one.
	Cron *cron.Service
	// Approvals asks the person at the window about tool calls a plugin
	// wants approved (the loop's Approve is its Ask).
	Approvals *app.Approvals
	// Clarify asks the person at the window the clarify tool's questions
	// (the loop's Clarify is its Ask).
	Clarify *app.Clarifications
}

// readyAfter bounds how long Options.Ready waits for the UI's first paint.
const readyAfter = 3 * time.Second

// Window geometry: readable at 1280x800 and down to 800x600.
const (
	Width     = 1280
	Height    = 800
	MinWidth  = 800
	MinHeight = 600
)

// closeWait bounds how long closing the window waits for pending hook
// deliveries before the process moves on to its own (bounded) shutdown.
const closeWait = 10 * time.Second

// UniqueID names the single-instance lock of one data folder (a D-Bus name
// part: letters, digits and underscores). Two windows on one profile would
// fight over the same store; two profiles may run side by side.
func UniqueID(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "io.atrium.desktop.p" + hex.EncodeToString(sum[:8])
}

// OpenArg finds the session a second `atrium --open ID` (or --open=ID) asks
// for in its arguments; "" when there is none.
func OpenArg(args []string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--open="); ok {
			return v
		}
		if a == "--open" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// lateEmitter forwards to an emitter installed once the window exists;
// events before that are dropped (the UI loads its state when it starts).
type lateEmitter struct {
	to atomic.Pointer[func(name string, data any)]
}

func (l *lateEmitter) set(fn func(name string, data any)) { l.to.Store(&fn) }

func (l *lateEmitter) Emit(name string, data any) {
	if fn := l.to.Load(); fn != nil {
		(*fn)(name, data)
	}
}
