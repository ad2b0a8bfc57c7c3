package runner_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/plugins/proc"
	"atrium/backend/plugins/runner"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

const memoryPlugin = `
import asyncio

RULES = "RULES: tabs for indentation; the API lives at /v2/users"
flagged = set()
seen = []

def on_compaction(session_id, kind, **kwargs):
    seen.append(kwargs.get("event_id"))
    if kind in ("summarize", "micro_summarize"):
        flagged.add(session_id)

def inject(session_id):            # declares a subset of the fields
    if session_id in flagged:
        flagged.discard(session_id)
        return {"context": RULES}
    return None

def whoami(raw_args, source=None, session_id=None):
    user = source.user_id if source is not None else "local user"
    return "%s in %s (%s)" % (user, session_id, raw_args)

def echo(raw):                      # one argument: called as handler(raw_args)
    return "echo:" + raw

def boom(**kwargs):
    raise ValueError("kaboom")

async def slow_hello(args, platform):
    await asyncio.sleep(0.01)
    return "hello from " + platform + " " + args

async def on_reset(session_id):
    await asyncio.sleep(0.01)
    seen.append("reset:" + session_id)

def stats():
    return ",".join(s for s in seen if s and s.startswith("reset:"))

def register(ctx):
    ctx.register_hook("post_compaction", on_compaction)
    ctx.register_hook("pre_llm_call", inject)
    ctx.register_hook("on_session_delete", boom)
    ctx.register_hook("on_session_reset", on_reset)
    ctx.register_command("whoami", handler=whoami, description="who is asking")
    ctx.register_command("echo", handler=echo, description="echo")
    ctx.register_command("boom", handler=boom, description="raises")
    ctx.register_command("hello", handler=slow_hello, description="async")
    ctx.register_command("stats", handler=lambda raw: stats(), description="seen resets")
    print("registered; this print goes to stderr")
`

func python(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	return p
}

func pySpec(t *testing.T, name, dir string) proc.Spec {
	py := python(t)
	path, err := runner.WriteTo(filepath.Join(t.TempDir(), "runner"))
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "work")
	return proc.Spec{Name: name, Dir: dir, Argv: []string{py, path, dir},
		Env: []string{"PATH=/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE=1", "ATRIUM_PLUGIN_WORKDIR=" + work}, WorkDir: work, Timeout: 10 * time.Second}
}

func writePlugin(t *testing.T, src string) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "__init__.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

