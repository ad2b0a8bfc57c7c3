//go:build darwin || freebsd || netbsd || openbsd

package cli

import "golang.org/x/sys/unix"

// The requests that read and set a terminal's state here.
const getTermios, setTermios = unix.TIOCGETA, unix.TIOCSETA
