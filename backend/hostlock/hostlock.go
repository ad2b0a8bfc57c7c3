// Package hostlock is the lock a long-lived process holds while it runs a
// profile's gateway or its scheduler (the window, `atrium serve`, `atrium
// gateway run`), and the flock under pluginhost's host and spawn locks: an
// exclusive advisory lock on a file under <home>/run/,
// released by the kernel when the process ends, however it ends. The file
// says who holds it, so a process that stands by can tell the user.
package hostlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Holder is who holds a lock.
type Holder struct {
	PID     int       `json:"pid"`
	Process string    `json:"process"` // "the desktop window", "atrium serve", ...
	Since   time.Time `json:"since"`
}

// String is the holder for people.
func (h Holder) String() string {
	if h.Process == "" {
		return fmt.Sprintf("process %d", h.PID)
	}
	return fmt.Sprintf("%s (pid %d)", h.Process, h.PID)
}

// ErrHeld says another process holds the lock.
var ErrHeld = errors.New("held by another process")

// Lock is a held lock.
type Lock struct {
	f    *os.File
	path string
}

// Try takes the lock at path without waiting. When another process holds
// it, the error wraps ErrHeld and the holder it wrote is returned.
func Try(path string, me Holder) (*Lock, Holder, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, Holder{}, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, Holder{}, fmt.Errorf("open %s: %w", path, err)
	}
	if err := lockFile(f); err != nil {
		var h Holder
		if b, rerr := os.ReadFile(path); rerr == nil {
			_ = json.Unmarshal(b, &h)
		}
		_ = f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, h, fmt.Errorf("%s: %w", path, ErrHeld)
		}
		return nil, h, fmt.Errorf("lock %s: %w", path, err)
	}
	if me.PID == 0 {
		me.PID = os.Getpid()
	}
	if me.Since.IsZero() {
		me.Since = time.Now().UTC()
	}
	b, _ := json.Marshal(me)
	_ = f.Truncate(0)
	_, _ = f.WriteAt(append(b, '\n'), 0)
	return &Lock{f: f, path: path}, me, nil
}

// Holding reads who holds the lock at path; false when nobody does.
// It takes a shared lock for an instant and writes nothing (a read-only
// home can be asked).
func Holding(path string) (Holder, bool) {
	f, err := os.Open(path)
	if err != nil {
		return Holder{}, false
	}
	defer f.Close()
	if err := probeFile(f); err == nil {
		_ = unlockFile(f)
		return Holder{}, false
	} else if !errors.Is(err, errWouldBlock) {
		return Holder{}, false
	}
	var h Holder
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &h)
	}
	return h, true
}

// Release gives the lock up.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = unlockFile(l.f)
	_ = l.f.Close()
	l.f = nil
}
