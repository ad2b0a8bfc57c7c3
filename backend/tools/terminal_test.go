package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func term(t *testing.T, dir string, args map[string]any) (map[string]any, *Call) {
	t.Helper()
	return runTool(t, terminalTool(), dir, Settings{}, args)
}

// gone says whether process pid has ended (a zombie nobody reaps counts:
// it runs nothing).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, not waiting for one
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %q: %v", b, err)
	}
	return pid
}

// A command's output, exit code and exit-code meaning reach the model; a failing command is no error.
func TestTerminalResults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, command string
		output        string // exact, or with contains
		contains      []string
		code          int
		meaning       string
	}{
		{name: "output and success", command: "echo hello; echo world", output: "hello\nworld", code: 0},
		{name: "non-zero exit is no error", command: "echo partial; exit 7", output: "partial", code: 7},
		{name: "grep without match", command: "printf 'a\\nb\\n' | grep zzz", output: "", code: 1, meaning: "No matches found (not an error)"},
		{name: "diff differs", command: "diff <(echo a) <(echo b) >/dev/null", code: 1, meaning: "Files differ (expected, not an error)"},
		{name: "test false", command: "test -e /nonexistent-atrium", code: 1, meaning: "Condition evaluated to false (expected, not an error)"},
		{name: "exit 1 of another command has no meaning", command: "false", code: 1},
		{name: "stderr included", command: "echo out; echo err >&2", contains: []string{"out", "err"}, code: 0},
		{name: "command not found", command: "atrium-no-such-command-xyz", contains: []string{"not found"}, code: 127},
		{name: "ansi escapes stripped", command: `printf '\033[31mred\033[0m \033]0;title\007plain'`, output: "red plain", code: 0},
		{name: "trailing blank lines trimmed", command: "echo hi; echo; echo", output: "hi", code: 0},
		{name: "invalid utf-8 made valid", command: `printf 'a\377b'`, output: "a\uFFFDb", code: 0},
		{name: "pager is cat", command: `echo "$PAGER $GIT_PAGER"`, output: "cat cat", code: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, _ := term(t, t.TempDir(), map[string]any{"command": tc.command})
			if v, ok := m["error"]; !ok || v != nil {
				t.Errorf("error = %v (present %v), want null", v, ok)
			}
			if got := num(t, m, "exit_code"); got != tc.code {
				t.Errorf("exit_code %d, want %d (output %q)", got, tc.code, str(m, "output"))
			}
			out := str(m, "output")
			if tc.contains == nil && out != tc.output {
				t.Errorf("output %q, want %q", out, tc.output)
			}
			for _, s := range tc.contains {
				if !strings.Contains(out, s) {
					t.Errorf("output %q lacks %q", out, s)
				}
			}
			if got := str(m, "exit_code_meaning"); got != tc.meaning {
				t.Errorf("exit_code_meaning %q, want %q", got, tc.meaning)
			}
		})
	}
}

// Calls the terminal refuses say why, with exit code -1, and run nothing.
func TestTerminalRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"empty command", map[string]any{"command": "  "}, "command is required"},
		{"no command", map[string]any{}, "command is required"},
		{"background without a place for processes", map[string]any{"command": "touch ran", "background": true}, "background processes are not available here"},
		{"background as text", map[string]any{"command": "touch ran", "background": "true"}, "background processes are not available here"},
		{"timeout above 600", map[string]any{"command": "touch ran", "timeout": 601}, "above the maximum of 600"},
		{"missing workdir", map[string]any{"command": "touch ran", "workdir": "no/such/dir"}, "does not exist"},
		{"workdir is a file", map[string]any{"command": "touch ran", "workdir": "file.txt"}, "not a folder"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			putFile(t, filepath.Join(dir, "file.txt"), "x")
			m, _ := term(t, dir, tc.args)
			if !strings.Contains(str(m, "error"), tc.want) {
				t.Errorf("error %q, want it to say %q", str(m, "error"), tc.want)
			}
			if num(t, m, "exit_code") != -1 {
				t.Errorf("exit_code %v, want -1", m["exit_code"])
			}
			if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
				t.Error("the refused command ran")
			}
		})
	}
}

// A cd carries over to the next command (NewDir is its real path), even when the command exits non-zero.
func TestTerminalCdSetsNewDir(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sub, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		command string
		code    int
		newDir  string
	}{
		{"cd sub && pwd", 0, sub},
		{"cd sub; exit 3", 3, sub},
		{"cd link", 0, sub}, // the real path, not the link's
		{"echo stay", 0, dir},
	}
	for _, tc := range cases {
		m, c := term(t, dir, map[string]any{"command": tc.command})
		if num(t, m, "exit_code") != tc.code || c.NewDir != tc.newDir {
			t.Errorf("%q: exit %v NewDir %q, want %d %q", tc.command, m["exit_code"], c.NewDir, tc.code, tc.newDir)
		}
	}
	// The next command, started in NewDir, is there.
	m, _ := term(t, sub, map[string]any{"command": "pwd -P"})
	if str(m, "output") != sub {
		t.Fatalf("pwd in NewDir: %q", str(m, "output"))
	}
}

