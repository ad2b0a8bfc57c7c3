package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Background processes: terminal(background=true) starts one, the process
// tool lists, polls, reads, waits for, writes to and kills it, under the
// familiar agent's names. They belong to the Atrium process that started
// them (the window, serve, the gateway, a chat) and end with it (Close);
// each conversation sees and touches only its own.

const (
	// MaxProcesses bounds the background processes running at once in one
	// Atrium process.
	MaxProcesses = 16
	// logBytes bounds what a background process's output keeps: its first
	// 40% and its last 60%, as a command's output is bounded.
	logBytes = 1 << 20
	// defaultLogLines is how many of the last lines 'log' shows.
	defaultLogLines = 200
)

// Processes are the background processes of one Atrium process.
type Processes struct {
	mu        sync.Mutex
	procs     map[string]*proc
	closed    bool
	listeners []*Listener // in the order they listened

	now    func() time.Time // the watches' clock
	gateMu sync.Mutex
	gate   watchGate
}

// A Listener is a surface of this Atrium process that runs the turns of
// some conversations (the window's, a chat platform's, a terminal
// chat's): asked when a conversation starts a process with
// notify_on_complete or watch_patterns, it returns what delivers that
// process's notices (Completion) to the conversation, or nil when the
// conversation is not its.
type Listener func(owner string) func(Completion)

// Listen adds l; stop takes it away (a process started before keeps the
// delivery l gave it).
func (ps *Processes) Listen(l Listener) (stop func()) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ref := &l
	ps.listeners = append(ps.listeners, ref)
	return func() {
		ps.mu.Lock()
		defer ps.mu.Unlock()
		ps.listeners = slices.DeleteFunc(ps.listeners, func(x *Listener) bool { return x == ref })
	}
}

// deliveryFor is the delivery of owner's completions, or nil; ps.mu is
// held.
func (ps *Processes) deliveryFor(owner string) func(Completion) {
	for _, l := range ps.listeners {
		if d := (*l)(owner); d != nil {
			return d
		}
	}
	return nil
}

// NewProcesses is an empty set.
func NewProcesses() *Processes { return &Processes{procs: map[string]*proc{}, now: time.Now} }

type proc struct {
	ps                      *Processes
	id, owner, command, dir string
	started                 time.Time
	cmd                     *exec.Cmd
	stdin                   io.WriteCloser
	done                    chan struct{} // closed when it has exited and its output is read

	mu       sync.Mutex
	out      capped
	written  int // bytes written to out, in all
	polled   int // of those, how many poll has shown
	exitCode int
	exited   time.Time
	killed   bool
	// deliver hands the conversation its notices: the end when notifyEnd
	// (notify_on_complete, or a watch that ended), unless the conversation
	// learnt of the end itself first (seen), and the watch's.
	deliver   func(Completion)
	notifyEnd bool
	seen      bool
	watch     *watcher // watch_patterns
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	p.written += len(b)
	n, err := p.out.Write(b)
	deliver, notices := p.watched(b)
	p.mu.Unlock()
	if len(notices) > 0 {
		p.tellWatched(deliver, notices)
	}
	return n, err
}

func newID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "proc_" + hex.EncodeToString(b)
}

// start runs cmd (command's shell) in the background for owner (a
// conversation), telling it of the end (notify) or of the lines that
// match watch.
func (ps *Processes) start(owner, command, dir string, cmd *exec.Cmd, notify bool, watch []string) (*proc, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return nil, errors.New("this Atrium process is stopping")
	}
	running := 0
	for _, p := range ps.procs {
		if !p.hasExited() {
			running++
		}
	}
	if running >= MaxProcesses {
		return nil, fmt.Errorf("%d background processes run already, the most one Atrium process keeps: kill one with the process tool first", running)
	}
	p := &proc{ps: ps, id: newID(), owner: owner, command: command, dir: dir, started: time.Now(), done: make(chan struct{}),
		out: capped{limit: logBytes}, notifyEnd: notify}
	if notify || len(watch) > 0 {
		p.deliver = ps.deliveryFor(owner)
	}
	if len(watch) > 0 {
		p.watch = &watcher{patterns: watch}
	}
	cmd.Stdout, cmd.Stderr = p, p
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.cmd, p.stdin = cmd, stdin
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.exitCode = cmd.ProcessState.ExitCode()
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() < 0 {
			p.exitCode = -1 // ended by a signal: minus its number, as Python's returncode
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.exitCode = -int(ws.Signal())
			}
		}
		p.exited = time.Now()
		var deliver func(Completion)
		if p.notifyEnd {
			deliver = p.deliver
		}
		p.mu.Unlock()
		close(p.done)
		if deliver != nil {
			if c, ok := p.completion(); ok {
				deliver(c)
			}
		}
	}()
	ps.procs[p.id] = p
	return p, nil
}

