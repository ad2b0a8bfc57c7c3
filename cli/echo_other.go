//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd

package cli

import "errors"

// noEcho cannot turn the echo off here: nothing is asked unseen.
func noEcho(int) (func(), error) { return nil, errors.New("no terminal echo control on this system") }