// workdir runs one command in another folder, relative or absolute.
func TestTerminalWorkdir(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	other := realDir(t)
	for _, tc := range []struct{ workdir, want string }{
		{"a/b", sub},
		{"./a/../a/b", sub},
		{other, other},
		{"", dir},
	} {
		m, c := term(t, dir, map[string]any{"command": "pwd -P", "workdir": tc.workdir})
		if str(m, "output") != tc.want || c.NewDir != tc.want {
			t.Errorf("workdir %q: pwd %q NewDir %q, want %q", tc.workdir, str(m, "output"), c.NewDir, tc.want)
		}
	}
}

// A command past its timeout is stopped with its process group and reported with exit code 124.
func TestTerminalTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	start := time.Now()
	m, _ := term(t, dir, map[string]any{"command": "echo begun; sleep 30 & echo $! > pid; wait", "timeout": 1})
	if took := time.Since(start); took > 8*time.Second {
		t.Fatalf("a 1 s timeout took %v", took)
	}
	if num(t, m, "exit_code") != exitCodeTimeout {
		t.Fatalf("exit_code %v, want 124", m["exit_code"])
	}
	if !strings.Contains(str(m, "error"), "timed out after 1 seconds") {
		t.Fatalf("error %q", str(m, "error"))
	}
	if str(m, "output") != "begun" {
		t.Errorf("output before the timeout lost: %q", str(m, "output"))
	}
	pid := readPid(t, pidFile)
	waitFor(t, 5*time.Second, fmt.Sprintf("the background sleep (pid %d) ending", pid), func() bool { return gone(pid) })
}

// The timeout the model names as text is honoured too.
func TestTerminalTimeoutAsText(t *testing.T) {
	t.Parallel()
	m, _ := term(t, t.TempDir(), map[string]any{"command": "sleep 30", "timeout": "1"})
	if num(t, m, "exit_code") != exitCodeTimeout {
		t.Fatalf("exit_code %v, want 124", m["exit_code"])
	}
}

// terminal.timeout is a command's time when the model names none.
func TestTerminalSettingsTimeout(t *testing.T) {
	t.Parallel()
	c := &Call{Args: map[string]any{"command": "sleep 30"}, Dir: t.TempDir(), Settings: Settings{Timeout: 500 * time.Millisecond}}
	start := time.Now()
	out := terminalTool().Run(context.Background(), c)
	if !strings.Contains(out, `"exit_code":124`) || time.Since(start) > 8*time.Second {
		t.Fatalf("after %v: %s", time.Since(start), out)
	}
}

// Stopping the turn stops its command and its children, with exit code 130.
func TestTerminalCancelledWithTurn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		m    map[string]any
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		out := terminalTool().Run(ctx, &Call{Args: map[string]any{"command": "sleep 30 & echo $! > pid; wait"}, Dir: dir})
		var m map[string]any
		_ = json.Unmarshal([]byte(out), &m)
		done <- result{m, time.Since(start)}
	}()
	pidFile := filepath.Join(dir, "pid")
	waitFor(t, 10*time.Second, "the command starting", func() bool {
		b, err := os.ReadFile(pidFile)
		return err == nil && strings.HasSuffix(string(b), "\n")
	})
	cancel()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled command did not return")
	}
	if r.m == nil || r.m["exit_code"] != float64(exitCodeInterrupted) || !strings.Contains(str(r.m, "error"), "stopped with the turn") {
		t.Fatalf("result %v", r.m)
	}
	pid := readPid(t, pidFile)
	waitFor(t, 5*time.Second, "the background sleep ending", func() bool { return gone(pid) })
}

// A flooding command returns about MaxOutput bytes, its head and tail, and counts what was left out.
func TestTerminalFloodCapped(t *testing.T) {
	t.Parallel()
	m, _ := term(t, t.TempDir(), map[string]any{"command": "echo FIRST; yes | head -c 5000000; echo LAST"})
	out := str(m, "output")
	if len(out) > MaxOutput+200 {
		t.Fatalf("output is %d bytes, above about %d", len(out), MaxOutput)
	}
	if !strings.HasPrefix(out, "FIRST\ny\n") || !strings.HasSuffix(out, "y\nLAST") {
		t.Fatalf("head or tail lost: %q ... %q", out[:20], out[len(out)-20:])
	}
	total := len("FIRST\n") + 5_000_000 + len("LAST\n")
	marker := fmt.Sprintf("[... %d bytes of output left out ...]", total-MaxOutput)
	if !strings.Contains(out, marker) {
		t.Fatalf("no %q in the output", marker)
	}
	if num(t, m, "exit_code") != 0 {
		t.Fatalf("exit_code %v", m["exit_code"])
	}
}

