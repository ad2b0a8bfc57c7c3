package proc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/hooks/hookstest"
	"atrium/backend/sessions/sessionstest"
)

type env struct {
	*sessionstest.Env
	host *Host
	spec Spec
}

// raceNoExitSleep stops the race runtime's one-second sleep at exit in the
// re-executed test binary.
const raceNoExitSleep = "GORACE=atexit_sleep_ms=0"

func goSpec(t *testing.T, name, mode string, timeout time.Duration) Spec {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Name: name, Dir: t.TempDir(), Argv: []string{exe}, Env: []string{"ATRIUM_TEST_PLUGIN=" + mode, raceNoExitSleep},
		WorkDir: filepath.Join(t.TempDir(), "work"), Timeout: timeout}
}

// newEnv starts a store, a bus and one Go test plugin in mode.
func newEnv(t *testing.T, mode string, timeout time.Duration, tune func(*Host)) *env {
	t.Helper()
	e := &env{spec: goSpec(t, "tp", mode, timeout)}
	logger := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var addErr error
	e.Env = sessionstest.NewWith(t, hooks.Options{Timeout: timeout, Logger: logger}, func(bus *hooks.Bus) {
		e.host = NewHost(bus, logger)
		if tune != nil {
			tune(e.host)
		}
		addErr = e.host.Add(e.spec)
	})
	t.Cleanup(func() { _ = e.host.Stop(context.Background()) })
	if addErr != nil && mode != "unknown-hook" && mode != "garbage-first" {
		t.Fatalf("add: %v", addErr)
	}
	return e
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func (e *env) emit(t *testing.T, hook string, payload any) hooks.Event {
	t.Helper()
	var ev hooks.Event
	err := e.DB.InTx(context.Background(), func(tx *db.Tx) error {
		var err error
		ev, err = e.Bus.EnqueueTx(context.Background(), tx, hook, payload)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func (e *env) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.Bus.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

type logLine struct {
	Seq        int64
	EventID    string
	Redelivery bool
	Hook       string
	PID        int
}

func (e *env) lines(t *testing.T) []logLine {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.spec.WorkDir, "events.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []logLine
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var x logLine
		if _, err := fmt.Sscanf(l, "%d %s %t %s %d", &x.Seq, &x.EventID, &x.Redelivery, &x.Hook, &x.PID); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, x)
	}
	return out
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	sessionstest.WaitFor(t, what, d, cond)
}

func (e *env) delivery(t *testing.T, seq int64) (status, errText string) {
	t.Helper()
	d := hookstest.Delivery(t, e.DB, seq, "tp")
	return d.Status, d.Error
}

func pidGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestHandshakeRegistersWhatThePluginDeclared(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "basic", 5*time.Second, nil)
	infos := e.host.List()
	if len(infos) != 1 || infos[0].State != StateRunning || infos[0].PID == 0 {
		t.Fatalf("list: %+v", infos)
	}
	if got := strings.Join(infos[0].Hooks, ","); got != "post_compaction,on_session_delete,pre_llm_call" {
		t.Fatalf("hooks: %s", got)
	}
	if subs := e.Bus.Subscribers(hooks.PostCompaction); !contains(subs, "tp") {
		t.Fatalf("not subscribed: %v", subs)
	}
	if contains(e.Bus.Subscribers(hooks.OnSessionStart), "tp") {
		t.Fatal("subscribed to a hook it did not declare")
	}
	if c, ok := e.Bus.Commands().Lookup("whoami"); !ok || c.Plugin != "tp" || c.Description != "who is asking" {
		t.Fatalf("command: %+v %v", c, ok)
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// A hook name Atrium does not know is a warning, never a refusal: the
// plugin runs with the hooks Atrium knows, the unknown name is reported.
func TestUnknownHookInHandshakeIsAWarning(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "unknown-hook", 5*time.Second, nil)
	infos := e.host.List()
	if len(infos) != 1 || infos[0].State != StateRunning || contains(infos[0].Hooks, "on_moon_landing") ||
		!contains(infos[0].Extras.UnknownHooks, "on_moon_landing") {
		t.Fatalf("list: %+v", infos)
	}
	if !contains(e.Bus.Subscribers(hooks.PostCompaction), "tp") {
		t.Fatal("the plugin's known hooks are not registered")
	}
}

// A child that writes something that is not JSON-RPC and exits fails its
// handshake at once, not after the handshake timeout.
func TestGarbageBeforeTheHandshakeFailsAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "basic", 5*time.Second, nil)
	start := time.Now()
	_, err := e.host.Start(context.Background(), goSpec(t, "noisy", "garbage-then-exit", 30*time.Second))
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("start: %v after %s", err, time.Since(start))
	}
	if !strings.Contains(err.Error(), "not a JSON-RPC") {
		t.Fatalf("the error does not say what the plugin wrote: %v", err)
	}
}

