package proc

// The supervisor: one plugin across its processes. It starts a child and
// performs the handshake, opens it to traffic, restarts it with a backoff
// when it exits, waits for it on behalf of callers, and shuts it down with
// a grace period.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"atrium/backend/hooks"
)

// plugin is the host's record of one plugin across its restarts.
type plugin struct {
	h    *Host
	spec Spec

	mu        sync.Mutex
	inst      *instance     // the running, ready instance; nil while down
	ready     chan struct{} // closed while inst != nil or the state is final
	readyOpen bool
	state     string
	err       string
	hooks     []string
	commands  []CommandInfo
	extras    Extras
	handles   []hooks.Handle
	cmdNames  []string
	stopping  bool
	quit      chan struct{} // closed by stop: ends a pending restart at once
	restarts  int
	backoff   time.Duration
	crashID   string // the last event its process died on, and how often
	crashes   int
	lastPID   int
}

// terminalError is returned when the plugin will not come back by itself:
// it is in error, or (stopped) it is being stopped.
type terminalError struct {
	msg     string
	stopped bool
}

func (e terminalError) Error() string { return e.msg }

// changed tells the observers about p's current state.
func (p *plugin) changed() {
	h := p.h
	h.mu.Lock()
	obs := append([]func(Info){}, h.observers...)
	h.mu.Unlock()
	if len(obs) == 0 {
		return
	}
	h.notifyMu.Lock()
	defer h.notifyMu.Unlock()
	in := p.info()
	for _, fn := range obs {
		fn(in)
	}
}

// openOrRestart opens a handshaken instance to traffic, or schedules a restart if
// it died meanwhile.
func (p *plugin) openOrRestart(inst *instance) {
	if p.becomeReady(inst) {
		return
	}
	p.mu.Lock()
	restart := !p.stopping
	if restart {
		p.state = StateRestarting
		p.closeLocked()
		p.h.wg.Add(1)
		go p.restartLoop(p.backoff)
	}
	p.mu.Unlock()
	if restart {
		p.changed()
	}
}

func (h *Host) handshakeTimeout(spec Spec) time.Duration {
	// Starting an interpreter is not a callback: a short callback timeout
	// must not make a plugin fail to start on a busy machine.
	d := max(spec.Timeout, h.HandshakeTimeout)
	if spec.Timeout <= 0 && h.HandshakeTimeout <= 0 {
		d = 10 * time.Second
	}
	if d < 2*time.Second {
		d = 2 * time.Second // interpreters need a moment to start
	}
	return d
}

// startOnce spawns a child and performs the handshake.
func (p *plugin) startOnce(ctx context.Context) (*instance, InitializeResult, error) {
	var res InitializeResult
	spec := p.specNow()
	inst, err := p.spawn(spec)
	if err != nil {
		return nil, res, err
	}
	p.mu.Lock()
	p.lastPID = inst.pid
	p.mu.Unlock()
	hctx, cancel := context.WithTimeout(ctx, p.h.handshakeTimeout(spec))
	defer cancel()
	settings := p.spec.Settings
	if settings == nil {
		settings = map[string]any{}
	}
	raw, err := inst.call(hctx, "initialize", InitializeParams{ProtocolVersion: ProtocolVersion, Name: p.spec.Name,
		Settings: settings, WorkDir: p.spec.WorkDir, AtriumVersion: AtriumVersion})
	if err == nil {
		err = json.Unmarshal(raw, &res)
		if err == nil {
			sanitize(&res, p.h.log.With("plugin", p.spec.Name))
			err = validate(res)
		}
		if err != nil {
			err = terminalError{msg: fmt.Sprintf("plugin %s: bad handshake: %v", p.spec.Name, err)}
		}
	} else if cut := inst.cutOffErr(); cut != nil {
		err = terminalError{msg: fmt.Sprintf("plugin %s cut off before its handshake: %v", p.spec.Name, cut)}
	} else if hctx.Err() != nil {
		err = fmt.Errorf("plugin %s: no handshake within %s", p.spec.Name, p.h.handshakeTimeout(spec))
	} else {
		err = fmt.Errorf("plugin %s: handshake: %w", p.spec.Name, err)
	}
	if err != nil {
		inst.kill("refused")
		<-inst.dead
		return nil, res, err
	}
	inst.cancels, inst.configures = res.Cancel, res.Configure
	return inst, res, nil
}

