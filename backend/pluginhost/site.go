// Package pluginhost decides which process is a profile's plugin host and
// connects the others to it. Who hosts is an advisory lock (flock) on
// <home>/run/host.lock: the holder runs the profile's one instance of each
// plugin; a host that dies, SIGKILL included, releases it with its file
// descriptors. The others reach it through a Unix socket,
// <home>/run/host.sock (folder 0700, socket 0600, the peer's uid checked),
// one JSON request per connection: nothing listens on the network.
package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/hostlock"
)

// Kinds of host.
const (
	KindBackground = "background" // started by a command; exits when idle
	KindWindow     = "window"
	KindServe      = "serve"
	KindGateway    = "gateway" // atrium gateway run: hosts while it runs, like serve
)

// Info is what a host says about itself.
type Info struct {
	PID     int       `json:"pid"`
	Kind    string    `json:"kind"`
	Process string    `json:"process"` // for people: "the desktop window", "atrium serve", "a background host"
	Since   time.Time `json:"since"`
	Profile string    `json:"profile"`
	Version string    `json:"version"`
	// IdleMinutes is how long a background host stays without work (0 for
	// the window and serve: they host while they run).
	IdleMinutes float64 `json:"idle_minutes,omitempty"`
}

// Site is where a profile's host lives: <home>/run.
type Site struct{ Dir string }

// NewSite is the site of a profile whose data folder is home.
func NewSite(home string) Site { return Site{Dir: filepath.Join(home, "run")} }

func (s Site) lockPath() string  { return filepath.Join(s.Dir, "host.lock") }
func (s Site) spawnPath() string { return filepath.Join(s.Dir, "host-spawn.lock") }

// SocketPath is the host's socket.
func (s Site) SocketPath() string { return filepath.Join(s.Dir, "host.sock") }

// ensureDir makes <home>/run, readable by the user only.
func (s Site) ensureDir() error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", s.Dir, err)
	}
	return os.Chmod(s.Dir, 0o700)
}

// ErrHeld says another process holds the lock (the same error as the
// gateway's and the scheduler's locks: one flock primitive, hostlock).
var ErrHeld = hostlock.ErrHeld

// Lock is a held flock. Its descriptor is close-on-exec: plugin children
// never inherit it.
type Lock struct{ l *hostlock.Lock }

func (s Site) tryFlock(path string) (*Lock, error) {
	if err := s.ensureDir(); err != nil {
		return nil, err
	}
	l, _, err := hostlock.Try(path, hostlock.Holder{})
	if err != nil {
		return nil, err
	}
	return &Lock{l: l}, nil
}

// TryLock takes the host lock, or returns ErrHeld.
func (s Site) TryLock() (*Lock, error) { return s.tryFlock(s.lockPath()) }

// Held tells whether some process holds the host lock now.
func (s Site) Held() bool {
	l, err := s.TryLock()
	if err != nil {
		return errors.Is(err, ErrHeld)
	}
	l.Release()
	return false
}

// Release gives the lock up.
func (l *Lock) Release() {
	if l == nil {
		return
	}
	l.l.Release()
}

// lockWait takes path's lock, polling until ctx ends.
func (s Site) lockWait(ctx context.Context, path string) (*Lock, error) {
	for {
		l, err := s.tryFlock(path)
		if !errors.Is(err, ErrHeld) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Ensure returns the running host's Info, starting one with start (which
// must spawn a background host and return) when none answers. Starting is
// serialised by a second lock, so commands racing to start a host start
// one; a window or serve taking over holds it too (Acquire). It waits for
// the host's socket to answer, bounded by ctx.
func (s Site) Ensure(ctx context.Context, c *Client, start func() error) (Info, error) {
	if in, err := c.Hello(ctx); err == nil {
		return in, nil
	}
	spawn, err := s.lockWait(ctx, s.spawnPath())
	if err != nil {
		return Info{}, apperr.Wrap(apperr.Internal, err, "wait to start the plugin host")
	}
	defer spawn.Release()
	if in, err := c.Hello(ctx); err == nil {
		return in, nil
	}
	if !s.Held() {
		if err := start(); err != nil {
			return Info{}, apperr.Wrap(apperr.Internal, err, "start the plugin host")
		}
	}
	for {
		if in, err := c.Hello(ctx); err == nil {
			return in, nil
		}
		select {
		case <-ctx.Done():
			return Info{}, apperr.Wrap(apperr.Internal, ctx.Err(), "the plugin host did not answer on %s", s.SocketPath())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Acquire takes the host lock for a window or serve. When an idle
// background host holds it, it asks that host to hand over (it finishes its
// deliveries, records where each plugin stands and exits) and takes the
// lock then. When a window or serve holds it, it returns ErrHeld with that
// host's Info: the caller is a client of it.
func (s Site) Acquire(ctx context.Context, c *Client) (*Lock, Info, error) {
	spawn, err := s.lockWait(ctx, s.spawnPath())
	if err != nil {
		return nil, Info{}, apperr.Wrap(apperr.Internal, err, "wait for the plugin host lock")
	}
	defer spawn.Release()
	for {
		l, err := s.TryLock()
		if err == nil {
			return l, Info{}, nil
		}
		if !errors.Is(err, ErrHeld) {
			return nil, Info{}, err
		}
		in, herr := c.Hello(ctx)
		switch {
		case herr != nil:
			// Held, but not answering yet (starting) or any more (exiting).
		case in.Kind != KindBackground:
			return nil, in, ErrHeld
		default:
			if err := c.Handover(ctx); err != nil && ctx.Err() == nil {
				// It may have exited before answering; try the lock again.
				_ = err
			}
		}
		select {
		case <-ctx.Done():
			return nil, in, apperr.Wrap(apperr.Internal, ctx.Err(), "take over from the plugin host")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
