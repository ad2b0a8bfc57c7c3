//go:build unix && !linux

package proc

import "syscall"

// procAttr puts the child in its own process group. Without Linux's
// parent-death signal, a child of a host killed with SIGKILL sees its stdin
// close and is expected to exit (docs/plugin-protocol.md).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
