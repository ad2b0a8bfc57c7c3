package turns

import (
	"context"
	"sync"
	"time"
)

// WithBudget is a turn's time limit that does not count the time the turn
// waits for a person: while an approval or a clarify question waits, the
// clock stands still, and it runs on with what was left once the person
// has answered (or the question has timed out). A turn in the window is
// thus bounded by the model's and the tools' time, not by how long its
// person took to come back to the screen.
//
// When the budget is spent the context ends as a context.WithTimeout's
// does: Err is context.DeadlineExceeded. Deadline reports when that will
// be if nobody is waited for from now on, and no deadline while someone
// is. The parent's end ends it too. cancel releases its timer.
func WithBudget(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	b := &budget{Context: parent, done: make(chan struct{}), left: d}
	if err := parent.Err(); err != nil {
		b.end(err)
		return b, func() {}
	}
	b.mu.Lock()
	b.run()
	b.mu.Unlock()
	stop := context.AfterFunc(parent, func() { b.end(parent.Err()) })
	return b, func() {
		stop()
		b.end(context.Canceled)
	}
}

type budgetKey struct{}

type budget struct {
	context.Context // parent, for values

	mu      sync.Mutex
	done    chan struct{}
	err     error
	left    time.Duration // while the clock stands, what is left
	since   time.Time     // while it runs, when it started again
	timer   *time.Timer
	waiting int // people waited for now (parallel tool calls may ask at once)
}

func (b *budget) Value(key any) any {
	if key == (budgetKey{}) {
		return b
	}
	return b.Context.Value(key)
}

func (b *budget) Done() <-chan struct{} { return b.done }

func (b *budget) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

func (b *budget) Deadline() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.waiting > 0 || b.err != nil {
		return time.Time{}, false
	}
	return b.since.Add(b.left), true
}

// run starts the clock on what is left; b.mu is held.
func (b *budget) run() {
	if b.err != nil {
		return
	}
	b.since = time.Now()
	b.timer = time.AfterFunc(b.left, func() { b.end(context.DeadlineExceeded) })
}

func (b *budget) end(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return
	}
	b.err = err
	if b.timer != nil {
		b.timer.Stop()
	}
	close(b.done)
}

// hold stops the clock until release is called; holds nest.
func (b *budget) hold() (release func()) {
	b.mu.Lock()
	if b.waiting == 0 && b.err == nil {
		b.timer.Stop()
		b.left -= time.Since(b.since)
	}
	b.waiting++
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.waiting--
			if b.waiting == 0 {
				b.run()
			}
		})
	}
}

// waitingForPerson stops ctx's turn budgets, if it has any, while the turn
// waits for a person; the caller calls the returned func when the wait is
// over. A subagent's turn has its own budget inside its parent turn's:
// both stand still.
func waitingForPerson(ctx context.Context) (release func()) {
	var releases []func()
	for b, ok := ctx.Value(budgetKey{}).(*budget); ok; b, ok = b.Context.Value(budgetKey{}).(*budget) {
		releases = append(releases, b.hold())
	}
	return func() {
		for _, r := range releases {
			r()
		}
	}
}

// Hold stops ctx's turn budgets while the turn waits for something that is
// not its own work (another surface's turn in its session, say); the
// caller calls release when the wait is over.
func Hold(ctx context.Context) (release func()) { return waitingForPerson(ctx) }

// pausesForPerson says whether ctx's time limit, if any, stands still while
// a person is waited for (WithBudget).
func pausesForPerson(ctx context.Context) bool {
	_, ok := ctx.Value(budgetKey{}).(*budget)
	return ok
}
