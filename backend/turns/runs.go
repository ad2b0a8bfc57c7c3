package turns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/atomicfile"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
)

// Runs writes down the turns running in a profile's processes, one file
// each (<home>/run/turns/SESSION.PID.N.run), so that a person can stop a
// turn from any of them: the window a scheduled run or a gateway turn, a
// terminal the turn of another terminal. A stop asked here reaches a turn
// of this process at once; one of another process through a .stop file
// beside its .run file, which that process looks for five times a second.
// A turn is written down once it has run for a tenth of a second: one that
// ends sooner (a slash command, a cached answer) pays nothing for it, and
// nobody could have stopped it from elsewhere anyway. (Writing every turn
// down at once cost the cheapest turn 44%: 0.86 to 1.24 ms, the file's
// creation and removal landing in the store's fsyncs.)
type Runs struct {
	dir   string
	mu    sync.Mutex
	seq   int
	mine  map[string]*run // base name -> a turn of this process
	poll  time.Duration   // how often a running turn looks for a stop asked by another process
	after time.Duration   // how long a turn runs before it is written down
}

type run struct {
	sessionID string
	info      RunInfo
	stop      context.CancelCauseFunc
	done      chan struct{}
	mu        sync.Mutex
	written   bool // its file is there
	ended     bool
}

// RunInfo is a turn under way, as its file says.
type RunInfo struct {
	SessionID string    `json:"session_id"`
	Platform  string    `json:"platform"` // cli, desktop, dashboard, cron, telegram, ...
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
	// ProcessStart tells the process from a later one given its pid.
	ProcessStart string `json:"process_start,omitempty"`
	// Status is what the turn waits on now, when it waits on its model
	// (ModelStatus.Text: a retry's wait, a switch to a fallback); "" once
	// the model answered.
	Status string `json:"status,omitempty"`
}

// NewRuns keeps its files in dir (made when the first turn begins).
func NewRuns(dir string) *Runs {
	return &Runs{dir: dir, mine: map[string]*run{}, poll: 200 * time.Millisecond, after: 100 * time.Millisecond}
}

// stops are the Stops a .stop file can name (by their Invalidation).
var stops = []*Stop{StopByPerson, StopByCommand, StopByReset}

// Begin writes down a turn of sessionID running in this process until end
// is called; stop is called with the Stop a person asks for, here or from
// another process. A turn that cannot be written down runs all the same
// (only a stop from another process misses it).
func (r *Runs) Begin(sessionID, platform string, stop context.CancelCauseFunc) (end func()) {
	end, _ = r.begin(sessionID, platform, stop)
	return end
}

// begin is Begin, and status: it says what the turn waits on now (its
// RunInfo.Status), here and to the profile's other processes.
func (r *Runs) begin(sessionID, platform string, stop context.CancelCauseFunc) (end func(), status func(string)) {
	r.mu.Lock()
	r.seq++
	base := fmt.Sprintf("%s.%d.%d", sessionID, os.Getpid(), r.seq)
	ru := &run{sessionID: sessionID, stop: stop, done: make(chan struct{}),
		info: RunInfo{SessionID: sessionID, Platform: platform, PID: os.Getpid(), StartedAt: time.Now().UTC()}}
	r.mine[base] = ru
	after := r.after
	r.mu.Unlock()
	timer := time.AfterFunc(after, func() { r.writeDown(base, ru) })
	status = func(text string) { r.setStatus(base, ru, text) }
	return func() {
		timer.Stop()
		r.mu.Lock()
		delete(r.mine, base)
		r.mu.Unlock()
		ru.mu.Lock()
		ru.ended = true
		written := ru.written
		ru.mu.Unlock()
		close(ru.done)
		if written {
			_ = os.Remove(filepath.Join(r.dir, base+".run"))
			_ = os.Remove(filepath.Join(r.dir, base+".stop"))
		}
	}, status
}

// setStatus sets ru's status, and rewrites its file when it is written
// down (whole: a reader never sees it half written).
func (r *Runs) setStatus(base string, ru *run, text string) {
	r.mu.Lock()
	if ru.info.Status == text {
		r.mu.Unlock()
		return
	}
	ru.info.Status = text
	in := ru.info
	r.mu.Unlock()
	ru.mu.Lock()
	defer ru.mu.Unlock()
	if !ru.written || ru.ended {
		return // writeDown writes it with the status
	}
	in.ProcessStart = hooks.ProcessStart(os.Getpid())
	info, _ := json.Marshal(in)
	_ = atomicfile.WriteUnsynced(filepath.Join(r.dir, base+".run"), info, 0o600)
}

// writeDown writes ru's file, unless it ended, and starts its watcher.
func (r *Runs) writeDown(base string, ru *run) {
	// The id names the file: one that is no session id (a terminal's
	// argument, not yet checked) is not written down.
	if sessions.ValidateID(ru.sessionID) != nil {
		return
	}
	r.mu.Lock()
	in := ru.info
	r.mu.Unlock()
	in.ProcessStart = hooks.ProcessStart(os.Getpid())
	ru.mu.Lock()
	defer ru.mu.Unlock()
	r.mu.Lock()
	in.Status = ru.info.Status // as it is now: setStatus waits for this write
	r.mu.Unlock()
	info, _ := json.Marshal(in)
	if ru.ended || os.MkdirAll(r.dir, 0o700) != nil || os.WriteFile(filepath.Join(r.dir, base+".run"), info, 0o600) != nil {
		return
	}
	ru.written = true
	go r.watch(base, ru)
}

