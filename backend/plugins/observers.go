package plugins

import (
	"slices"
	"sync"
)

// observers is a list of callbacks, safe for concurrent use; each call
// runs outside the lock.
type observers[T any] struct {
	mu  sync.Mutex
	fns []func(T)
}

func (o *observers[T]) add(fn func(T)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fns = append(o.fns, fn)
}

func (o *observers[T]) notify(v T) {
	o.mu.Lock()
	fns := slices.Clone(o.fns)
	o.mu.Unlock()
	for _, fn := range fns {
		fn(v)
	}
}
