package shellhooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/google/shlex"
)

// Output bounds: what a hook prints beyond them is dropped.
const (
	maxStdout = 1 << 20
	maxStderr = 64 << 10
)

// Outcome is what one run of a hook command did.
type Outcome struct {
	ExitCode int    `json:"exit_code"` // -1 when it did not exit by itself
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	TimedOut bool   `json:"timed_out"`
	// Err says why it could not run (not found, not executable, a command
	// line that cannot be split); empty when it ran.
	Err       string        `json:"error,omitempty"`
	Elapsed   time.Duration `json:"-"`
	ElapsedMS float64       `json:"elapsed_ms"`
}

// Env is the world a hook command runs in.
type Env struct {
	Dir     string // the profile's folder: its working directory
	Profile string
}

// Run runs s's command with stdin, in its own process group, bounded by
// s.Timeout and ctx: when either ends first the whole group is killed (a
// hook's helpers included) and the outcome says it timed out.
func Run(ctx context.Context, s Spec, e Env, stdin []byte) Outcome {
	out := Outcome{ExitCode: -1}
	argv, err := argvOf(s)
	if err != nil {
		out.Err = err.Error()
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = e.Dir
	cmd.Env = append(os.Environ(), "ATRIUM_HOME="+e.Dir, "HERMES_HOME="+e.Dir, "ATRIUM_PROFILE="+e.Profile,
		"ATRIUM_HOOK_EVENT="+s.Event)
	if s.Dialect == Claude {
		cmd.Env = append(cmd.Env, "CLAUDE_PROJECT_DIR="+e.Dir)
	}
	cmd.Stdin = bytes.NewReader(stdin)
	stdout, stderr := &capped{max: maxStdout}, &capped{max: maxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A helper the hook left running that holds its output open does not
	// hold the hook past this.
	cmd.WaitDelay = time.Second
	start := time.Now()
	err = cmd.Run()
	out.Elapsed = time.Since(start)
	out.ElapsedMS = float64(out.Elapsed.Microseconds()) / 1000
	out.Stdout, out.Stderr = stdout.String(), stderr.String()
	if ctx.Err() != nil && cmd.ProcessState != nil && !cmd.ProcessState.Exited() {
		out.TimedOut = true // killed at the deadline
		return out
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		out.ExitCode = 0
	case errors.As(err, &exit):
		out.ExitCode = exit.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
		out.ExitCode = cmd.ProcessState.ExitCode()
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist):
		out.Err = "command not found: " + argv[0]
	case errors.Is(err, os.ErrPermission):
		out.Err = "command not executable: " + argv[0]
	default:
		out.Err = err.Error()
	}
	return out
}

// argvOf splits the command: the familiar agent's like a shell would (a
// leading ~ expanded), Claude Code's is given to /bin/sh -c whole.
func argvOf(s Spec) ([]string, error) {
	if s.Dialect == Claude {
		return []string{"/bin/sh", "-c", s.Command}, nil
	}
	argv, err := shlex.Split(s.Command)
	if err != nil {
		return nil, fmt.Errorf("command %q cannot be split: %v", s.Command, err)
	}
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	for i, a := range argv {
		if a == "~" || (len(a) > 1 && a[:2] == "~/") {
			argv[i] = Resolve("", a)
		}
	}
	return argv, nil
}

// capped keeps the first max bytes written to it and counts the rest.
type capped struct {
	max     int
	buf     bytes.Buffer
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
	} else {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (c *capped) String() string { return c.buf.String() }