// watch stops ru when a .stop file appears for it.
func (r *Runs) watch(base string, ru *run) {
	t := time.NewTicker(r.poll)
	defer t.Stop()
	for {
		select {
		case <-ru.done:
			return
		case <-t.C:
		}
		b, err := os.ReadFile(filepath.Join(r.dir, base+".stop"))
		if err != nil {
			continue
		}
		ru.stop(stopNamed(strings.TrimSpace(string(b))))
		return
	}
}

// writeStop writes a .stop file whole (atomicfile: beside it, then
// renamed), so a watcher never reads it empty, which would name no Stop:
// the turn would end as a person's stop whatever asked it.
func writeStop(path string, s *Stop) error {
	return atomicfile.Write(path, []byte(s.Invalidation+"\n"), 0o600, nil)
}

func stopNamed(invalidation string) *Stop {
	for _, s := range stops {
		if s.Invalidation == invalidation {
			return s
		}
	}
	return StopByPerson
}

// Stop asks every turn running in sessionID, in any process of the
// profile, to stop with s; it returns how many it asked (0: none runs).
func (r *Runs) Stop(sessionID string, s *Stop) (int, error) {
	if err := sessions.ValidateID(sessionID); err != nil {
		return 0, err
	}
	n := 0
	r.mu.Lock()
	local := map[string]*run{}
	for base, ru := range r.mine {
		if ru.sessionID == sessionID {
			local[base] = ru
		}
	}
	r.mu.Unlock()
	for _, ru := range local {
		ru.stop(s)
		n++
	}
	others, err := r.list(sessionID)
	if err != nil {
		return n, err
	}
	for _, o := range others {
		if local[o.base] != nil {
			continue // asked above
		}
		if err := writeStop(filepath.Join(r.dir, o.base+".stop"), s); err != nil {
			return n, fmt.Errorf("ask the turn in process %d to stop: %w", o.info.PID, err)
		}
		n++
	}
	return n, nil
}

// Running lists the turns under way in the profile's processes (of one
// session, or of all when sessionID is ""), oldest first: this process's
// at once, the others' once they are written down.
func (r *Runs) Running(sessionID string) ([]RunInfo, error) {
	if sessionID != "" {
		if err := sessions.ValidateID(sessionID); err != nil {
			return nil, err
		}
	}
	list, err := r.list(sessionID)
	r.mu.Lock()
	out := make([]RunInfo, 0, len(list)+len(r.mine))
	for _, ru := range r.mine {
		if sessionID == "" || ru.sessionID == sessionID {
			out = append(out, ru.info)
		}
	}
	for _, f := range list {
		if r.mine[f.base] == nil {
			out = append(out, f.info)
		}
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.Before(out[j].StartedAt) })
	return out, err
}

// Where names where a turn runs, from its platform, as a person reads it.
func (ri RunInfo) Where() string {
	switch ri.Platform {
	case PlatformCron:
		return "the scheduler"
	case "cli":
		return "a terminal"
	case "desktop":
		return "the window"
	case "dashboard":
		return "the dashboard"
	}
	return "the gateway (" + ri.Platform + ")"
}

// Busy is Runs.Busy of the loop's Runs (nil without them).
func (l *Loop) Busy(sessionID, text string) error {
	if l.opts.Runs == nil {
		return nil
	}
	return l.opts.Runs.Busy(sessionID, text)
}

// Busy refuses a person's message, text, to sessionID while a turn runs
// there, in any process of the profile: two turns would write one
// transcript at once. nil when none runs, for a slash command (it runs no
// turn, or stops one), or when the id is no session id (sending says why).
func (r *Runs) Busy(sessionID, text string) error {
	if _, _, command := hooks.ParseCommand(text); command {
		return nil
	}
	running, err := r.Running(sessionID)
	if err != nil || len(running) == 0 {
		return nil
	}
	return apperr.New(apperr.Conflict, "a turn is already running in this session (in %s): wait for it to end, or stop it, then send",
		running[0].Where())
}

type runFile struct {
	base string
	info RunInfo
}

// list reads the .run files (of sessionID, or all), leaving out and
// removing those of processes that are gone (a crash left them).
func (r *Runs) list(sessionID string) ([]runFile, error) {
	entries, err := os.ReadDir(r.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("running turns: %w", err)
	}
	var out []runFile
	for _, e := range entries {
		name := e.Name()
		base, ok := strings.CutSuffix(name, ".run")
		if !ok {
			continue
		}
		parts := strings.Split(base, ".") // a session id may hold dots: the last two are the pid and a number
		if len(parts) < 3 || (sessionID != "" && strings.Join(parts[:len(parts)-2], ".") != sessionID) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.dir, name))
		if err != nil {
			continue // ended meanwhile
		}
		var info RunInfo
		if json.Unmarshal(b, &info) != nil || info.SessionID == "" {
			continue // being written
		}
		if !hooks.ProcessAlive(info.PID, info.ProcessStart) {
			_ = os.Remove(filepath.Join(r.dir, name))
			_ = os.Remove(filepath.Join(r.dir, base+".stop"))
			continue
		}
		out = append(out, runFile{base: base, info: info})
	}
	return out, nil
}