// Output just under the cap is given whole, with no marker.
func TestTerminalOutputUnderCapWhole(t *testing.T) {
	t.Parallel()
	m, _ := term(t, t.TempDir(), map[string]any{"command": fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x", MaxOutput)})
	out := str(m, "output")
	if len(out) != MaxOutput || strings.Contains(out, "left out") {
		t.Fatalf("output %d bytes, marker %v", len(out), strings.Contains(out, "left out"))
	}
}

// A background process holding the output open does not hold the command's result back.
func TestTerminalBackgroundChildDoesNotHold(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	start := time.Now()
	m, c := term(t, dir, map[string]any{"command": "sleep 30 & echo $! > pid; echo started"})
	took := time.Since(start)
	pid := readPid(t, filepath.Join(dir, "pid"))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	if took > 10*time.Second {
		t.Fatalf("the command waited %v for its background child", took)
	}
	if str(m, "output") != "started" || num(t, m, "exit_code") != 0 || m["error"] != nil {
		t.Fatalf("result %v", m)
	}
	if c.NewDir == "" {
		t.Error("NewDir not reported")
	}
}

// Commands see Settings.Env as their whole environment, and nothing of this process's beyond it.
func TestTerminalEnv(t *testing.T) {
	t.Parallel()
	hidden := ""
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "PWD", "OLDPWD", "SHLVL", "_", "":
			continue
		}
		hidden = k
		break
	}
	if hidden == "" {
		t.Skip("this process has no environment variable to leave out")
	}
	s := Settings{Env: []string{"PATH=" + os.Getenv("PATH"), "ATRIUM_TEST_SEEN=yes-seen"}}
	command := fmt.Sprintf(`echo "$ATRIUM_TEST_SEEN"; printenv %s || echo absent`, hidden)
	m, _ := runTool(t, terminalTool(), t.TempDir(), s, map[string]any{"command": command})
	if got := str(m, "output"); got != "yes-seen\nabsent" {
		t.Fatalf("output %q, want the Env variable seen and %s absent", got, hidden)
	}
	// nil Env is this process's environment.
	m, _ = term(t, t.TempDir(), map[string]any{"command": "printenv " + hidden})
	if str(m, "output") != os.Getenv(hidden) {
		t.Fatalf("with nil Env, %s = %q, want %q", hidden, str(m, "output"), os.Getenv(hidden))
	}
}

// Commands running at once each report their own NewDir.
func TestTerminalConcurrentNewDirs(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	const n = 6
	type res struct {
		i   int
		dir string
	}
	out := make(chan res, n)
	for i := range n {
		sub := filepath.Join(dir, fmt.Sprint("d", i))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		go func() {
			c := &Call{Args: map[string]any{"command": fmt.Sprintf("cd d%d", i)}, Dir: dir}
			terminalTool().Run(context.Background(), c)
			out <- res{i, c.NewDir}
		}()
	}
	for range n {
		r := <-out
		if want := filepath.Join(dir, fmt.Sprint("d", r.i)); r.dir != want {
			t.Errorf("command %d: NewDir %q, want %q", r.i, r.dir, want)
		}
	}
}

// The meaning of an exit 1 that is no failure follows the pipeline's last command.
func TestExitMeaning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		command string
		code    int
		want    string
	}{
		{"grep x f", 1, "No matches found (not an error)"},
		{"cat f | /usr/bin/grep x", 1, "No matches found (not an error)"},
		{"grep x f | wc -l", 1, ""},
		{"rg foo", 1, "No matches found (not an error)"},
		{"cmp a b", 1, "Files differ (expected, not an error)"},
		{"[ -f x ]", 1, "Condition evaluated to false (expected, not an error)"},
		{"grep x f", 2, ""},
		{"", 1, ""},
	} {
		if got := exitMeaning(tc.command, tc.code); got != tc.want {
			t.Errorf("exitMeaning(%q, %d) = %q, want %q", tc.command, tc.code, got, tc.want)
		}
	}
}

// The output cap keeps the first 40% and last 60% however the writes are cut.
func TestCappedWriter(t *testing.T) {
	t.Parallel()
	var want strings.Builder
	w := &capped{}
	for i := 0; want.Len() < 3*MaxOutput; i++ {
		chunk := fmt.Sprintf("%d,", i)
		if i%97 == 0 {
			chunk = strings.Repeat("z", 7919) // a write larger than small ones, smaller than the ring
		}
		want.WriteString(chunk)
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	full := want.String()
	got := w.String()
	head, tail := full[:MaxOutput*2/5], full[len(full)-(MaxOutput-MaxOutput*2/5):]
	marker := fmt.Sprintf("\n\n[... %d bytes of output left out ...]\n\n", len(full)-MaxOutput)
	if got != head+marker+tail {
		t.Fatalf("capped output differs: got %d bytes, want %d", len(got), len(head+marker+tail))
	}
	small := &capped{}
	small.Write([]byte("abc"))
	if small.String() != "abc" {
		t.Fatalf("small output %q", small.String())
	}
}