// notifies says whether p's conversation will be told of it (its end,
// its watch).
func (p *proc) notifies() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.deliver != nil
}

// saw records that the conversation learnt of p's end itself (when it has
// ended): no notification follows.
func (p *proc) saw() {
	if !p.hasExited() {
		return
	}
	p.mu.Lock()
	p.seen = true
	p.mu.Unlock()
}

func (p *proc) hasExited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Reown gives from's processes to to (a conversation that goes on in
// another session). A nil set has none.
func (ps *Processes) Reown(from, to string) {
	if ps == nil {
		return
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.procs {
		if p.owner == from {
			p.owner = to
		}
	}
}

// get is owner's process id.
func (ps *Processes) get(owner, id string) (*proc, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.procs[strings.TrimSpace(id)]; ok && p.owner == owner {
		return p, nil
	}
	return nil, fmt.Errorf("no background process %s in this conversation (the process tool's list names them)", id)
}

// Close kills every background process and waits for them to end.
func (ps *Processes) Close() {
	ps.mu.Lock()
	ps.closed = true
	procs := make([]*proc, 0, len(ps.procs))
	for _, p := range ps.procs {
		p.mu.Lock()
		p.deliver = nil // the surfaces stop with this process: nobody to tell
		p.mu.Unlock()
		procs = append(procs, p)
	}
	ps.mu.Unlock()
	killAll(procs)
}

// kill ends the process's group.
func (p *proc) kill() { killAll([]*proc{p}) }

// killAll ends the processes' groups: SIGTERM to all, then SIGKILL to those
// still there two seconds later (at most two seconds for all of them).
func killAll(procs []*proc) {
	var left []*proc
	for _, p := range procs {
		if p.hasExited() {
			continue
		}
		p.mu.Lock()
		p.killed = true
		p.mu.Unlock()
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		left = append(left, p)
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, p := range left {
		select {
		case <-p.done:
			continue
		case <-time.After(time.Until(deadline)):
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// status is the process as list and poll describe it.
func (p *proc) status() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := map[string]any{"session_id": p.id, "command": p.command, "pid": p.cmd.Process.Pid, "cwd": p.dir,
		"started_at": p.started.UTC().Format(time.RFC3339), "status": "running"}
	end := time.Now()
	if !p.exited.IsZero() {
		s["status"], s["exit_code"], end = "exited", p.exitCode, p.exited
		if p.killed {
			s["status"] = "killed"
		}
	}
	s["uptime_seconds"] = int(end.Sub(p.started).Seconds())
	return s
}

// newOutput is the output written since the last poll (what is still kept
// of it), and marks it shown.
func (p *proc) newOutput() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	all := p.out.String()
	fresh := p.written - p.polled
	p.polled = p.written
	if fresh >= len(all) {
		return clean(all)
	}
	return clean(all[len(all)-fresh:])
}

func processTool() Tool {
	return Tool{Name: "process", Toolset: "terminal", run: runProcess,
		Description: "Manage background processes started with terminal(background=true). Actions: 'list' (show all), 'poll' " +
			"(check status + new output), 'log' (full output with pagination), 'wait' (block until done or timeout), 'kill' " +
			"(terminate), 'write' (send raw stdin data without newline), 'submit' (send data + Enter, for answering prompts), " +
			"'close' (close stdin/send EOF).",
		Parameters: `{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["list","poll","log","wait","kill","write","submit","close"],"description":"Action to perform on background processes"},` +
			`"session_id":{"type":"string","description":"Process session ID (from terminal background output). Required for all actions except 'list'."},` +
			`"data":{"type":"string","description":"Text to send to process stdin (for 'write' and 'submit' actions)"},` +
			`"timeout":{"type":"integer","description":"Max seconds to block for 'wait' action (default 180, at most 600). Returns partial output on timeout.","minimum":1},` +
			`"offset":{"type":"integer","description":"Line offset for 'log' action (default: last 200 lines)"},` +
			`"limit":{"type":"integer","description":"Max lines to return for 'log' action","minimum":1}` +
			`},"required":["action"]}`}
}

func runProcess(ctx context.Context, c *Call) any {
	ps := c.Processes
	if ps == nil {
		return failure("background processes are not available here")
	}
	action, _ := c.str("action")
	action = strings.ToLower(strings.TrimSpace(action))
	if action == "list" {
		ps.mu.Lock()
		var mine []*proc
		for _, p := range ps.procs {
			if p.owner == c.Owner {
				mine = append(mine, p)
			}
		}
		ps.mu.Unlock()
		sort.Slice(mine, func(i, j int) bool { return mine[i].started.Before(mine[j].started) })
		list := make([]map[string]any, 0, len(mine))
		for _, p := range mine {
			list = append(list, p.status())
		}
		return map[string]any{"processes": list}
	}
	switch action {
	case "poll", "log", "wait", "kill", "write", "submit", "close":
	default:
		return failure("Unknown process action: " + action + ". Use: list, poll, log, wait, kill, write, submit, close")
	}
	id, _ := c.str("session_id")
	if strings.TrimSpace(id) == "" {
		return failure("session_id is required for " + action)
	}
	p, err := ps.get(c.Owner, id)
	if err != nil {
		return failure(err.Error())
	}
	switch action {
	case "poll":
		s := p.status()
		s["output"] = p.newOutput()
		if s["status"] != "running" {
			p.saw()
		}
		return s
	case "log":
		out := p.log(c.integer("offset", -1), c.integer("limit", defaultLogLines))
		if out["status"] != "running" {
			p.saw()
		}
		return out
	case "wait":
		timeout := time.Duration(c.integer("timeout", int(DefaultTimeout/time.Second))) * time.Second
		timeout = min(max(timeout, time.Second), MaxTimeout)
		timedOut := false
		select {
		case <-p.done:
		case <-time.After(timeout):
			timedOut = true
		case <-ctx.Done():
			return failure("the wait was stopped with the turn (the process runs on)")
		}
		s := p.status()
		s["output"] = p.newOutput()
		if timedOut {
			s["timed_out"] = true
		} else {
			p.saw()
		}
		return s
	case "kill":
		p.mu.Lock()
		p.notifyEnd = false // the conversation ended it: nothing to tell it
		p.mu.Unlock()
		p.kill()
		return p.status()
	case "write", "submit":
		data, _ := c.str("data")
		if action == "submit" {
			data += "\n"
		}
		if p.hasExited() {
			return failure("the process has exited")
		}
		n, err := io.WriteString(p.stdin, data)
		if err != nil {
			return failure("could not write to the process: " + err.Error())
		}
		return map[string]any{"session_id": p.id, "bytes_written": n}
	default: // close
		if err := p.stdin.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
			return failure("could not close the process's input: " + err.Error())
		}
		return map[string]any{"session_id": p.id, "stdin": "closed"}
	}
}

// log is lines of what the process wrote: from offset (0-based), or its
// last limit lines.
func (p *proc) log(offset, limit int) map[string]any {
	p.mu.Lock()
	text := clean(p.out.String())
	p.mu.Unlock()
	lines := strings.Split(text, "\n")
	if text == "" {
		lines = nil
	}
	limit = max(1, limit)
	if offset < 0 {
		offset = max(0, len(lines)-limit)
	}
	offset = min(offset, len(lines))
	end := min(len(lines), offset+limit)
	s := p.status()
	s["output"] = strings.Join(lines[offset:end], "\n")
	s["total_lines"] = len(lines)
	s["showing"] = fmt.Sprintf("lines %d-%d of %d", offset+1, end, len(lines))
	return s
}
