package cli_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// forker forks two helpers that ignore SIGTERM: one in the plugin's process
// group, one in a session of its own (out of the group), and writes their
// pids to its working folder.
const forker = `
import os, subprocess
loop = 'trap "" TERM; while :; do sleep 0.2; done'
def register(ctx):
    a = subprocess.Popen(['sh', '-c', loop])
    b = subprocess.Popen(['sh', '-c', loop], start_new_session=True)
    with open(os.path.join(ctx.work_dir, 'helpers.tmp'), 'w') as f:
        f.write('%d %d' % (a.pid, b.pid))
    os.rename(os.path.join(ctx.work_dir, 'helpers.tmp'), os.path.join(ctx.work_dir, 'helpers'))
    ctx.register_hook('on_session_delete', lambda **kw: None)
`

// alive reports whether pid runs (a zombie counts as gone).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z")
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serveWithHelpers starts `atrium serve` as a real process on home and
// returns it with the pids of the helpers its plugin forked.
func serveWithHelpers(t *testing.T, home string) (*exec.Cmd, []int) {
	t.Helper()
	pidsFile := filepath.Join(home, "plugins-data", "forker", "helpers")
	_ = os.Remove(pidsFile)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "serve", "--addr", "127.0.0.1:0", "--home", home)
	cmd.Env = append(os.Environ(), "ATRIUM_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	linked := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "token=") {
				close(linked)
			}
		}
	}()
	select {
	case <-linked:
	case <-time.After(30 * time.Second):
		t.Fatal("atrium serve printed no link")
	}
	var pids []int
	waitFor(t, "the plugin's helpers", 30*time.Second, func() bool {
		b, err := os.ReadFile(pidsFile)
		if err != nil {
			return false
		}
		pids = nil
		for _, f := range strings.Fields(string(b)) {
			n, _ := strconv.Atoi(f)
			pids = append(pids, n)
		}
		return len(pids) == 2
	})
	for _, p := range pids {
		if !alive(p) {
			t.Fatalf("helper %d is not running", p)
		}
		t.Cleanup(func() { _ = syscall.Kill(p, syscall.SIGKILL) })
	}
	return cmd, pids
}

// No descendant of a plugin outlives its host: not a helper that ignores
// SIGTERM, in the plugin's group or out of it, after a graceful stop of
// atrium serve or after it is killed with SIGKILL.
func TestPluginDescendantsDieWithTheHost(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := withPlugin(t, "forker", "[on_session_delete]", forker)

	cmd, pids := serveWithHelpers(t, home)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
	for _, p := range pids {
		waitFor(t, "helper "+strconv.Itoa(p)+" gone after a graceful stop", 10*time.Second, func() bool { return !alive(p) })
	}

	cmd, pids = serveWithHelpers(t, home)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for _, p := range pids {
		waitFor(t, "helper "+strconv.Itoa(p)+" gone after SIGKILL of the host", 10*time.Second, func() bool { return !alive(p) })
	}
}