// A plugin that writes garbage before its handshake is cut off, and says
// so, rather than "process exited".
func TestGarbageBeforeTheHandshakeCutsThePluginOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "garbage-first", 5*time.Second, nil)
	infos := e.host.List()
	if len(infos) != 1 || infos[0].State != StateError || !strings.Contains(infos[0].Err, "cut off before its handshake") ||
		!strings.Contains(infos[0].Err, "Loading model weights") || strings.Contains(infos[0].Err, "exited") {
		t.Fatalf("list: %+v", infos)
	}
	if in, _ := e.host.Info("tp"); in.Restarts != 0 {
		t.Fatalf("a cut-off plugin was restarted: %+v", in)
	}
}

func TestEventsArriveInOrderExactlyOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "basic", 5*time.Second, nil)
	var want []string
	for i := 0; i < 50; i++ {
		hook := hooks.PostCompaction
		if i%3 == 0 {
			hook = hooks.OnSessionDelete
		}
		ev := e.emit(t, hook, map[string]any{"session_id": fmt.Sprintf("s%d", i), "n": i})
		want = append(want, ev.ID)
	}
	e.emit(t, hooks.OnSessionStart, map[string]any{"session_id": "x"}) // not declared: never sent
	e.flush(t)
	got := e.lines(t)
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d", len(got), len(want))
	}
	for i, l := range got {
		if l.EventID != want[i] || l.Redelivery {
			t.Fatalf("event %d: %+v, want %s", i, l, want[i])
		}
	}
	if st, _ := e.delivery(t, got[0].Seq); st != "ok" {
		t.Fatalf("status %s", st)
	}
	ev := e.emit(t, hooks.PostCompaction, map[string]any{"fail": true})
	e.flush(t)
	if st, msg := e.delivery(t, ev.Seq); st != "failed" || msg != "asked to fail" {
		t.Fatalf("plugin error not recorded: %s %q", st, msg)
	}
}

