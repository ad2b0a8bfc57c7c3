package proc

import "syscall"

// procAttr puts the child in its own process group (so a kill reaches its
// children too) and has the kernel kill it if the host dies without reaping
// it (SIGKILL, a crash): no plugin outlives Atrium.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