// specNow is the plugin's spec as it is now: Configure changes its timeout
// and environment (p.mu guards those two).
func (p *plugin) specNow() Spec {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.spec
}

func validate(res InitializeResult) error {
	if res.ProtocolVersion != ProtocolVersion {
		return fmt.Errorf("protocol_version %d, the host speaks %d", res.ProtocolVersion, ProtocolVersion)
	}
	for _, hk := range res.Hooks {
		if _, err := hooks.Lookup(hk); err != nil {
			return err
		}
	}
	for _, c := range res.Commands {
		if hooks.NormalizeCommand(c.Name) == "" {
			return errors.New("a command without a name")
		}
	}
	return nil
}

// becomeReady opens the plugin to traffic and tells the bus, whose
// delivery resumes from the plugin's position in the log. If the instance
// died meanwhile, onExit or the caller restarts it.
func (p *plugin) becomeReady(inst *instance) bool {
	p.mu.Lock()
	if p.stopping || inst.isDead() {
		if !inst.isDead() {
			go inst.kill("shutdown")
		}
		p.mu.Unlock()
		return false
	}
	p.inst = inst
	p.state, p.err = StateRunning, ""
	p.openLocked()
	p.mu.Unlock()
	p.h.bus.Wake(p.spec.Name)
	p.changed()
	return true
}

func (p *plugin) openLocked() {
	if p.readyOpen {
		close(p.ready)
		p.readyOpen = false
	}
}

func (p *plugin) closeLocked() {
	if !p.readyOpen {
		p.ready = make(chan struct{})
		p.readyOpen = true
	}
}

// fail puts the plugin in the error state: it is not restarted.
func (p *plugin) fail(msg string) {
	p.mu.Lock()
	if p.state == StateStopped {
		p.mu.Unlock()
		return
	}
	p.state, p.err = StateError, msg
	p.inst = nil
	p.openLocked()
	p.mu.Unlock()
	p.h.log.Error("plugin in error state", "plugin", p.spec.Name, "error", msg)
	p.changed()
}

// cutOff kills a misbehaving child and puts the plugin in error.
func (p *plugin) cutOff(in *instance, cause string, err error) {
	in.setCutOff(err)
	p.fail(fmt.Sprintf("plugin %s cut off: %v", p.spec.Name, err))
	in.kill(cause)
}

// onExit runs once a child has been reaped.
func (p *plugin) onExit(in *instance) {
	if p.restartAfterExit(in) {
		p.changed()
	}
}

// restartAfterExit schedules the restart of a ready instance that exited;
// false when nothing changed (it was never ready, or it is being stopped).
func (p *plugin) restartAfterExit(in *instance) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inst != in {
		return false // never became ready, or already replaced: its starter handles it
	}
	p.inst = nil
	if p.stopping || p.state == StateError || p.state == StateStopped {
		return false
	}
	cause := in.killCause()
	delay := time.Duration(0)
	if cause == "" { // it crashed: back off
		delay, p.backoff = p.h.restartPolicy().next(p.backoff, time.Since(in.started))
		p.err = fmt.Sprintf("exited: %v", in.exitErr)
		p.h.log.Warn("plugin exited; restarting", "plugin", p.spec.Name, "pid", in.pid, "error", in.exitErr, "delay", delay)
	} else {
		p.err = "restarted after " + cause
	}
	p.state = StateRestarting
	p.closeLocked()
	p.h.wg.Add(1)
	go p.restartLoop(delay)
	return true
}