func TestPreLLMCallAnswerIsUsedAfterThePostCompaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "basic", 5*time.Second, nil)
	call := func(sid string) []string {
		res, err := e.Bus.CallSync(context.Background(), hooks.PreLLMCall, hooks.LLMCall{SessionID: sid, UserMessage: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Plugin == "tp" && r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		return hooks.ContextTexts(res)
	}
	if got := call("s1"); len(got) != 0 {
		t.Fatalf("context before compaction: %v", got)
	}
	for i := 0; i < 20; i++ {
		sid := fmt.Sprintf("s%d", i)
		// No flush: the call must not overtake the event queued before it.
		e.emit(t, hooks.PostCompaction, hooks.PostCompactionPayload{SessionID: sid, Kind: "summarize", Reason: "manual"})
		if got := call(sid); len(got) != 1 || got[0] != "RULES for "+sid {
			t.Fatalf("%s: %v", sid, got)
		}
		if got := call(sid); len(got) != 0 {
			t.Fatalf("%s injected twice: %v", sid, got)
		}
	}
}

func TestCommandGetsSessionContext(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "basic", 5*time.Second, nil)
	out, err := e.Bus.RunCommand(context.Background(), "whoami", "a b", hooks.GatewayContext("telegram", "s9", hooks.Source{UserID: "u42", ChatID: "c1", ChatType: "dm"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := `whoami args="a b" session=s9 key=telegram:dm:c1 platform=telegram user=u42`; out != want {
		t.Fatalf("got %q want %q", out, want)
	}
	out, err = e.Bus.RunCommand(context.Background(), "/WhoAmI", "", hooks.LocalContext("cli", "s1"))
	if err != nil || !strings.HasSuffix(out, "user=local user") {
		t.Fatalf("%q %v", out, err)
	}
}

func TestHangingCallbackTimesOutAndPluginRestarts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "basic", time.Second, nil)
	pid := e.host.List()[0].PID
	first := e.emit(t, hooks.PostCompaction, map[string]any{"n": 1})
	hung := e.emit(t, hooks.PostCompaction, map[string]any{"hang": true})
	next := e.emit(t, hooks.PostCompaction, map[string]any{"n": 3})
	e.flush(t)
	if st, msg := e.delivery(t, hung.Seq); st == "ok" || !strings.Contains(msg, "did not return within") {
		t.Fatalf("hung event: %s %q", st, msg)
	}
	// The event behind the hang reaches the restarted process: live, or
	// (if the restart outlasted its bound) as a redelivery right after it.
	waitFor(t, "the event after the hang", 10*time.Second, func() bool { return len(e.lines(t)) >= 2 })
	got := e.lines(t)
	if len(got) != 2 || got[0].EventID != first.ID || got[1].EventID != next.ID {
		t.Fatalf("lines: %+v", got)
	}
	if got[1].PID == pid {
		t.Fatal("the event after the hang went to the hung process")
	}
	waitFor(t, "old process reaped", 5*time.Second, func() bool { return pidGone(pid) })
	waitFor(t, "running", 5*time.Second, func() bool { return e.host.List()[0].State == StateRunning })
	if in := e.host.List()[0]; in.State != StateRunning || in.Restarts != 1 {
		t.Fatalf("info: %+v", in)
	}
	// The hung event is not retried.
	time.Sleep(100 * time.Millisecond)
	if st, _ := e.delivery(t, hung.Seq); st == "ok" {
		t.Fatal("hung event was retried")
	}
}

// A plugin that crashes on an event is restarted with backoff; the event it
// died on goes to the new process flagged as a redelivery, and the events
// committed while it was down follow in order as first deliveries: they
// wait in the log, nothing is recorded as failed meanwhile.
func TestCrashedPluginRestartsAndMissedEventsAreDeliveredInOrder(t *testing.T) {
	t.Parallel()
	// The bound is short of the backoff (the plugin is down for longer than
	// it), yet long enough that a loaded machine's Python answers in time.
	e := newEnv(t, "basic", 1500*time.Millisecond, func(h *Host) { h.BackoffMin = 4 * time.Second })
	pid := e.host.List()[0].PID
	var ids []string
	for i := 0; i < 5; i++ {
		pl := map[string]any{"n": i}
		if i == 2 {
			pl["crash"] = true
		}
		ids = append(ids, e.emit(t, hooks.PostCompaction, pl).ID)
	}
	waitFor(t, "the crash", 10*time.Second, func() bool { return pidGone(pid) })
	// Down for longer than the callback bound: nothing is recorded for 2..4.
	for i := 2; i < 5; i++ {
		if st, msg := e.deliveryByID(t, ids[i]); st != "" {
			t.Fatalf("event %d recorded while the plugin was down: %s %q", i, st, msg)
		}
	}
	e.flush(t)
	if in := e.host.List()[0]; in.State != StateRunning || in.PID == pid || in.Restarts != 1 {
		t.Fatalf("info: %+v", in)
	}
	last := e.emit(t, hooks.PostCompaction, map[string]any{"n": 5})
	ids = append(ids, last.ID)
	e.flush(t)
	got := e.lines(t)
	if len(got) != 6 {
		t.Fatalf("lines: %+v", got)
	}
	for i, l := range got {
		wantRe := i == 2
		if l.EventID != ids[i] || l.Redelivery != wantRe {
			t.Fatalf("line %d: %+v, want %s redelivery=%v", i, l, ids[i], wantRe)
		}
	}
	for i := range ids {
		if st, msg := e.deliveryByID(t, ids[i]); st != "ok" {
			t.Fatalf("event %d: %s %q", i, st, msg)
		}
	}
}

func (e *env) deliveryByID(t *testing.T, id string) (string, string) {
	var seq int64
	e.DB.Read.Raw(`SELECT seq FROM hook_events WHERE event_id = ?`, id).Scan(&seq)
	return e.delivery(t, seq)
}

func TestGarbageAndFloodCutThePluginOff(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"garbage", "flood"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, mode, 2*time.Second, nil)
			pid := e.host.List()[0].PID
			// A healthy second plugin on the same bus keeps working.
			good := goSpec(t, "good", "basic", 2*time.Second)
			good.Env = append(good.Env, "ATRIUM_TEST_CMD=whoami2")
			if err := e.host.Add(good); err != nil {
				t.Fatal(err)
			}
			ev := e.emit(t, hooks.PostCompaction, map[string]any{"n": 1})
			e.flush(t)
			in, _ := e.host.Info("tp")
			if in.State != StateError || !strings.Contains(in.Err, "cut off") {
				t.Fatalf("info: %+v", in)
			}
			if st, _ := e.delivery(t, ev.Seq); st == "ok" {
				t.Fatal("event to a cut-off plugin recorded ok")
			}
			waitFor(t, "cut-off child reaped", 5*time.Second, func() bool { return pidGone(pid) })
			b, _ := os.ReadFile(filepath.Join(good.WorkDir, "events.log"))
			if !strings.Contains(string(b), ev.ID) {
				t.Fatal("healthy plugin missed the event")
			}
			// Later events fail fast, and the plugin is not restarted.
			e.emit(t, hooks.PostCompaction, map[string]any{"n": 2})
			e.flush(t)
			if in, _ := e.host.Info("tp"); in.State != StateError || in.Restarts != 0 {
				t.Fatalf("info: %+v", in)
			}
		})
	}
}

func TestStopKillsAChildThatIgnoresShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "ignore-shutdown", 2*time.Second, func(h *Host) { h.Grace = 300 * time.Millisecond })
	pid := e.host.List()[0].PID
	start := time.Now()
	if err := e.host.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Fatalf("stop took %s", d)
	}
	if !pidGone(pid) {
		t.Fatal("child still exists after Stop (zombie or alive)")
	}
	if in := e.host.List()[0]; in.State != StateStopped {
		t.Fatalf("info: %+v", in)
	}
	if contains(e.Bus.Subscribers(hooks.PostCompaction), "tp") {
		t.Fatal("still subscribed after stop")
	}
}

func TestStopIsGracefulForACooperativeChild(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "basic", 2*time.Second, nil)
	pid := e.host.List()[0].PID
	start := time.Now()
	_ = e.host.Stop(context.Background())
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a cooperative child took %s", d)
	}
	if !pidGone(pid) {
		t.Fatal("child not reaped")
	}
}

func TestChildGetsExactlyTheSpecEnvironmentAndWorkDir(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "basic", 2*time.Second, nil)
	b, err := os.ReadFile(filepath.Join(e.spec.WorkDir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != "ATRIUM_TEST_PLUGIN=basic\n"+raceNoExitSleep {
		t.Fatalf("child environment: %q", got)
	}
}

// A request the host stops waiting for (its caller went away, or its time
// ran out) is cancelled in a plugin that said it answers cancel: it answers
// at once and lives on, serving the next call. One that does not answer
// the cancel within CancelGrace is restarted; one that never said so gets
// no cancel and is restarted at once, as before.
func TestACancelledRequestEndsAloneOrTheChildRestarts(t *testing.T) {
	t.Parallel()
	stopped := errors.New("stopped: user_stop")
	for _, c := range []struct {
		mode     string
		restarts bool
		cancels  bool
	}{{"cancel-ack", false, true}, {"cancel-deaf", true, true}, {"basic", true, false}} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, c.mode, 10*time.Second, nil)
			pid := e.host.List()[0].PID
			ctx, stop := context.WithCancelCause(context.Background())
			go func() { time.Sleep(100 * time.Millisecond); stop(stopped) }()
			_, err := e.Bus.RunCommand(ctx, "whoami", "hang", hooks.LocalContext("cli", "s1"))
			if err == nil {
				t.Fatal("the abandoned command answered")
			}
			cancelsLog := func() string {
				b, _ := os.ReadFile(filepath.Join(e.spec.WorkDir, "cancels.log"))
				return string(b)
			}
			if !strings.Contains(err.Error(), "caller stopped waiting") || !errors.Is(err, stopped) {
				t.Fatalf("err: %v", err)
			}
			if !c.restarts {
				waitFor(t, "the cancel", 10*time.Second, func() bool { return cancelsLog() != "" })
				// The same process answers the next call at once.
				out, err := e.Bus.RunCommand(context.Background(), "whoami", "x", hooks.LocalContext("cli", "s1"))
				if err != nil || !strings.Contains(out, `args="x"`) {
					t.Fatalf("next call: %q %v", out, err)
				}
				if in := e.host.List()[0]; in.PID != pid || in.Restarts != 0 {
					t.Fatalf("restarted: %+v (pid was %d)", in, pid)
				}
				// Its time running out cancels it the same way.
				tctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				_, err = e.Bus.RunCommand(tctx, "whoami", "hang", hooks.LocalContext("cli", "s1"))
				cancel()
				if err == nil {
					t.Fatal("the timed-out command answered")
				}
				waitFor(t, "the second cancel", 10*time.Second, func() bool { return strings.Count(cancelsLog(), "\n") == 2 })
				if _, err := e.Bus.RunCommand(context.Background(), "whoami", "y", hooks.LocalContext("cli", "s1")); err != nil {
					t.Fatal(err)
				}
				if in := e.host.List()[0]; in.PID != pid || in.Restarts != 0 {
					t.Fatalf("restarted after a timeout: %+v", in)
				}
				lines := strings.Split(strings.TrimSpace(cancelsLog()), "\n")
				if len(lines) != 2 || !strings.HasSuffix(lines[0], " "+stopped.Error()) || !strings.HasSuffix(lines[1], " timeout") {
					t.Fatalf("cancels: %q", lines)
				}
				return
			}
			waitFor(t, "the restart", 10*time.Second, func() bool {
				in := e.host.List()[0]
				return in.State == StateRunning && in.PID != pid && in.Restarts == 1
			})
			if got := strings.TrimSpace(cancelsLog()); (got != "") != c.cancels {
				t.Fatalf("cancels sent: %q", got)
			}
		})
	}
}

