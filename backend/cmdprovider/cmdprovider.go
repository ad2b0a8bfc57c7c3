// Package cmdprovider runs the familiar agent's command providers: the
// shell commands config.yaml names under stt.providers and tts.providers
// (and the local whisper command) to transcribe or to speak. It fills a
// command's {placeholders}, quoted for where each stands, and runs it with
// sh -c in a process group of its own, killed with all it started when it
// goes quiet for too long. It knows nothing of either block.
package cmdprovider

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Result is how a command ended: its exit code, what it printed (trimmed,
// clipped), whether it was stopped for going quiet, or why it could not
// run.
type Result struct {
	Code           int
	Stdout, Stderr string
	TimedOut       bool
	Err            error
}

// Detail is what a failed command printed, as the familiar agent says it:
// "stderr: …; stdout: …" ("" when it printed nothing).
func (r Result) Detail() string {
	var detail []string
	if r.Stderr != "" {
		detail = append(detail, "stderr: "+r.Stderr)
	}
	if r.Stdout != "" {
		detail = append(detail, "stdout: "+r.Stdout)
	}
	return strings.Join(detail, "; ")
}

// maxStdout and maxStderr bound what is kept of a command's output.
const (
	maxStdout = 1 << 20
	maxStderr = 2000
)

// Run runs script with sh -c in a process group of its own, with env as
// its whole environment (the caller leaves the keys out). idle is how long
// it may go without printing: then, or when ctx ends, the whole group is
// killed. A helper it leaves behind is killed too.
func Run(ctx context.Context, script string, env []string, idle time.Duration) Result {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A helper that holds the output open after the shell is gone does
	// not hold the caller.
	cmd.WaitDelay = 2 * time.Second
	ping := make(chan struct{}, 1)
	stdout, stderr := &watched{max: maxStdout, ping: ping}, &watched{max: maxStderr, ping: ping}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return Result{Code: -1, Err: err}
	}
	group := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(idle)
	defer timer.Stop()
	var res Result
	var err error
wait:
	for {
		select {
		case err = <-done:
			break wait
		case <-ping:
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(idle)
		case <-timer.C:
			res.TimedOut = true
			_ = syscall.Kill(-group, syscall.SIGKILL)
			err = <-done
			break wait
		case <-ctx.Done():
			_ = syscall.Kill(-group, syscall.SIGKILL)
			<-done
			return Result{Code: -1, Err: context.Cause(ctx)}
		}
	}
	_ = syscall.Kill(-group, syscall.SIGKILL) // what it left running
	res.Stdout, res.Stderr = strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String())
	var exit *exec.ExitError
	switch {
	case res.TimedOut:
		res.Code = -1
	case err == nil || errors.Is(err, exec.ErrWaitDelay):
		res.Code = cmd.ProcessState.ExitCode()
	case errors.As(err, &exit):
		res.Code = exit.ExitCode()
	default:
		res.Code, res.Err = -1, err
	}
	return res
}

// watched keeps the first max bytes written to it, and tells ping of
// every write (the command is alive).
type watched struct {
	max  int
	ping chan struct{}
	buf  bytes.Buffer
}

func (w *watched) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	select {
	case w.ping <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *watched) String() string { return strings.ToValidUTF8(w.buf.String(), "\uFFFD") }

// Machine is where a provider's commands run: the environment they start
// from, before the keys are taken out of it (Environ), and where programs
// are looked for (BinDirs, where Homebrew and local installs put them,
// then LookPath). Local is this machine; a test changes its parts.
type Machine struct {
	Environ  func() []string
	BinDirs  []string
	LookPath func(string) (string, error)
}

// Local is this machine: this process's environment, /opt/homebrew/bin and
// /usr/local/bin, then PATH.
func Local() Machine {
	return Machine{Environ: os.Environ, BinDirs: []string{"/opt/homebrew/bin", "/usr/local/bin"}, LookPath: exec.LookPath}
}

// Find is the program name's path: in BinDirs first, else LookPath's (""
// when it is nowhere).
func (m Machine) Find(name string) string {
	for _, d := range m.BinDirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	if p, err := m.LookPath(name); err == nil {
		return p
	}
	return ""
}

// Render fills template's placeholders as the familiar agent's command
// providers do: {name} (or {{name}}) takes the value, quoted for where it
// stands (inside single quotes, inside double quotes, or bare), so no value
// can end its quotes or run a command; {{ and }} elsewhere are braces;
// ${name} is the shell's. unknown are the {name}s that are no
// placeholder.
func Render(template string, values map[string]string) (string, []string) {
	var b strings.Builder
	var unknown []string
	var quote byte // the quote open: ', " or none
	escaped := false
	for i := 0; i < len(template); {
		if i == 0 || template[i-1] != '$' {
			if m := placeholder.FindStringSubmatchIndex(template[i:]); m != nil {
				doubled, first := m[2] < 0, 2 // {{name}}
				if doubled {
					first = 4
				}
				name := template[i+m[first] : i+m[first+1]]
				if v, ok := values[name]; ok {
					b.WriteString(quoteFor(v, quote))
					i += m[1]
					escaped = false
					continue
				}
				if !doubled && !slices.Contains(unknown, name) {
					unknown = append(unknown, name)
				}
			}
		}
		if strings.HasPrefix(template[i:], "{{") || strings.HasPrefix(template[i:], "}}") {
			b.WriteByte(template[i])
			i += 2
			continue
		}
		c := template[i]
		b.WriteByte(c)
		i++
		switch {
		case escaped:
			escaped = false
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
		case quote == '"':
			if c == '\\' {
				escaped = true
			} else if c == '"' {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\':
			escaped = true
		}
	}
	return b.String(), unknown
}

// placeholder matches a {name} or a {{name}} at the start of a text.
var placeholder = regexp.MustCompile(`^(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|\{\{([A-Za-z_][A-Za-z0-9_]*)\}\})`)

// quoteFor quotes v for where it stands in a shell command.
func quoteFor(v string, quote byte) string {
	switch quote {
	case '\'':
		return strings.ReplaceAll(v, "'", `'\''`)
	case '"':
		return strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`").Replace(v)
	}
	return ShellQuote(v)
}

// ShellQuote is v as one word of a shell command, as Python's shlex.quote
// writes it.
func ShellQuote(v string) string {
	if v == "" {
		return "''"
	}
	if !unsafeWord.MatchString(v) {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'"'"'`) + "'"
}

var unsafeWord = regexp.MustCompile(`[^\w@%+=:,./-]`)
