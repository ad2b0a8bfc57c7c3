package app

import (
	"context"
	"sort"
	"sync"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/turns"
)

// asking is what the window and the dashboard ask the person and wait
// for (approvals, the clarify tool's questions): a dialog for each
// question through the emitter (the window, or every open page of the
// dashboard), the first answer taken, the dialog closed everywhere once
// it is answered, out of time, or its turn ended. D is the dialog's DTO,
// A the answer.
type asking[D, A any] struct {
	// pendingEvent carries the DTO of a question asked, doneEvent how it
	// ended (done makes its DTO of the question's id and the outcome).
	pendingEvent, doneEvent string
	done                    func(id, outcome string) any
	mu                      sync.Mutex
	emit                    Emitter
	pending                 map[string]*asked[D, A]
}

// asked is one question waiting.
type asked[D, A any] struct {
	id     string
	dto    D
	answer chan A
	// keep, when set, is what an answer may have to do before it is taken
	// (an approval's "always": keep the rule); see take.
	keep func() error
}

func newAsking[D, A any](pendingEvent, doneEvent string, done func(id, outcome string) any) asking[D, A] {
	return asking[D, A]{pendingEvent: pendingEvent, doneEvent: doneEvent, done: done, emit: nopEmitter{}, pending: map[string]*asked[D, A]{}}
}

func (a *asking[D, A]) setEmitter(e Emitter) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.emit = e
}

// ask shows q's dialog and waits for its answer: within timeout (0: no
// limit; then turns.ErrNoAnswer, done "timeout"), while ctx lives (done
// "cancelled"). outcome names how an answer ended it in the done event.
func (a *asking[D, A]) ask(ctx context.Context, q *asked[D, A], timeout time.Duration, outcome func(A) string) (A, error) {
	q.answer = make(chan A, 1)
	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	a.mu.Lock()
	a.pending[q.id] = q
	emit := a.emit
	a.mu.Unlock()
	ended := "cancelled"
	defer func() {
		a.forget(q.id)
		emit.Emit(a.doneEvent, a.done(q.id, ended))
	}()
	emit.Emit(a.pendingEvent, q.dto)
	var none A
	select {
	case answer := <-q.answer:
		ended = outcome(answer)
		return answer, nil
	case <-expired:
		// An answer taken as time ran out counts (an "always" it carried
		// is kept already).
		a.forget(q.id)
		select {
		case answer := <-q.answer:
			ended = outcome(answer)
			return answer, nil
		default:
		}
		ended = "timeout"
		return none, turns.ErrNoAnswer
	case <-ctx.Done():
		return none, ctx.Err()
	}
}

func (a *asking[D, A]) forget(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pending, id)
}

// take gives question id its answer, which decide makes of the question
// (an error refuses it: the question still waits, for another answer);
// the first answer is the one. what names the question in the error of
// one that waits no more.
func (a *asking[D, A]) take(id, what string, decide func(q *asked[D, A]) (A, error)) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	q, ok := a.pending[id]
	if !ok {
		return apperr.New(apperr.NotFound, "no %s %s is waiting (answered already, or it ran out of time)", what, id)
	}
	answer, err := decide(q)
	if err != nil {
		return err
	}
	delete(a.pending, id)
	q.answer <- answer // buffered, and only the one who took it from pending sends
	return nil
}

// list is what waits, oldest first.
func (a *asking[D, A]) list() []D {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := make([]string, 0, len(a.pending))
	for id := range a.pending {
		ids = append(ids, id)
	}
	sort.Strings(ids) // version 7 ids: in the order asked
	out := make([]D, 0, len(ids))
	for _, id := range ids {
		out = append(out, a.pending[id].dto)
	}
	return out
}
