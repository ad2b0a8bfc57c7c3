package proc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// errDied reports that the child exited (or was killed) before it answered.
var errDied = errors.New("plugin process exited")

// notSent is a write that failed: the child never got the message.
type notSent struct{ err error }

func (e notSent) Error() string { return e.err.Error() }
func (e notSent) Unwrap() error { return e.err }

// instance is one run of a plugin's child process.
type instance struct {
	p       *plugin
	cmd     *exec.Cmd
	pid     int
	started time.Time

	wmu   sync.Mutex // serializes every write to stdin: one line at a time, in call order
	stdin io.WriteCloser

	outMu      sync.Mutex // the plugin's output to the host log: its rate, and what it dropped
	outLimit   *rate.Limiter
	outDropped int

	mu     sync.Mutex
	nextID int64
	calls  map[int64]chan message
	events map[string]chan EventDoneParams
	cause  string // why the host killed it ("timeout", "garbage", "flood", "shutdown"), "" if it exited by itself
	cutErr error  // what it wrote that cut it off (garbage, a flood), nil otherwise

	dead    chan struct{} // closed once Wait returned
	exitErr error

	cancels    bool // its handshake said it answers cancel (set before the instance is shared)
	configures bool // its handshake said it takes configure (set before the instance is shared)
}

// CancelGrace is how long a plugin has to answer a request the host
// cancelled before it is restarted instead.
var CancelGrace = 2 * time.Second

// errCancelled: ctx ended the wait, and the plugin answered the cancel (it
// lives on; nothing needs a restart).
var errCancelled = errors.New("cancelled")

// spawn starts the child with exactly spec.Env as its environment.
func (p *plugin) spawn(spec Spec) (*instance, error) {
	if spec.WorkDir != "" {
		if err := os.MkdirAll(spec.WorkDir, 0o700); err != nil {
			return nil, fmt.Errorf("plugin %s: work folder: %w", spec.Name, err)
		}
	}
	cmd := command(spec.Argv)                 // in its own process group, under the guard where there is one
	cmd.Env = append([]string{}, spec.Env...) // non-nil: never inherit the host's environment
	cmd.Dir = spec.WorkDir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		return nil, fmt.Errorf("plugin %s: start %v: %w", spec.Name, spec.Argv, err)
	}
	outW.Close()
	errW.Close()
	in := &instance{p: p, cmd: cmd, pid: cmd.Process.Pid, started: time.Now(), stdin: stdin,
		calls: map[int64]chan message{}, events: map[string]chan EventDoneParams{}, dead: make(chan struct{})}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); in.readStdout(outR) }()
	go func() { defer readers.Done(); in.readStderr(errR) }()
	go func() {
		err := cmd.Wait()
		reapGroup(in.pid) // what the child left in its group (a forked helper) goes with it
		// A grandchild may still hold the pipes: give the readers a moment to
		// drain, then close our ends so they return.
		done := make(chan struct{})
		go func() { readers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
			outR.Close()
			errR.Close()
			<-done
		}
		outR.Close()
		errR.Close()
		in.mu.Lock()
		in.exitErr = err
		in.mu.Unlock()
		close(in.dead)
		p.onExit(in)
	}()
	return in, nil
}

// kill ends the child's process tree; Wait reaps it (see spawn).
func (in *instance) kill(cause string) {
	in.mu.Lock()
	if in.cause == "" {
		in.cause = cause
	}
	in.mu.Unlock()
	stopTree(in.pid, in.dead)
}

// setCutOff records why the child was cut off (the first reason wins).
func (in *instance) setCutOff(err error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cutErr == nil {
		in.cutErr = err
	}
}

// cutOffErr is what cut the child off, nil if nothing did.
func (in *instance) cutOffErr() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.cutErr
}

func (in *instance) killCause() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.cause
}

func (in *instance) isDead() bool {
	select {
	case <-in.dead:
		return true
	default:
		return false
	}
}

// write sends one message as one line.
func (in *instance) write(m message) error {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	in.wmu.Lock()
	defer in.wmu.Unlock()
	if in.isDead() {
		return errDied
	}
	if _, err := in.stdin.Write(b); err != nil {
		return fmt.Errorf("%w: write: %v", errDied, err)
	}
	return nil
}

func (in *instance) notify(method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return in.write(message{Method: method, Params: raw})
}

// call sends a request and waits for its response, the child's death or ctx.
func (in *instance) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ch := make(chan message, 1)
	in.mu.Lock()
	in.nextID++
	id := in.nextID
	in.calls[id] = ch
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		delete(in.calls, id)
		in.mu.Unlock()
	}()
	if err := in.write(message{ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: raw}); err != nil {
		return nil, err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-in.dead:
		return nil, errDied
	case <-ctx.Done():
		if in.cancels && askCancel(in, CancelParams{ID: id, Reason: cancelReason(context.Cause(ctx))}, ch) {
			return nil, fmt.Errorf("%w: %w", errCancelled, ctx.Err())
		}
		return nil, ctx.Err()
	}
}

// shortReason is s on one line, at most 200 bytes.
func shortReason(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "")
	}
	return s
}

// cancelReason is what a cancel says of its cause.
func cancelReason(cause error) string {
	switch {
	case errors.Is(cause, context.DeadlineExceeded):
		return "timeout"
	case cause != nil && !errors.Is(cause, context.Canceled):
		return shortReason(cause.Error())
	}
	return "cancelled"
}

