package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// MaxOutput bounds what a command's output gives the model: its first 40%
// and its last 60%, with what lies between counted. A command that floods
// costs this much memory, not what it wrote.
const MaxOutput = 100_000

func terminalTool() Tool {
	return Tool{Name: "terminal", Toolset: "terminal", run: runTerminal,
		Description: "Run a shell command on this machine and return its output and exit code. Each conversation keeps its " +
			"working directory between commands (a cd holds). Use read_file, write_file, patch and search_files for files " +
			"rather than cat, sed or grep here. A command that could destroy data (a recursive delete, a force push, ...) " +
			"waits for a person's approval; a few that nobody can undo (a wipe of / or of a disk, a shutdown) never run.",
		Parameters: `{"type":"object","properties":{` +
			`"command":{"type":"string","description":"The command to execute"},` +
			`"background":{"type":"boolean","description":"Run in the background (servers, watchers, long builds): returns a session_id at once; the process tool polls, reads, waits for and kills it","default":false},` +
			`"notify_on_complete":{"type":"boolean","description":"With background=true: you are told in this conversation when the process exits (its exit code and the end of its output), so you need not poll. For long builds, test runs and deploys that end on their own. Set it or watch_patterns, not both (watch_patterns is then left out).","default":false},` +
			`"watch_patterns":{"type":"array","items":{"type":"string"},"description":"With background=true: strings to look for in the output of a process that runs on (a server, a daemon); when a line holds one you are told in this conversation, with the matching lines. At most one notice every 15 seconds a process (matches in between are dropped and counted); after 3 windows in a row with drops, or 8 notices, the watch ends and you are told when the process exits instead. For rare one-off signals such as 'Application startup complete'; not for an end marker (use notify_on_complete) nor for errors a loop prints again and again."},` +
			`"timeout":{"type":"integer","description":"Max seconds to wait (default: 180, max: 600). Returns as soon as the command finishes.","minimum":1},` +
			`"workdir":{"type":"string","description":"Working directory for this command (absolute, or relative to the conversation's). Defaults to the conversation's working directory."},` +
			`"pty":{"type":"boolean","description":"Run in a pseudo-terminal (not available in Atrium: the command runs without one)","default":false}` +
			`},"required":["command"]}`}
}

// terminalResult is the familiar agent's result of a command.
type terminalResult struct {
	Output      string  `json:"output"`
	ExitCode    int     `json:"exit_code"`
	Error       *string `json:"error"`
	ExitMeaning string  `json:"exit_code_meaning,omitempty"`
}

func terminalFailure(msg string) terminalResult { return terminalResult{ExitCode: -1, Error: &msg} }

// exitCodeTimeout and exitCodeInterrupted are the exit codes of a command
// that ran out of time and of one the turn's stop cut short, as a shell
// reports them.
const (
	exitCodeTimeout     = 124
	exitCodeInterrupted = 130
)

func runTerminal(ctx context.Context, c *Call) any {
	command, _ := c.str("command")
	if strings.TrimSpace(command) == "" {
		return terminalFailure("command is required")
	}
	background := c.boolean("background")
	timeout := c.Settings.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if t := c.integer("timeout", 0); t > 0 {
		timeout = time.Duration(t) * time.Second
		if timeout > MaxTimeout {
			return terminalFailure(fmt.Sprintf("a timeout of %d seconds is above the maximum of %d: run shorter steps", t, int(MaxTimeout/time.Second)))
		}
	}
	dir := WorkDir(c.Dir, c.Args)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return terminalFailure("the working directory " + dir + " does not exist or is not a folder")
	}
	if background {
		return startBackground(c, command, dir)
	}
	return execute(ctx, c, command, dir, timeout)
}

// WorkDir is the folder a terminal call with args runs in, from dir, the
// conversation's: its workdir (a relative one taken from dir, ~ expanded),
// else dir.
func WorkDir(dir string, args map[string]any) string {
	c := &Call{Args: args, Dir: dir}
	if w, ok := c.str("workdir"); ok && strings.TrimSpace(w) != "" {
		return c.resolve(w)
	}
	return dir
}