// panicky answers every request of a plugin's by failing, as a fault in
// Atrium would.
type panicky struct{}

func (panicky) Serve(context.Context, string, string, json.RawMessage) (any, error) {
	var tools []string
	return tools[-len(tools)-1], nil // an index out of range, as dispatch_tool once had
}

// A fault in Atrium while it answers a plugin's own request (ctx.llm,
// dispatch_tool, ...) is the plugin's error reply: the process and the
// plugin go on.
func TestAFaultAnsweringAPluginsRequestIsItsErrorNotTheEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "basic", 5*time.Second, func(h *Host) { h.SetServices(panicky{}) })
	out, err := e.Bus.RunCommand(context.Background(), "whoami", "ask-host", hooks.LocalContext("cli", "s1"))
	if err != nil || !strings.HasPrefix(out, "host answered <nil> plugin error ") ||
		!strings.Contains(out, "Atrium failed answering llm.complete (a fault of Atrium's, logged): runtime error: index out of range") {
		t.Fatalf("%q %v", out, err)
	}
	if out, err := e.Bus.RunCommand(context.Background(), "whoami", "still", hooks.LocalContext("cli", "s1")); err != nil || !strings.HasPrefix(out, `whoami args="still"`) {
		t.Fatalf("the plugin after: %q %v", out, err)
	}
}
