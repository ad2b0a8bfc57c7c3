package pluginhost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/db/dbtest"
	"atrium/backend/hooks"
)

// TestMain doubles as a process that holds a site's host lock
// (PLUGINHOST_TEST_LOCK=dir) until it is killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("PLUGINHOST_TEST_LOCK"); dir != "" {
		if _, err := (Site{Dir: dir}).TryLock(); err != nil {
			os.Exit(2)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

var bg = context.Background()

func TestTheLockIsExclusiveAndDiesWithItsHolder(t *testing.T) {
	t.Parallel()
	site := Site{Dir: filepath.Join(t.TempDir(), "run")}
	l, err := site.TryLock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := site.TryLock(); !errors.Is(err, ErrHeld) || !site.Held() {
		t.Fatalf("second lock: %v", err)
	}
	l.Release()
	if site.Held() {
		t.Fatal("held after release")
	}
	if info, err := os.Stat(site.Dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("run folder: %v %v", info.Mode(), err)
	}
	// Another process holds it; SIGKILL releases it.
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), "PLUGINHOST_TEST_LOCK="+site.Dir)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "locked\n" {
		t.Fatalf("child said %q", line)
	}
	if !site.Held() {
		t.Fatal("not held while the child holds it")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if site.Held() {
		t.Fatal("a killed holder still holds the lock")
	}
}

// hostEnv is a host bus serving a site, with one plugin of each kind.
type hostEnv struct {
	site   Site
	d      *db.DB
	bus    *hooks.Bus
	srv    *Server
	h      *fakeHandler
	events chan hooks.Event
	causes chan error // why each call of the hold tool ended
}

type fakeHandler struct {
	kind      string
	handovers atomic.Int32
	onStop    func()
}

func (f *fakeHandler) Info() Info {
	return Info{PID: os.Getpid(), Kind: f.kind, Process: "test host", Since: time.Now()}
}
func (f *fakeHandler) Plugins() []PluginState {
	return []PluginState{{Name: "p", State: "running", PID: os.Getpid()}}
}
func (f *fakeHandler) Handover() error {
	if f.kind != KindBackground {
		return apperr.New(apperr.Rejected, "not a background host")
	}
	f.handovers.Add(1)
	if f.onStop != nil {
		go f.onStop()
	}
	return nil
}
func (f *fakeHandler) Stop() error    { return f.Handover() }
func (f *fakeHandler) Sync() []string { return nil }