// askCancel sends the cancel notification p (the host stopped waiting for
// a request, or for an event's event_done) and reports whether the plugin
// answered on ch within CancelGrace.
func askCancel[T any](in *instance, p CancelParams, ch <-chan T) bool {
	if err := in.notify("cancel", p); err != nil {
		return false
	}
	t := time.NewTimer(CancelGrace)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-in.dead:
	case <-t.C:
	}
	return false
}

// sendEvent writes an observer event and waits for its event_done.
func (in *instance) sendEvent(ctx context.Context, params EventParams) (EventDoneParams, error) {
	ch := make(chan EventDoneParams, 1)
	in.mu.Lock()
	in.events[params.EventID] = ch
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		delete(in.events, params.EventID)
		in.mu.Unlock()
	}()
	if err := in.notify("event", params); err != nil {
		return EventDoneParams{}, notSent{err}
	}
	select {
	case d := <-ch:
		return d, nil
	case <-in.dead:
		return EventDoneParams{}, errDied
	case <-ctx.Done():
		if in.cancels && askCancel(in, CancelParams{EventID: params.EventID, Reason: cancelReason(context.Cause(ctx))}, ch) {
			return EventDoneParams{}, fmt.Errorf("%w: %w", errCancelled, ctx.Err())
		}
		return EventDoneParams{}, ctx.Err()
	}
}

// readStdout parses one JSON-RPC message per line. A line that is not JSON,
// a line over the size limit or a flood of messages cuts the plugin off.
func (in *instance) readStdout(r io.Reader) {
	h := in.p.h
	br := bufio.NewReaderSize(r, h.MaxLine+1)
	window, count := time.Now(), 0
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			in.p.cutOff(in, "flood", fmt.Errorf("wrote a line over %d bytes on stdout", h.MaxLine))
			_, _ = io.Copy(io.Discard, br)
			return
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if now := time.Now(); now.Sub(window) >= time.Second {
				window, count = now, 0
			}
			count++
			if h.MaxRate > 0 && count > h.MaxRate {
				in.p.cutOff(in, "flood", fmt.Errorf("wrote more than %d messages in one second", h.MaxRate))
				_, _ = io.Copy(io.Discard, br)
				return
			}
			m, perr := parseMessage(line)
			if perr != nil {
				in.p.cutOff(in, "garbage", perr)
				_, _ = io.Copy(io.Discard, br)
				return
			}
			in.dispatch(m)
		}
		if err != nil {
			return
		}
	}
}

func (in *instance) dispatch(m message) {
	switch {
	case m.Method == "event_done":
		var d EventDoneParams
		if err := json.Unmarshal(m.Params, &d); err != nil {
			in.p.cutOff(in, "garbage", fmt.Errorf("malformed event_done: %v", err))
			return
		}
		in.mu.Lock()
		ch := in.events[d.EventID]
		delete(in.events, d.EventID)
		in.mu.Unlock()
		if ch != nil {
			ch <- d
		}
	case m.Method == "log":
		if !in.admitOutput() {
			break
		}
		var lp LogParams
		_ = json.Unmarshal(m.Params, &lp)
		level := slog.LevelInfo
		switch strings.ToLower(lp.Level) {
		case "debug":
			level = slog.LevelDebug
		case "warn", "warning":
			level = slog.LevelWarn
		case "error":
			level = slog.LevelError
		}
		in.p.h.log.Log(context.Background(), level, "plugin log", "plugin", in.p.spec.Name, "message", lp.Message)
	case m.Method != "":
		if len(m.ID) > 0 {
			go in.serve(m) // a request of the plugin's (ctx.llm, dispatch_tool, ...)
		}
	case len(m.ID) > 0:
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			return
		}
		in.mu.Lock()
		ch := in.calls[id]
		delete(in.calls, id)
		in.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// Plugin output (stderr lines, log messages) goes to the host log at most
// this fast: a plugin that floods it loses lines, counted, not the disk.
const (
	outputPerSecond = 50
	outputBurst     = 500
)

// readStderr forwards each stderr line to the host log with the plugin's
// name (print() and Python's logging land there), within the output rate.
func (in *instance) readStderr(r io.Reader) {
	const maxLog = 16 << 10
	br := bufio.NewReaderSize(r, maxLog)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			text := string(bytes.TrimRight(line, "\r\n"))
			if text != "" && in.admitOutput() {
				in.p.h.log.Info("plugin stderr", "plugin", in.p.spec.Name, "pid", in.pid, "line", text)
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			in.reportDropped()
			return
		}
	}
}

// admitOutput tells whether one more line of the plugin's output may be
// logged now; a line past the rate is counted, and the count is logged once
// lines are admitted again.
func (in *instance) admitOutput() bool {
	in.outMu.Lock()
	defer in.outMu.Unlock()
	if in.outLimit == nil {
		in.outLimit = rate.NewLimiter(outputPerSecond, outputBurst)
	}
	if !in.outLimit.Allow() {
		in.outDropped++
		return false
	}
	in.reportDroppedLocked()
	return true
}

// reportDropped logs the lines still counted as dropped when the output ends.
func (in *instance) reportDropped() {
	in.outMu.Lock()
	defer in.outMu.Unlock()
	in.reportDroppedLocked()
}

// reportDroppedLocked logs how many lines were dropped since the last
// report, if any (outMu held).
func (in *instance) reportDroppedLocked() {
	if in.outDropped > 0 {
		in.p.h.log.Warn("plugin output dropped: more than the host logs a second", "plugin", in.p.spec.Name,
			"pid", in.pid, "lines", in.outDropped, "per_second", outputPerSecond)
		in.outDropped = 0
	}
}
