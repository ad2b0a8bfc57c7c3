package proc

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/sessions/sessionstest"
)

// stateLog records what OnState reported, in order.
type stateLog struct {
	mu  sync.Mutex
	got []Info
}

func (l *stateLog) add(in Info) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, in)
}

func (l *stateLog) states() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.got))
	for _, in := range l.got {
		out = append(out, in.State)
	}
	return out
}

func (l *stateLog) last() Info {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.got) == 0 {
		return Info{}
	}
	return l.got[len(l.got)-1]
}

func TestStateObserversSeeEveryTransition(t *testing.T) {
	t.Parallel()
	log := &stateLog{}
	e := newEnv(t, "basic", 2*time.Second, func(h *Host) {
		h.BackoffMin = 50 * time.Millisecond
		h.OnState(log.add)
	})
	if got := log.states(); strings.Join(got, ",") != StateRunning {
		t.Fatalf("after start: %v", got)
	}
	if in := log.last(); in.Name != "tp" || in.PID == 0 || len(in.Hooks) != 3 || len(in.Commands) != 1 {
		t.Fatalf("running info: %+v", in)
	}
	// A crash: restarting (with the exit), then running again.
	e.emit(t, hooks.PostCompaction, map[string]any{"crash": true})
	waitFor(t, "running again", 10*time.Second, func() bool {
		s := log.states()
		return len(s) >= 3 && s[len(s)-1] == StateRunning
	})
	s := log.states()
	if s[1] != StateRestarting {
		t.Fatalf("after the crash: %v", s)
	}
	if in := log.got[1]; !strings.Contains(in.Err, "exited") {
		t.Fatalf("restarting carries the exit: %+v", in)
	}
	// Remove stops and forgets it: the observers see it stopped.
	if err := e.host.Remove(context.Background(), "tp"); err != nil {
		t.Fatal(err)
	}
	if in := log.last(); in.State != StateStopped {
		t.Fatalf("after remove: %+v", in)
	}
	if _, ok := e.host.Info("tp"); ok || len(e.host.List()) != 0 {
		t.Fatal("removed plugin still listed")
	}
	if err := e.host.Remove(context.Background(), "tp"); err == nil {
		t.Fatal("second remove: want not found")
	}
}

func TestRemoveStopsOneAndTheNameCanStartAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "basic", 2*time.Second, nil)
	other := goSpec(t, "other", "basic", 10*time.Second) // a -race child on a busy machine may need more than 2 s to handshake
	other.Env = append(other.Env, "ATRIUM_TEST_CMD=other")
	if err := e.host.Add(other); err != nil {
		t.Fatal(err)
	}
	pid := e.host.List()[0].PID
	if err := e.host.Remove(context.Background(), "tp"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "child reaped", 5*time.Second, func() bool { return pidGone(pid) })
	if subs := e.Bus.Subscribers(hooks.PostCompaction); contains(subs, "tp") || !contains(subs, "other") {
		t.Fatalf("subscribers after remove: %v", subs)
	}
	// An event now reaches only the remaining plugin.
	e.emit(t, hooks.PostCompaction, map[string]any{"n": 1})
	e.flush(t)
	if n := len(e.lines(t)); n != 0 {
		t.Fatalf("removed plugin got %d events", n)
	}
	// The same name starts again, as a new child (a restart after its folder
	// or settings changed): the event committed meanwhile waited in the log
	// and comes first, then the next one.
	in, err := e.host.Start(context.Background(), e.spec)
	if err != nil || in.State != StateRunning || in.PID == pid {
		t.Fatalf("restart: %+v %v", in, err)
	}
	e.emit(t, hooks.PostCompaction, map[string]any{"n": 2})
	e.flush(t)
	got := e.lines(t)
	if len(got) != 2 || got[0].PID != in.PID || got[1].PID != in.PID || got[0].Seq >= got[1].Seq || got[0].Redelivery || got[1].Redelivery {
		t.Fatalf("restarted plugin got %+v, want both events in order", got)
	}
}

