//go:build unix && !linux

package proc

import (
	"os"
	"os/exec"
	"syscall"
)

// GuardCommand is the hidden first argument of a plugin guard (Linux only;
// elsewhere a plugin runs directly in its own process group).
const GuardCommand = "__plugin-guard"

// UseGuard does nothing outside Linux: there is no subreaper to build on.
func UseGuard(string) {}

// Guard runs argv directly (no guard outside Linux).
func Guard(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return 2
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		return 127
	}
	return 0
}

func command(argv []string) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = procAttr()
	return cmd
}

func stopTree(pid int, _ <-chan struct{}) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

func reapGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
