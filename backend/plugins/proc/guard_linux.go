package proc

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// GuardCommand is the hidden first argument that makes the atrium binary a
// plugin guard (see Guard). A binary that runs plugins calls UseGuard with
// its own path and hands this argument to Guard before anything else.
const GuardCommand = "__plugin-guard"

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

var guard struct {
	mu  sync.Mutex
	exe string
}

// UseGuard makes every plugin this process starts run under a guard: exe
// (this binary) re-executed as `exe __plugin-guard -- argv...`. Without it
// (tests of this package), a plugin runs directly in its own process group,
// which the host kills on stop, but a descendant of a plugin can outlive a
// host killed with SIGKILL.
func UseGuard(exe string) {
	guard.mu.Lock()
	defer guard.mu.Unlock()
	guard.exe = exe
}

func guardExe() string {
	guard.mu.Lock()
	defer guard.mu.Unlock()
	return guard.exe
}

// command builds the exec.Cmd that starts argv: under the guard when one is
// set, else directly in its own process group with a parent-death signal.
func command(argv []string) *exec.Cmd {
	if exe := guardExe(); exe != "" {
		prog, err := exec.LookPath(argv[0])
		if err != nil {
			return exec.Command(argv[0], argv[1:]...) // Start reports the missing program, as without a guard
		}
		cmd := exec.Command(exe, append([]string{GuardCommand, "--", prog}, argv[1:]...)...)
		// The guard must outlive its host by a moment to kill the plugin's
		// tree, so its parent-death signal is one it handles.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
		return cmd
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = procAttr()
	return cmd
}

// stopTree ends the child's whole tree. A guard is asked with SIGTERM (it
// kills the plugin's group and every descendant, then exits) and its group
// is killed if it has not gone within a moment; a plain child's group is
// killed at once.
func stopTree(pid int, dead <-chan struct{}) {
	if guardExe() == "" {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	go func() {
		select {
		case <-dead:
		case <-time.After(3 * time.Second):
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}()
}

// reapGroup kills what is left of a child's process group once the child
// itself exited (a helper it forked that ignores SIGTERM, say): a plugin's
// processes live and die together.
func reapGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// Guard runs a plugin under a guard and returns the exit code for the guard
// process: it starts argv (after "--") in a process group of its own, is the
// subreaper of everything the plugin forks, and when the plugin exits, when
// it is told to stop (SIGTERM, SIGINT) or when its host dies (parent-death
// signal, or its parent changing), it kills the plugin's group and every
// descendant left, reaps them, and exits as the plugin did. The plugin
// inherits stdin, stdout and stderr: the guard never reads or writes them.
func Guard(args []string) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "atrium plugin guard: no command")
		return 2
	}
	parent := os.Getppid()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintf(os.Stderr, "atrium plugin guard: cannot become a subreaper: %v\n", errno)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGCHLD)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "atrium plugin guard: %v\n", err)
		return 127
	}
	// The plugin holds the pipes now; the guard keeps only stderr.
	_ = os.Stdin.Close()
	_ = os.Stdout.Close()
	g := &guarded{pid: cmd.Process.Pid}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for !g.exited {
		select {
		case s := <-sigs:
			if s != syscall.SIGCHLD {
				g.killTree()
			}
		case <-tick.C:
			if os.Getppid() != parent {
				g.killTree() // the host died without its signal reaching us
			}
		}
		g.reap()
	}
	g.killTree()
	if g.status.Signaled() {
		signal.Reset(g.status.Signal())
		_ = syscall.Kill(os.Getpid(), g.status.Signal())
		time.Sleep(100 * time.Millisecond)
		return 128 + int(g.status.Signal())
	}
	return g.status.ExitStatus()
}

// guarded is the plugin a guard runs: its pid (and process group) and, once
// reaped, how it ended.
type guarded struct {
	pid    int
	exited bool
	status syscall.WaitStatus
}

// reap collects every child that exited: the plugin, or an orphan that was
// reparented to the guard.
func (g *guarded) reap() {
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if wpid <= 0 || err != nil {
			return
		}
		if wpid == g.pid {
			g.status, g.exited = ws, true
		}
	}
}

// killTree kills the plugin's process group and every process left below
// the guard (orphans are reparented to it, the subreaper), until none is
// left, reaping each.
func (g *guarded) killTree() {
	for range 100 {
		_ = syscall.Kill(-g.pid, syscall.SIGKILL)
		kids := children(os.Getpid())
		for _, k := range kids {
			_ = syscall.Kill(k, syscall.SIGKILL)
		}
		g.reap()
		if len(kids) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// children lists the pids whose parent is pid (/proc/PID/task/*/children).
func children(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}
