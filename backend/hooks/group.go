package hooks

import (
	"slices"
	"sync"
)

// Group keeps a set of registrations made from configuration (shell hooks,
// webhook targets) in line with it: Replace unloads the old contexts and
// installs the new ones when the configuration's signature changed. Items
// describes what is registered, for status.
type Group[T any] struct {
	mu    sync.Mutex
	sig   string
	set   bool
	ctxs  []*Context
	items []T
}

// Replace installs again when sig differs from the last one installed:
// install returns the contexts it registered through, what they are, and
// the registrations it could not make (the rest stay). It reports whether
// it installed.
func (g *Group[T]) Replace(sig string, install func() ([]*Context, []T, error)) (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.set && sig == g.sig {
		return false, nil
	}
	g.unloadLocked()
	ctxs, items, err := install()
	g.sig, g.set, g.ctxs, g.items = sig, true, ctxs, items
	return true, err
}

// Items lists what is registered.
func (g *Group[T]) Items() []T {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.items)
}

// Names lists the subscribers with a hook registered, in order.
func (g *Group[T]) Names() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := []string{}
	for _, c := range g.ctxs {
		if len(c.Hooks()) > 0 {
			out = append(out, c.Name())
		}
	}
	return out
}

// Close unregisters everything.
func (g *Group[T]) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unloadLocked()
	g.sig, g.set = "", false
}

func (g *Group[T]) unloadLocked() {
	for _, c := range g.ctxs {
		c.Unload()
	}
	g.ctxs, g.items = nil, nil
}
