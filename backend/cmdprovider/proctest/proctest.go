// Package proctest helps tests of the command providers see a process
// end: they wait on the condition, never a fixed time.
package proctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"atrium/backend/cmdprovider"
)

// WaitFor waits for cond, failing t after 20 s.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Gone reports whether process pid has ended (a zombie has).
func Gone(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err == nil {
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) {
			return b[i+2] == 'Z' || b[i+2] == 'X'
		}
	}
	if os.IsNotExist(err) {
		return true
	}
	return syscall.Kill(pid, 0) != nil
}

// Machine is where a test's commands run: from Environ's environment,
// finding programs only in bin ("": nowhere).
func Machine(t testing.TB, env map[string]string, bin string) cmdprovider.Machine {
	m := cmdprovider.Machine{Environ: Environ(t, env), LookPath: func(string) (string, error) { return "", exec.ErrNotFound }}
	if bin != "" {
		m.BinDirs = []string{bin}
	}
	return m
}

// Environ is the environment a command of a test starts from: this
// process's PATH, a home of its own, and env (nothing else).
func Environ(t testing.TB, env map[string]string) func() []string {
	home := t.TempDir()
	return func() []string {
		out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
		for k, v := range env {
			out = append(out, k+"="+v)
		}
		return out
	}
}

// Script writes an executable shell script, dir/name, and returns its
// path.
func Script(t testing.TB, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// Hang is a command that starts a child which would sleep for five
// minutes, writes the child's pid to pidFile, prints a line and waits.
func Hang(pidFile string) string {
	return `sleep 300 & echo $! > '` + strings.ReplaceAll(pidFile, `'`, `'\''`) + `'; echo started; wait`
}

// WaitKilled waits for the child Hang started (its pid in pidFile) to be
// gone, failing t after 20 s.
func WaitKilled(t testing.TB, pidFile string) {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", pidFile, err)
	}
	WaitFor(t, "the child it started gone", func() bool { return Gone(pid) })
}