func newHost(t *testing.T, dir, kind string) *hostEnv {
	t.Helper()
	e := &hostEnv{site: Site{Dir: filepath.Join(dir, "run")}, events: make(chan hooks.Event, 16), h: &fakeHandler{kind: kind},
		causes: make(chan error, 4)}
	if _, err := os.Stat(filepath.Join(dir, "state.db")); err == nil {
		var err error
		if e.d, err = db.Open(bg, filepath.Join(dir, "state.db"), db.Options{}); err != nil {
			t.Fatal(err)
		}
	} else {
		e.d = dbtest.Open(t, time.Now)
	}
	e.bus = hooks.NewBus(e.d, hooks.Options{Timeout: time.Second})
	p := e.bus.Plugin("p")
	must(t, p.RegisterHook(hooks.OnSessionEnd, func(_ context.Context, ev hooks.Event) error { e.events <- ev; return nil }))
	must(t, p.RegisterSync(hooks.PreLLMCall, func(_ context.Context, raw json.RawMessage) (any, error) {
		var call struct {
			SessionID string `json:"session_id"`
		}
		_ = json.Unmarshal(raw, &call)
		return map[string]any{"context": "rules for " + call.SessionID}, nil
	}))
	must(t, p.RegisterSync(hooks.PreToolCall, func(context.Context, json.RawMessage) (any, error) {
		return hooks.Results{map[string]any{"action": "modify", "args": map[string]any{"x": 2}},
			map[string]any{"action": "block", "message": "not now"}}, nil
	}))
	must(t, e.bus.Plugin("slow").RegisterSync(hooks.TransformToolRes, func(ctx context.Context, _ json.RawMessage) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	must(t, p.RegisterCommand("whoami", func(_ context.Context, args string, cc hooks.CommandContext) (string, error) {
		return "host says " + args + " in " + cc.SessionID, nil
	}, "who"))
	must(t, p.RegisterCapability(hooks.CapTool, "echo", map[string]string{"type": "object"}, func(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"method":"` + method + `","params":` + string(params) + `}`), nil
	}))
	must(t, p.RegisterCapability(hooks.CapTool, "hold", nil, func(ctx context.Context, _ string, _ json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		e.causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}))
	must(t, e.bus.Start(bg))
	l, err := e.site.TryLock()
	must(t, err)
	e.srv, err = Serve(e.site, e.bus, e.h, nil)
	must(t, err)
	var once sync.Once
	stop := func() {
		once.Do(func() {
			e.srv.Close(bg)
			_ = e.bus.Close(bg)
			l.Release()
		})
	}
	e.h.onStop = stop
	t.Cleanup(stop)
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestTheSocketIsPrivateAndRefusesOtherUsers(t *testing.T) {
	t.Parallel()
	e := newHost(t, t.TempDir(), KindBackground)
	info, err := os.Stat(e.site.SocketPath())
	if err != nil || info.Mode()&os.ModeSocket == 0 || info.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v", info.Mode(), err)
	}
	c := e.site.NewClient()
	if in, err := c.Hello(bg); err != nil || in.PID != os.Getpid() {
		t.Fatalf("hello: %+v %v", in, err)
	}
	e.srv.uid.Store(int64(os.Getuid() + 1)) // as if the caller were another user
	if _, err := c.Hello(bg); err == nil {
		t.Fatal("a caller of another uid was answered")
	}
}

// A client's bus forwards to the host's: delivery waits, pre_llm_call,
// commands and their list, capabilities.
func TestAClientBusIsServedByTheHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newHost(t, dir, KindBackground)
	clientBus := hooks.NewBus(e.d, hooks.Options{Timeout: 5 * time.Second})
	clientBus.SetRemote(e.site.NewClient())
	must(t, clientBus.Start(bg))
	t.Cleanup(func() { _ = clientBus.Close(bg) })

	var ev hooks.Event
	must(t, e.d.InTx(bg, func(tx *db.Tx) error {
		var err error
		ev, err = clientBus.EnqueueTx(bg, tx, hooks.OnSessionEnd, map[string]string{"session_id": "s1"})
		return err
	}))
	must(t, clientBus.Flush(bg))
	select {
	case got := <-e.events:
		if got.ID != ev.ID {
			t.Fatalf("host got %+v", got)
		}
	default:
		t.Fatal("Flush returned before the host delivered")
	}
	res, err := clientBus.CallSync(bg, hooks.PreLLMCall, map[string]string{"session_id": "s9"})
	if err != nil || len(res) != 1 || res[0].Plugin != "p" {
		t.Fatalf("pre_llm_call: %+v %v", res, err)
	}
	if got := hooks.ContextTexts(res); len(got) != 1 || got[0] != "rules for s9" {
		t.Fatalf("context: %v", got)
	}
	// A control hook decides the same through the host: a plugin's several
	// answers stay its Results; a timeout stays a timeout (it fails closed).
	if !clientBus.HasSync(hooks.PreToolCall) || clientBus.HasSync(hooks.PostAPIRequest) {
		t.Fatal("HasSync does not follow the host's registrations")
	}
	res, err = clientBus.CallSync(bg, hooks.PreToolCall, map[string]any{"tool_name": "t"})
	if err != nil {
		t.Fatal(err)
	}
	if d := hooks.DecideToolCall(res, map[string]any{"x": 1}); d.Action != "block" || d.Message != "not now" || d.Args["x"] != 2.0 {
		t.Fatalf("decision through the host: %+v", d)
	}
	res, err = clientBus.CallSync(bg, hooks.TransformToolRes, map[string]any{})
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, hooks.ErrTimedOut) {
		t.Fatalf("a timeout through the host: %+v %v", res, err)
	}
	out, err := clientBus.RunCommand(bg, "/WhoAmI", "a b", hooks.LocalContext("cli", "s3"))
	if err != nil || out != "host says a b in s3" {
		t.Fatalf("command: %q %v", out, err)
	}
	if _, err := clientBus.RunCommand(bg, "nope", "", hooks.CommandContext{}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("unknown command: %v", err)
	}
	var names []string
	for _, c := range clientBus.Commands().List() {
		names = append(names, c.Name+"/"+c.Plugin)
	}
	if strings.Join(names, ",") != "whoami/p" {
		t.Fatalf("commands: %v", names)
	}
	caps := clientBus.Capabilities(hooks.CapTool)
	if len(caps) != 2 || caps[0].Name != "echo" || string(caps[0].Spec) != `{"type":"object"}` || caps[1].Name != "hold" {
		t.Fatalf("capabilities: %+v", caps)
	}
	raw, err := clientBus.CallCapability(bg, "p", hooks.CapTool, "echo", "call", map[string]int{"x": 1})
	if err != nil || string(raw) != `{"method":"call","params":{"x":1}}` {
		t.Fatalf("capability call: %s %v", raw, err)
	}
	if _, err := clientBus.CallCapability(bg, "p", hooks.CapTool, "nope", "call", nil); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("unknown capability: %v", err)
	}
}

// With no host and nothing to start one, a client waits for nothing and
// asks no plugin: the events wait in the log.
func TestAClientWithoutAHost(t *testing.T) {
	t.Parallel()
	d := dbtest.Open(t, time.Now)
	bus := hooks.NewBus(d, hooks.Options{})
	bus.SetRemote(Site{Dir: filepath.Join(t.TempDir(), "run")}.NewClient())
	must(t, bus.Start(bg))
	t.Cleanup(func() { _ = bus.Close(bg) })
	must(t, d.InTx(bg, func(tx *db.Tx) error {
		_, err := bus.EnqueueTx(bg, tx, hooks.OnSessionEnd, map[string]string{})
		return err
	}))
	ctx, cancel := context.WithTimeout(bg, 5*time.Second)
	defer cancel()
	if err := bus.Flush(ctx); err != nil {
		t.Fatalf("flush without a host: %v", err)
	}
	if res, err := bus.CallSync(bg, hooks.PreLLMCall, map[string]string{}); err != nil || len(res) != 0 {
		t.Fatalf("pre_llm_call without a host: %+v %v", res, err)
	}
	if _, err := bus.RunCommand(bg, "whoami", "", hooks.CommandContext{}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("command without a host: %v", err)
	}
}

// Many callers at once start one host.
func TestEnsureStartsOneHostForManyCallers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	site := Site{Dir: filepath.Join(dir, "run")}
	var starts atomic.Int32
	start := func() error {
		starts.Add(1)
		newHost(t, dir, KindBackground)
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(bg, 20*time.Second)
			defer cancel()
			_, err := site.Ensure(ctx, site.NewClient(), start)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := starts.Load(); n != 1 {
		t.Fatalf("%d hosts started, want 1", n)
	}
}

// A window takes over from a background host, which hands over; it does not
// take over from another window.
func TestAcquireTakesOverOnlyFromABackgroundHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bgHost := newHost(t, dir, KindBackground)
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	l, _, err := bgHost.site.Acquire(ctx, bgHost.site.NewClient())
	if err != nil || bgHost.h.handovers.Load() != 1 {
		t.Fatalf("acquire from a background host: %v (handovers %d)", err, bgHost.h.handovers.Load())
	}
	l.Release()

	dir2 := t.TempDir()
	window := newHost(t, dir2, KindWindow)
	_, in, err := window.site.Acquire(ctx, window.site.NewClient())
	if !errors.Is(err, ErrHeld) || in.Kind != KindWindow {
		t.Fatalf("acquire from a window: %v %+v", err, in)
	}
	if err := window.site.NewClient().Stop(ctx); apperr.CodeOf(err) != apperr.Rejected {
		t.Fatalf("stop a window host: %v", err)
	}
}

// A profile folder too deep for a socket address still gets its socket.
func TestADeepHomeStillHasASocket(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for len(dir) < 150 {
		dir = filepath.Join(dir, "a-rather-long-folder-name")
	}
	must(t, os.MkdirAll(dir, 0o755))
	e := newHost(t, dir, KindBackground)
	if len(e.site.SocketPath()) <= maxSunPath {
		t.Fatalf("path not deep enough: %d", len(e.site.SocketPath()))
	}
	if in, err := e.site.NewClient().Hello(bg); err != nil || in.PID != os.Getpid() {
		t.Fatalf("hello on a deep socket: %+v %v", in, err)
	}
}

// A caller that stops waiting ends its call in the host too (a plugin's
// call is cancelled there), with the caller's reason when it gave one: a
// person stopped the turn in another process.
func TestACallerThatStopsWaitingEndsItsCallInTheHost(t *testing.T) {
	t.Parallel()
	e := newHost(t, t.TempDir(), KindBackground)
	c := e.site.NewClient()
	stopped := errors.New("stopped: user_stop")
	ctx, stop := context.WithCancelCause(bg)
	go func() { time.Sleep(100 * time.Millisecond); stop(stopped) }()
	if _, err := c.CallCapability(ctx, "p", hooks.CapTool, "hold", "call", nil); err == nil {
		t.Fatal("the abandoned call answered")
	}
	select {
	case cause := <-e.causes:
		if cause == nil || cause.Error() != stopped.Error() {
			t.Fatalf("the host's call ended with %v", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the host's call went on")
	}
	// A client that just goes away (a killed process) ends it as well.
	conn, err := dialUnix(e.site.SocketPath())
	must(t, err)
	_, err = conn.Write([]byte(`{"method":"call_capability","params":{"plugin":"p","kind":"tool","name":"hold","method":"call"}}` + "\n"))
	must(t, err)
	_ = conn.Close()
	select {
	case cause := <-e.causes:
		if !errors.Is(cause, errCallerGone) {
			t.Fatalf("the host's call ended with %v", cause)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the host's call went on after its caller went away")
	}
}