// startBackground starts command as a background process of the
// conversation, which the process tool then manages.
func startBackground(c *Call, command, dir string) any {
	if c.Processes == nil {
		return terminalFailure("background processes are not available here: run the command in the foreground with a timeout (at most 600 seconds)")
	}
	notify := c.boolean("notify_on_complete")
	watch, err := watchPatterns(c.Args["watch_patterns"])
	if err != nil {
		return terminalFailure(err.Error())
	}
	ignored := notify && len(watch) > 0
	if ignored {
		watch = nil // the familiar agent's choice: one notice, at the end
	}
	p, err := c.Processes.start(c.Owner, command, dir, c.shellCommand(context.Background(), command, dir), notify, watch)
	if err != nil {
		return terminalFailure("the background process could not be started: " + err.Error())
	}
	out := map[string]any{"output": "Background process started", "session_id": p.id, "pid": p.cmd.Process.Pid,
		"exit_code": 0, "error": nil, "hint": "Use the process tool (poll, log, wait, kill) with this session_id."}
	if ignored {
		out["watch_patterns_ignored"] = watchIgnored
	}
	const nobody = " is not available here (nobody's conversation runs on to be told: a scheduled run, a one-shot send, a piped chat)"
	var notes []string
	switch {
	case notify && p.notifies():
		out["notify_on_complete"] = true
		out["hint"] = "You will be told in this conversation when it exits; meanwhile the process tool (poll, log, wait, kill) takes this session_id."
	case notify:
		notes = append(notes, "notify_on_complete"+nobody)
	case len(watch) > 0 && p.notifies():
		out["watch_patterns"] = watch
		out["hint"] = fmt.Sprintf("You will be told in this conversation when a line of its output holds one of watch_patterns "+
			"(at most once every %d seconds; after %d such notices, or a flood, it is watched no more and told when it exits); "+
			"meanwhile the process tool (poll, log, wait, kill) takes this session_id.", int(WatchMinInterval/time.Second), WatchLifetimeMaxHits)
	case len(watch) > 0:
		notes = append(notes, "watch_patterns"+nobody)
	}
	if len(notes) > 0 {
		out["note"] = strings.Join(notes, "; ") + ": poll or wait with the process tool"
	}
	return out
}

// execute runs command in a shell of its own process group, which a
// timeout or the turn's stop kills whole.
func execute(ctx context.Context, c *Call, command, dir string, timeout time.Duration) terminalResult {
	cwdFile, err := os.CreateTemp("", "atrium-cwd-*")
	if err != nil {
		return terminalFailure("the command could not be started: " + err.Error())
	}
	cwdFile.Close()
	defer os.Remove(cwdFile.Name())

	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The folder the command ends in is written on the shell's way out,
	// however it leaves (an exit in the command included).
	script := `trap 'pwd -P > "$ATRIUM_CWD_FILE" 2>/dev/null' EXIT` + "\n" + command
	cmd := c.shellCommand(rctx, script, dir, "ATRIUM_CWD_FILE="+cwdFile.Name())
	out := &capped{}
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()

	res := terminalResult{Output: clean(out.String())}
	var exit *exec.ExitError
	switch {
	case rctx.Err() != nil && ctx.Err() == nil:
		msg := fmt.Sprintf("the command timed out after %d seconds and was stopped", int(timeout/time.Second))
		res.ExitCode, res.Error = exitCodeTimeout, &msg
	case ctx.Err() != nil:
		msg := "the command was stopped with the turn"
		res.ExitCode, res.Error = exitCodeInterrupted, &msg
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
		res.ExitMeaning = exitMeaning(command, res.ExitCode)
	case errors.Is(err, exec.ErrWaitDelay):
		res.ExitCode = cmd.ProcessState.ExitCode()
	case err != nil:
		return terminalFailure("the command could not be run: " + err.Error())
	}
	if c.Transform != nil {
		res.Output = bound(c.Transform(command, res.Output, res.ExitCode))
	}
	if b, err := os.ReadFile(cwdFile.Name()); err == nil {
		if d := strings.TrimSpace(string(b)); filepath.IsAbs(d) {
			c.NewDir = d
		}
	}
	return res
}