// runTestHost is a host process: a store in dir, one plugin that ignores
// shutdown and stdin's end, its pid on stdout; then it waits to be killed.
func runTestHost(dir string) int {
	d, err := db.Open(context.Background(), filepath.Join(dir, "state.db"), db.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	bus := hooks.NewBus(d, hooks.Options{Timeout: 2 * time.Second})
	if err := bus.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	exe, _ := os.Executable()
	h := NewHost(bus, nil)
	if err := h.Add(Spec{Name: "stubborn", Argv: []string{exe}, Env: []string{"ATRIUM_TEST_PLUGIN=ignore-shutdown", raceNoExitSleep},
		WorkDir: filepath.Join(dir, "work"), Timeout: 2 * time.Second}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(h.List()[0].PID)
	time.Sleep(time.Hour)
	return 0
}

// deadOrZombie reports that pid no longer runs: gone, or a zombie left to a
// parent that does not reap (some containers' init).
func deadOrZombie(pid int) bool {
	if pidGone(pid) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func TestNoPluginOutlivesAKilledHost(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc (Linux)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "ATRIUM_TEST_HOST="+t.TempDir(), raceNoExitSleep)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("host did not report its plugin: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || child <= 0 {
		t.Fatalf("child pid %q", line)
	}
	if deadOrZombie(child) {
		t.Fatal("plugin not running before the host is killed")
	}
	// SIGKILL: the host gets no chance to stop its children.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitFor(t, "the plugin to die with its host", 5*time.Second, func() bool { return deadOrZombie(child) })
}

// launchEnv starts a store and a bus with an empty host.
func launchEnv(t *testing.T) *env {
	t.Helper()
	e := &env{spec: goSpec(t, "tp", "basic", 5*time.Second)}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e.Env = sessionstest.NewWith(t, hooks.Options{Timeout: 5 * time.Second, Logger: logger}, func(bus *hooks.Bus) {
		e.host = NewHost(bus, logger)
	})
	t.Cleanup(func() { _ = e.host.Stop(context.Background()) })
	return e
}

var lastHandshake = InitializeResult{ProtocolVersion: ProtocolVersion, Hooks: []string{"post_compaction", "on_session_delete", "pre_llm_call"},
	Commands: []CommandInfo{{Name: "whoami", Description: "who is asking"}}}

func TestLaunchedPluginGetsEveryEventSentWhileItStarts(t *testing.T) {
	t.Parallel()
	e := launchEnv(t)
	log := &stateLog{}
	e.host.OnState(log.add)
	in, err := e.host.Launch(e.spec, lastHandshake)
	if err != nil || in.State != StateStarting {
		t.Fatalf("launch: %+v %v", in, err)
	}
	// Subscribed before its process answered: these wait for it.
	if !contains(e.Bus.Subscribers(hooks.PostCompaction), "tp") {
		t.Fatal("not subscribed while starting")
	}
	var ids []string
	for i := 0; i < 3; i++ {
		ids = append(ids, e.emit(t, hooks.PostCompaction, map[string]any{"n": i}).ID)
	}
	e.flush(t)
	got := e.lines(t)
	if len(got) != 3 {
		t.Fatalf("events: %+v", got)
	}
	for i, l := range got {
		if l.EventID != ids[i] || l.Redelivery {
			t.Fatalf("line %d: %+v, want %s", i, l, ids[i])
		}
	}
	if s := log.states(); len(s) < 2 || s[0] != StateStarting || s[len(s)-1] != StateRunning {
		t.Fatalf("states: %v", s)
	}
	// A command registered from the last handshake answers once it runs.
	out, err := e.Bus.RunCommand(context.Background(), "whoami", "x", hooks.CommandContext{SessionID: "s1"})
	if err != nil || !strings.Contains(out, "session=s1") {
		t.Fatalf("command: %q %v", out, err)
	}
}

func TestLaunchCorrectsAStaleRegistration(t *testing.T) {
	t.Parallel()
	e := launchEnv(t)
	stale := InitializeResult{ProtocolVersion: ProtocolVersion, Hooks: []string{"on_session_end"}}
	if _, err := e.host.Launch(e.spec, stale); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "running", 10*time.Second, func() bool { in, _ := e.host.Info("tp"); return in.State == StateRunning })
	if subs := e.Bus.Subscribers(hooks.OnSessionEnd); contains(subs, "tp") {
		t.Fatalf("still subscribed to what it no longer registers: %v", subs)
	}
	for _, hk := range []string{hooks.PostCompaction, hooks.OnSessionDelete} {
		if !contains(e.Bus.Subscribers(hk), "tp") {
			t.Fatalf("not subscribed to %s after its handshake", hk)
		}
	}
	if in, _ := e.host.Info("tp"); len(in.Commands) != 1 || in.Commands[0].Name != "whoami" {
		t.Fatalf("info: %+v", in)
	}
}

func TestLaunchRefusesABadPriorAndReportsAFailedStart(t *testing.T) {
	t.Parallel()
	e := launchEnv(t)
	bad := InitializeResult{ProtocolVersion: ProtocolVersion, Commands: []CommandInfo{{Name: ""}}}
	if _, err := e.host.Launch(e.spec, bad); err == nil || len(e.host.List()) != 0 {
		t.Fatalf("bad prior: %v, hosted %+v", err, e.host.List())
	}
	broken := goSpec(t, "tp", "bad-version", 5*time.Second)
	if _, err := e.host.Launch(broken, lastHandshake); err != nil {
		t.Fatal(err)
	}
	ev := e.emit(t, hooks.PostCompaction, map[string]any{"n": 1})
	e.flush(t)
	if in, _ := e.host.Info("tp"); in.State != StateError || !strings.Contains(in.Err, "protocol_version 99") {
		t.Fatalf("info: %+v", in)
	}
	if st, msg := e.delivery(t, ev.Seq); st != "" {
		t.Fatalf("event handed to a plugin that failed to start: %s %q", st, msg)
	}
	if contains(e.Bus.Subscribers(hooks.PostCompaction), "tp") {
		t.Fatal("a plugin that failed its handshake stays subscribed")
	}
}

func TestHeldLaunchStartsItsChildOnlyAtRelease(t *testing.T) {
	t.Parallel()
	e := launchEnv(t)
	e.host.Hold()
	if _, err := e.host.Launch(e.spec, lastHandshake); err != nil {
		t.Fatal(err)
	}
	ev := e.emit(t, hooks.PostCompaction, map[string]any{"n": 1})
	time.Sleep(300 * time.Millisecond)
	if in, _ := e.host.Info("tp"); in.State != StateStarting || in.PID != 0 {
		t.Fatalf("held plugin: %+v", in)
	}
	if n := len(e.lines(t)); n != 0 {
		t.Fatalf("a held plugin got %d events", n)
	}
	e.host.Release()
	e.flush(t)
	got := e.lines(t)
	if len(got) != 1 || got[0].EventID != ev.ID {
		t.Fatalf("after release: %+v", got)
	}
	if in, _ := e.host.Info("tp"); in.State != StateRunning {
		t.Fatalf("after release: %+v", in)
	}
}

func TestStoppingAHeldHostStartsNothing(t *testing.T) {
	t.Parallel()
	e := launchEnv(t)
	e.host.Hold()
	if _, err := e.host.Launch(e.spec, lastHandshake); err != nil {
		t.Fatal(err)
	}
	if err := e.host.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.host.Release()
	time.Sleep(200 * time.Millisecond)
	if in, _ := e.host.Info("tp"); in.State != StateStopped || in.PID != 0 {
		t.Fatalf("after stop: %+v", in)
	}
	if _, err := os.Stat(filepath.Join(e.spec.WorkDir, "env.txt")); err == nil {
		t.Fatal("a child started after the host stopped")
	}
}
