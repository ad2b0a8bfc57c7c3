//go:build linux || darwin || freebsd || netbsd || openbsd

package cli

import "golang.org/x/sys/unix"

// noEcho turns the terminal's echo off (its line editing kept), and
// returns what turns it back on.
func noEcho(fd int) (func(), error) {
	t, err := unix.IoctlGetTermios(fd, getTermios)
	if err != nil {
		return nil, err
	}
	old := *t
	t.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(fd, setTermios, t); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, setTermios, &old) }, nil
}