func (p *plugin) restartLoop(delay time.Duration) {
	defer p.h.wg.Done()
	for {
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-p.h.done:
				t.Stop()
				return
			case <-p.quit:
				t.Stop()
				return
			}
		}
		p.mu.Lock()
		stop := p.stopping
		p.mu.Unlock()
		if stop {
			return
		}
		inst, _, err := p.startOnce(context.Background())
		if err != nil {
			var te terminalError
			if errors.As(err, &te) {
				p.fail(err.Error())
				return
			}
			p.mu.Lock()
			p.err = err.Error()
			delay, p.backoff = p.h.restartPolicy().next(p.backoff, 0)
			p.mu.Unlock()
			p.h.log.Warn("plugin restart failed", "plugin", p.spec.Name, "error", err, "retry_in", delay)
			p.changed()
			continue
		}
		p.mu.Lock()
		p.restarts++
		p.mu.Unlock()
		if p.becomeReady(inst) {
			return
		}
		p.mu.Lock()
		stop = p.stopping
		delay, p.backoff = p.h.restartPolicy().next(p.backoff, 0)
		p.mu.Unlock()
		if stop {
			return
		}
	}
}

// waitRunning returns the ready instance, waiting (bounded by ctx) while the
// plugin restarts.
func (p *plugin) waitRunning(ctx context.Context) (*instance, error) {
	for {
		p.mu.Lock()
		inst, state, msg, ch := p.inst, p.state, p.err, p.ready
		stopping := p.stopping
		p.mu.Unlock()
		switch {
		// One the host is killing (a timeout, a stop) takes nothing more:
		// what comes next waits for the process that replaces it.
		case inst != nil && !inst.isDead() && inst.killCause() == "":
			return inst, nil
		case stopping || state == StateStopped:
			return nil, terminalError{msg: fmt.Sprintf("plugin %s is stopped", p.spec.Name), stopped: true}
		case state == StateError:
			return nil, terminalError{msg: fmt.Sprintf("plugin %s is in error: %s", p.spec.Name, msg)}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond): // inst died but onExit has not run yet
		}
	}
}

func (p *plugin) info() Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := Info{Name: p.spec.Name, State: p.state, Err: p.err, Hooks: append([]string{}, p.hooks...),
		Commands: append([]CommandInfo{}, p.commands...), Restarts: p.restarts, Extras: p.extras}
	if p.inst != nil {
		in.PID = p.inst.pid
	}
	return in
}

func (p *plugin) stop(ctx context.Context) {
	p.mu.Lock()
	if !p.stopping {
		close(p.quit)
	}
	p.stopping = true
	inst := p.inst
	p.mu.Unlock()
	p.unregister()
	if inst != nil && !inst.isDead() {
		_ = inst.notify("shutdown", struct{}{})
		inst.wmu.Lock()
		_ = inst.stdin.Close()
		inst.wmu.Unlock()
		t := time.NewTimer(p.h.Grace)
		select {
		case <-inst.dead:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		if !inst.isDead() {
			inst.kill("shutdown")
		}
		<-inst.dead // always reaped
	}
	p.mu.Lock()
	p.inst = nil
	if p.state != StateError {
		p.state = StateStopped
	}
	p.openLocked()
	p.mu.Unlock()
	p.changed()
}

// stableUptime is how long a child must have run for its crash to restart
// the backoff from its minimum.
const stableUptime = 30 * time.Second

// backoff is the restart policy: the delay doubles from Min up to Max, and
// a process that ran for longer than Stable before it crashed starts over
// at Min. It is a pure function of its inputs.
type backoff struct{ Min, Max, Stable time.Duration }

func (h *Host) restartPolicy() backoff {
	return backoff{Min: h.BackoffMin, Max: h.BackoffMax, Stable: stableUptime}
}

// next returns the delay before the restart that follows a crash after
// uptime (0 for a start that failed) when the current delay is cur, and the
// current delay to keep for the restart after that.
func (b backoff) next(cur, uptime time.Duration) (delay, following time.Duration) {
	if uptime > b.Stable || cur < b.Min {
		cur = b.Min
	}
	if b.Max > 0 && cur > b.Max {
		cur = b.Max
	}
	following = cur * 2
	if b.Max > 0 && following > b.Max {
		following = b.Max
	}
	return cur, following
}
