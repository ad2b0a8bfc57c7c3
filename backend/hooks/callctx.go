package hooks

import (
	"context"
	"sync"
	"time"
)

// callCtx is the context a callback receives. It is cheaper than
// context.WithTimeout (no timer of its own, and the Done channel is made only
// if the callback asks for it): the bus's per-call timer cancels it.
type callCtx struct {
	context.Context // parent, for values
	deadline        time.Time

	mu   sync.Mutex
	done chan struct{}
	err  error
}

func (c *callCtx) Deadline() (time.Time, bool) { return c.deadline, !c.deadline.IsZero() }

func (c *callCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *callCtx) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
}