type pyEnv struct {
	*sessionstest.Env
	host   *proc.Host
	logsFn func() string
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, specs ...proc.Spec) *pyEnv {
	t.Helper()
	e := &pyEnv{}
	logs := &syncBuf{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	var errs []error
	e.Env = sessionstest.NewWith(t, hooks.Options{Timeout: 10 * time.Second, Logger: logger}, func(bus *hooks.Bus) {
		e.host = proc.NewHost(bus, logger)
		for _, s := range specs {
			if err := e.host.Add(s); err != nil {
				errs = append(errs, err)
			}
		}
	})
	t.Cleanup(func() {
		_ = e.host.Stop(context.Background())
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	for _, err := range errs {
		t.Fatal(err)
	}
	e.logsFn = logs.String
	return e
}

func (e *pyEnv) emit(t *testing.T, hook string, payload any) hooks.Event {
	t.Helper()
	var ev hooks.Event
	if err := e.DB.InTx(context.Background(), func(tx *db.Tx) error {
		var err error
		ev, err = e.Bus.EnqueueTx(context.Background(), tx, hook, payload)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return ev
}

func (e *pyEnv) flush(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.Bus.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestPythonMemoryPluginReinjectsOnceAfterCompaction(t *testing.T) {
	t.Parallel()
	e := start(t, pySpec(t, "memory", writePlugin(t, memoryPlugin)))
	in, _ := e.host.Info("memory")
	if in.State != proc.StateRunning || strings.Join(in.Hooks, ",") != "post_compaction,pre_llm_call,on_session_delete,on_session_reset" {
		t.Fatalf("info: %+v", in)
	}
	call := func(sid string) []string {
		res, err := e.Bus.CallSync(context.Background(), hooks.PreLLMCall, hooks.LLMCall{SessionID: sid, UserMessage: "what is the port?", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		return hooks.ContextTexts(res)
	}
	if got := call("s1"); len(got) != 0 {
		t.Fatalf("context before compaction: %v", got)
	}
	n := 5
	e.emit(t, hooks.PostCompaction, hooks.PostCompactionPayload{SessionID: "s1", Kind: "summarize", Reason: "manual", BeforeTokens: &n})
	got := call("s1")
	if len(got) != 1 || !strings.Contains(got[0], "tabs for indentation") {
		t.Fatalf("rules not re-injected: %v", got)
	}
	if got := call("s1"); len(got) != 0 {
		t.Fatalf("re-injected twice: %v", got)
	}
	if got := call("s2"); len(got) != 0 {
		t.Fatalf("other session got rules: %v", got)
	}
}

func TestPythonCommandsKnowTheirSession(t *testing.T) {
	t.Parallel()
	e := start(t, pySpec(t, "memory", writePlugin(t, memoryPlugin)))
	ctx := context.Background()
	out, err := e.Bus.RunCommand(ctx, "whoami", "x y", hooks.GatewayContext("telegram", "s7", hooks.Source{UserID: "u42", ChatID: "c1", ChatType: "dm"}))
	if err != nil || out != "u42 in s7 (x y)" {
		t.Fatalf("gateway whoami: %q %v", out, err)
	}
	out, err = e.Bus.RunCommand(ctx, "whoami", "", hooks.LocalContext("cli", "s1"))
	if err != nil || out != "local user in s1 ()" {
		t.Fatalf("local whoami: %q %v", out, err)
	}
	if out, err = e.Bus.RunCommand(ctx, "echo", "raw text", hooks.LocalContext("cli", "s1")); err != nil || out != "echo:raw text" {
		t.Fatalf("echo: %q %v", out, err)
	}
	if out, err = e.Bus.RunCommand(ctx, "hello", "there", hooks.LocalContext("desktop", "s1")); err != nil || out != "hello from desktop there" {
		t.Fatalf("async command: %q %v", out, err)
	}
	_, err = e.Bus.RunCommand(ctx, "boom", "", hooks.LocalContext("cli", "s1"))
	if err == nil || !strings.Contains(err.Error(), "kaboom") || !strings.Contains(err.Error(), "Traceback") {
		t.Fatalf("raising command: %v", err)
	}
	// It lives on.
	if out, err = e.Bus.RunCommand(ctx, "echo", "again", hooks.LocalContext("cli", "s1")); err != nil || out != "echo:again" {
		t.Fatalf("after an exception: %q %v", out, err)
	}
}

func TestPythonRaisingAndAsyncObservers(t *testing.T) {
	t.Parallel()
	e := start(t, pySpec(t, "memory", writePlugin(t, memoryPlugin)))
	bad := e.emit(t, hooks.OnSessionDelete, hooks.SessionDelete{SessionID: "s1", Reason: "delete", Profile: "default", DeletedIDs: []string{"s1"}})
	e.emit(t, hooks.OnSessionReset, hooks.SessionReset{OldSessionID: "s0", SessionID: "s9", Platform: "cli"})
	e.flush(t)
	var row struct {
		Status string
		Error  string
	}
	e.DB.Read.Raw(`SELECT status, error FROM hook_deliveries WHERE seq = ? AND subscriber = 'memory'`, bad.Seq).Scan(&row)
	if row.Status != "failed" || !strings.Contains(row.Error, "ValueError: kaboom") || !strings.Contains(row.Error, "Traceback") {
		t.Fatalf("raising observer: %+v", row)
	}
	out, err := e.Bus.RunCommand(context.Background(), "stats", "", hooks.LocalContext("cli", "s1"))
	if err != nil || out != "reset:s9" {
		t.Fatalf("async observer: %q %v", out, err)
	}
	if in, _ := e.host.Info("memory"); in.State != proc.StateRunning || in.Restarts != 0 {
		t.Fatalf("plugin did not live on: %+v", in)
	}
}

func TestSessionIndexDropsSidecarsOfEveryDeletedRow(t *testing.T) {
	t.Parallel()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "plugins", "session-index")
	spec := pySpec(t, "session-index", dir)
	e := start(t, spec)
	a := e.MustCreate(t, sessions.CreateParams{Title: "a"})
	b := e.MustCreate(t, sessions.CreateParams{Title: "b"})
	keep := e.MustCreate(t, sessions.CreateParams{Title: "keep"})
	e.flush(t)
	side := func(id string) string { return filepath.Join(spec.WorkDir, "sessions", id+".json") }
	for _, s := range []sessions.Session{a, b, keep} {
		if _, err := os.Stat(side(s.ID)); err != nil {
			// Not every store fires on_session_start on Create: seed the sidecar.
			_ = os.MkdirAll(filepath.Dir(side(s.ID)), 0o755)
			_ = os.WriteFile(side(s.ID), []byte("{}"), 0o644)
		}
	}
	if _, err := e.Sessions.Delete(context.Background(), []string{a.ID, b.ID}, nil); err != nil {
		t.Fatal(err)
	}
	e.flush(t)
	for _, id := range []string{a.ID, b.ID} {
		if _, err := os.Stat(side(id)); !os.IsNotExist(err) {
			t.Fatalf("sidecar of deleted %s survived: %v", id, err)
		}
	}
	if _, err := os.Stat(side(keep.ID)); err != nil {
		t.Fatalf("sidecar of a kept session went: %v", err)
	}
	// A payload without deleted_ids falls back to [session_id].
	e.emit(t, hooks.OnSessionDelete, map[string]any{"session_id": keep.ID, "reason": "delete", "profile": "default"})
	e.flush(t)
	if _, err := os.Stat(side(keep.ID)); !os.IsNotExist(err) {
		t.Fatalf("fallback to session_id: %v", err)
	}
}

func TestWriteToIsTheEmbeddedRunner(t *testing.T) {
	p, err := runner.WriteTo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != string(runner.Source()) || !strings.Contains(string(b), "def register_hook") {
		t.Fatal("written runner differs from the embedded one")
	}
}