// shellCommand is script run by a shell (bash, else sh) in dir, in a
// process group of its own that ctx's end kills whole, with the call's
// environment, the extra variables and pagers off. A process the script
// leaves running in the background keeps its output open: Wait waits for
// that at most two seconds.
func (c *Call) shellCommand(ctx context.Context, script, dir string, extra ...string) *exec.Cmd {
	shell := "/bin/sh"
	if p, err := exec.LookPath("bash"); err == nil {
		shell = p
	}
	cmd := exec.CommandContext(ctx, shell, "-c", script)
	cmd.Dir = dir
	env := c.Settings.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(append([]string{}, env...), extra...)
	for _, name := range c.Granted { // a loaded skill's keys, as this process has them now
		if c.Settings.Skills.managed(name) {
			continue // one of Atrium's own since it was granted
		}
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	cmd.Env = append(env, "PAGER=cat", "GIT_PAGER=cat")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd
}

// exitMeaning explains an exit code that is no failure of the command.
func exitMeaning(command string, code int) string {
	if code != 1 {
		return ""
	}
	segs := strings.FieldsFunc(command, func(r rune) bool { return r == '|' || r == ';' || r == '&' || r == '\n' })
	if len(segs) == 0 {
		return ""
	}
	words := strings.Fields(segs[len(segs)-1])
	if len(words) == 0 {
		return ""
	}
	switch filepath.Base(words[0]) {
	case "grep", "egrep", "fgrep", "rg", "ag":
		return "No matches found (not an error)"
	case "diff", "cmp":
		return "Files differ (expected, not an error)"
	case "test", "[":
		return "Condition evaluated to false (expected, not an error)"
	}
	return ""
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)

// clean is output as the model reads it: no terminal escapes, valid UTF-8,
// no trailing blank lines.
func clean(s string) string {
	s = ansiRE.ReplaceAllString(s, "")
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return strings.TrimRight(s, " \t\r\n")
}

// capped keeps the first 40% and the last 60% of its limit (MaxOutput
// when zero) of the bytes written to it, and counts the rest.
type capped struct {
	limit   int
	head    []byte
	tail    []byte // a ring once full
	start   int    // the ring's oldest byte
	dropped int
}

func (w *capped) Write(p []byte) (int, error) {
	n, limit := len(p), w.limit
	if limit <= 0 {
		limit = MaxOutput
	}
	headBytes := limit * 2 / 5
	tailBytes := limit - headBytes
	if room := headBytes - len(w.head); room > 0 {
		k := min(room, len(p))
		w.head = append(w.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(w.tail) < tailBytes {
			k := min(tailBytes-len(w.tail), len(p))
			w.tail = append(w.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := min(tailBytes-w.start, len(p))
		copy(w.tail[w.start:], p[:k])
		w.dropped += k
		w.start = (w.start + k) % tailBytes
		p = p[k:]
	}
	return n, nil
}

// bound is s cut as a command's output is, when it is longer.
func bound(s string) string {
	if len(s) <= MaxOutput {
		return s
	}
	w := &capped{}
	_, _ = w.Write([]byte(s))
	return strings.ToValidUTF8(w.String(), "\uFFFD")
}

func (w *capped) String() string {
	tail := append(append([]byte{}, w.tail[w.start:]...), w.tail[:w.start]...)
	if w.dropped == 0 {
		return string(w.head) + string(tail)
	}
	return string(w.head) + fmt.Sprintf("\n\n[... %d bytes of output left out ...]\n\n", w.dropped) + string(tail)
}
