package app

import (
	"context"
	"sync"
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
)

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

// Live timing: deliveries that come fast are batched for batchDelay; the log
// is polled every pollEvery for events written by other processes.
const (
	batchDelay = 150 * time.Millisecond
	pollEvery  = time.Second
	liveLimit  = 500
)

// live forwards hook activity to the emitter, batched.
type live struct {
	st   *stack.Stack
	emit Emitter

	mu      sync.Mutex
	touched map[int64]bool
	wake    chan struct{}
}

func newLive(st *stack.Stack, emit Emitter) *live {
	l := &live{st: st, emit: emit, touched: map[int64]bool{}, wake: make(chan struct{}, 1)}
	st.Bus.OnActivity(l.note)
	return l
}

// note is the bus observer: it only records the seq (it must not block).
func (l *live) note(a hooks.Activity) {
	l.mu.Lock()
	l.touched[a.Seq] = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run emits batches until ctx ends. It starts after the newest event in the
// log: the UI loads history through Activity.Recent.
func (l *live) run(ctx context.Context) {
	last := l.newestSeq(ctx)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
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
		last = l.flush(ctx, last)
	}
}

func (l *live) newestSeq(ctx context.Context) int64 {
	var seq int64
	_ = l.st.DB.Read.WithContext(ctx).Raw(`SELECT COALESCE(MAX(seq), 0) FROM hook_events`).Scan(&seq).Error
	return seq
}

// flush emits the events after last and those whose deliveries changed.
func (l *live) flush(ctx context.Context, last int64) int64 {
	l.mu.Lock()
	seqs := lo.Keys(l.touched)
	l.touched = map[int64]bool{}
	l.mu.Unlock()
	out := map[int64]EventDTO{}
	fresh, err := hooks.ListEvents(ctx, l.st.DB, hooks.LogFilter{AfterSeq: last, Limit: liveLimit})
	if err != nil {
		return last
	}
	for _, e := range fresh {
		out[e.Seq] = toEvent(e, 0)
		last = max(last, e.Seq)
	}
	old := lo.Filter(seqs, func(s int64, _ int) bool { _, ok := out[s]; return !ok && s <= last })
	if len(old) > 0 {
		changed, err := hooks.ListEvents(ctx, l.st.DB, hooks.LogFilter{Seqs: old, Limit: len(old)})
		if err == nil {
			for _, e := range changed {
				out[e.Seq] = toEvent(e, 0)
			}
		}
	}
	if len(out) == 0 {
		return last
	}
	batch := lo.Values(out)
	sortEvents(batch)
	l.emit.Emit(EventActivity, batch)
	return last
}
