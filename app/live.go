package app

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/samber/lo"

	"atrium/backend/hooks"
	"atrium/backend/stack"
)

// Names of the events pushed to the UI.
const (
	EventActivity    = "activity"     // []EventDTO: new or changed log events
	EventProgress    = "progress"     // ProgressDTO
	EventPluginState = "plugin-state" // PluginStateDTO
	EventOpenSession = "open-session" // OpenSessionDTO
	// EventRetentionPending (RetentionDTO): the first automatic prune waits
	// for the user to confirm its preview (Storage.ConfirmRetention).
	EventRetentionPending = "retention:pending"
	// EventRuns (RunsDTO): the turns under way changed, in any process of
	// the profile (a scheduled run began, a terminal's turn ended).
	EventRuns = "runs"
)

// RunDTO is a turn under way: its session, where it runs, and what it
// waits on when it waits on its model (a retry's wait, a switch to a
// fallback model; "" otherwise).
type RunDTO struct {
	SessionID string `json:"session_id"`
	Platform  string `json:"platform"`
	Status    string `json:"status,omitempty"`
}

// RunsDTO is every turn under way.
type RunsDTO struct {
	Running []RunDTO `json:"running"`
}

// Emitter pushes one named event to the UI: Wails' EventsEmit in the
// window, the SSE hub under `atrium serve`. It must not block for long.
type Emitter interface {
	Emit(name string, data any)
}

// EmitterFunc adapts a function to Emitter.
type EmitterFunc func(name string, data any)

// Emit calls f.
func (f EmitterFunc) Emit(name string, data any) { f(name, data) }

type nopEmitter struct{}

func (nopEmitter) Emit(string, any) {}

// ProgressDTO is the progress of a bulk request.
type ProgressDTO struct {
	RequestID string `json:"request_id"`
	Op        string `json:"op"`
	Done      int    `json:"done"`
	Total     int    `json:"total"`
}

// PluginStateDTO says a plugin changed state.
type PluginStateDTO struct {
	Name  string `json:"name"`
	State string `json:"state"`
	Error string `json:"error,omitempty"`
}

// OpenSessionDTO asks the UI to show a session.
type OpenSessionDTO struct {
	ID string `json:"id"`
}

// Live timing: deliveries that come fast are batched for batchDelay; the
// log is read every pollEvery for what other processes committed or
// delivered (the plugin host may be another process).
const (
	batchDelay = 150 * time.Millisecond
	pollEvery  = 500 * time.Millisecond
	liveLimit  = 500
)

// live forwards hook activity to the emitter, batched: the bus's activity
// feed (Tail) says what is new or changed, whoever committed or delivered.
type live struct {
	st   *stack.Stack
	emit Emitter
	wake chan struct{}
}

func newLive(st *stack.Stack, emit Emitter) *live {
	l := &live{st: st, emit: emit, wake: make(chan struct{}, 1)}
	st.Bus.OnActivity(l.note)
	return l
}

// note is the bus observer: a delivery happened here (it must not block).
func (l *live) note(hooks.Activity) {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run emits batches until ctx ends. It starts at the present: the UI loads
// history through Activity.Recent.
func (l *live) run(ctx context.Context) {
	cur, _ := l.st.Bus.TailStart(ctx)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	runs := []RunDTO{}
	for {
		runs = l.runs(runs)
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
			select { // let a burst gather
			case <-ctx.Done():
				return
			case <-time.After(batchDelay):
			}
		case <-tick.C:
		}
		cur = l.flush(ctx, cur)
	}
}

// runs emits the turns under way (runningIn, by session) when they are not
// last, what it emitted before, and returns what it emitted.
func (l *live) runs(last []RunDTO) []RunDTO {
	now := []RunDTO{}
	for id, r := range newestRuns(l.st) {
		now = append(now, RunDTO{SessionID: id, Platform: r.Platform, Status: r.Status})
	}
	sort.Slice(now, func(i, j int) bool { return now[i].SessionID < now[j].SessionID })
	if !slices.Equal(now, last) {
		l.emit.Emit(EventRuns, RunsDTO{Running: now})
	}
	return now
}

// flush emits the events new or changed since cur.
func (l *live) flush(ctx context.Context, cur hooks.TailCursor) hooks.TailCursor {
	evs, next, err := l.st.Bus.Tail(ctx, cur, liveLimit)
	if err != nil || len(evs) == 0 {
		return cur
	}
	batch := lo.Map(evs, toEvent)
	sortEvents(batch)
	l.emit.Emit(EventActivity, batch)
	return next
}
