//go:build !unix

package hostlock

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("would block")

// Without flock, the lock is always granted: one host per profile is the
// user's care on such systems.
func lockFile(*os.File) error   { return nil }
func unlockFile(*os.File) error { return nil }
func probeFile(*os.File) error  { return nil }
