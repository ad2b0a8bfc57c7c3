package stt

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"atrium/backend/config"
)

// localIdle is how long the local whisper command, and ffmpeg converting
// for it, may go without output (the familiar agent gives them 300 s).
const localIdle = 300 * time.Second

// nativeFormats are what the local whisper command is given as they are;
// anything else is converted to WAV first, as the familiar agent does.
var nativeFormats = []string{".wav", ".aiff", ".aif"}

// viaLocal runs the local whisper command (template) on path and reads
// the .txt transcript it writes in {output_dir}.
func (t *Transcriber) viaLocal(ctx context.Context, template, path string) (string, error) {
	_, model, language := t.cfg.LocalCommand(t.getenv)
	dir, err := os.MkdirTemp("", "atrium-local-stt-")
	if err != nil {
		return "", fmt.Errorf("local transcription failed: %w", err)
	}
	defer os.RemoveAll(dir)
	input := path
	if !slices.Contains(nativeFormats, strings.ToLower(filepath.Ext(path))) {
		if input, err = t.toWAV(ctx, path, dir, "Local STT fallback requires ffmpeg for non-WAV inputs"); err != nil {
			return "", err
		}
	}
	cmd, unknown := render(template, map[string]string{"input_path": input, "output_dir": dir, "language": language, "model": model})
	if len(unknown) > 0 {
		return "", fmt.Errorf("invalid HERMES_LOCAL_STT_COMMAND template: {%s} is no placeholder (there are {input_path}, {output_dir}, {language} and {model})", unknown[0])
	}
	res := t.run(ctx, cmd, nil, localIdle)
	switch {
	case res.err != nil:
		return "", fmt.Errorf("local transcription failed: %w", res.err)
	case res.timedOut:
		return "", fmt.Errorf("local transcription failed: the command gave no output for %s and was stopped", localIdle)
	case res.code != 0:
		return "", fmt.Errorf("local STT failed (exit code %d): %s", res.code, cmp.Or(res.stderr, res.stdout, "no output"))
	}
	txts, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	sort.Strings(txts)
	if len(txts) == 0 {
		return "", errors.New("the local STT command completed but did not produce a .txt transcript")
	}
	b, err := os.ReadFile(txts[0])
	if err != nil {
		return "", fmt.Errorf("local transcription failed: %w", err)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

// viaCommand runs a command provider on path: its transcript is the file
// it writes at {output_path}, else what it prints.
func (t *Transcriber) viaCommand(ctx context.Context, c config.STTCommandSpec, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("STT command provider '%s' failed: %w", c.Name, err)
	}
	dir, err := os.MkdirTemp("", "atrium-stt-"+c.Name+"-")
	if err != nil {
		return "", fmt.Errorf("STT command provider '%s' failed: %w", c.Name, err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "transcript."+c.Format)
	cmd, _ := render(c.Command, map[string]string{"input_path": abs, "output_path": out, "output_dir": dir, "format": c.Format,
		"language": c.Language, "model": c.Model})
	res := t.run(ctx, cmd, c.Passthrough, c.IdleTimeout)
	switch {
	case res.err != nil:
		return "", fmt.Errorf("STT command provider '%s' failed: %w", c.Name, res.err)
	case res.timedOut:
		return "", fmt.Errorf("STT command provider '%s' timed out after %gs without output", c.Name, c.IdleTimeout.Seconds())
	case res.code != 0:
		var detail []string
		if res.stderr != "" {
			detail = append(detail, "stderr: "+res.stderr)
		}
		if res.stdout != "" {
			detail = append(detail, "stdout: "+res.stdout)
		}
		return "", fmt.Errorf("STT command provider '%s' exited with code %d: %s", c.Name, res.code, cmp.Or(strings.Join(detail, "; "), "no command output"))
	}
	if b, err := os.ReadFile(out); err == nil && len(bytes.TrimSpace(b)) > 0 {
		return strings.ToValidUTF8(string(b), "\uFFFD"), nil
	}
	if res.stdout != "" {
		return res.stdout, nil
	}
	return "", fmt.Errorf("STT command provider '%s' wrote no output file at %s and printed nothing", c.Name, out)
}

// toWAV converts path to a WAV file in dir with ffmpeg; missing says what
// needs it when ffmpeg is not found.
func (t *Transcriber) toWAV(ctx context.Context, path, dir, missing string) (string, error) {
	ffmpeg := t.findBinary("ffmpeg")
	if ffmpeg == "" {
		return "", fmt.Errorf("%s, but ffmpeg was not found", missing)
	}
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	out := filepath.Join(dir, cmp.Or(stem, "audio")+".wav")
	res := t.run(ctx, shellQuote(ffmpeg)+" -nostdin -y -i "+shellQuote(path)+" "+shellQuote(out), nil, localIdle)
	switch {
	case res.err != nil:
		return "", fmt.Errorf("failed to convert the audio: %w", res.err)
	case res.timedOut:
		return "", errors.New("the audio conversion timed out")
	case res.code != 0:
		return "", fmt.Errorf("failed to convert the audio: %s", cmp.Or(res.stderr, res.stdout, fmt.Sprintf("ffmpeg exited with code %d", res.code)))
	}
	return out, nil
}

// result is how a command ended: its exit code, what it printed (trimmed,
// clipped), whether it was stopped for going quiet, or why it could not
// run.
type result struct {
	code           int
	stdout, stderr string
	timedOut       bool
	err            error
}

// maxStdout and maxStderr bound what is kept of a command's output.
const (
	maxStdout = 1 << 20
	maxStderr = 2000
)

// run runs script with sh -c in a process group of its own, its
// environment this process's without the keys (but those passthrough
// names). idle is how long it may go without printing: then, or when ctx
// ends, the whole group is killed. A helper it leaves behind is killed too.
func (t *Transcriber) run(ctx context.Context, script string, passthrough []string, idle time.Duration) result {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = config.CommandEnv(t.environ(), passthrough)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A helper that holds the output open after the shell is gone does
	// not hold the transcription.
	cmd.WaitDelay = 2 * time.Second
	ping := make(chan struct{}, 1)
	stdout, stderr := &watched{max: maxStdout, ping: ping}, &watched{max: maxStderr, ping: ping}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return result{code: -1, err: err}
	}
	group := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(idle)
	defer timer.Stop()
	var res result
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
			res.timedOut = true
			_ = syscall.Kill(-group, syscall.SIGKILL)
			err = <-done
			break wait
		case <-ctx.Done():
			_ = syscall.Kill(-group, syscall.SIGKILL)
			<-done
			return result{code: -1, err: context.Cause(ctx)}
		}
	}
	_ = syscall.Kill(-group, syscall.SIGKILL) // what it left running
	res.stdout, res.stderr = strings.TrimSpace(stdout.String()), strings.TrimSpace(stderr.String())
	var exit *exec.ExitError
	switch {
	case res.timedOut:
		res.code = -1
	case err == nil || errors.Is(err, exec.ErrWaitDelay):
		res.code = cmd.ProcessState.ExitCode()
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	default:
		res.code, res.err = -1, err
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

// render fills template's placeholders as the familiar agent's command
// providers do: {name} (or {{name}}) takes the value, quoted for where it
// stands (inside single quotes, inside double quotes, or bare), so no value
// can end its quotes or run a command; {{ and }} elsewhere are braces;
// ${name} is the shell's. unknown are the {name}s that are no
// placeholder.
func render(template string, values map[string]string) (string, []string) {
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
	return shellQuote(v)
}

// shellQuote is v as one word of a shell command, as Python's shlex.quote
// writes it.
func shellQuote(v string) string {
	if v == "" {
		return "''"
	}
	if !unsafeWord.MatchString(v) {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'"'"'`) + "'"
}

var unsafeWord = regexp.MustCompile(`[^\w@%+=:,./-]`)
