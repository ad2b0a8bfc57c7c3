package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/hooks/hookstest"
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
	e, errs := launch(t, specs...)
	for _, err := range errs {
		t.Fatal(err)
	}
	return e
}

// launch is start that returns the plugins' start errors.
func launch(t *testing.T, specs ...proc.Spec) (*pyEnv, []error) {
	t.Helper()
	return launchWith(t, 10*time.Second, specs...)
}

// shortBound is spec with a callback timeout of 1 s, told to the runner as
// the plugin manager tells it (ATRIUM_PLUGIN_CONTEXT).
func shortBound(spec proc.Spec) proc.Spec {
	spec.Timeout = time.Second
	spec.Env = append(spec.Env, `ATRIUM_PLUGIN_CONTEXT={"hook_timeout": 1}`)
	return spec
}

// launchWith is launch with the bus's callback timeout.
func launchWith(t *testing.T, timeout time.Duration, specs ...proc.Spec) (*pyEnv, []error) {
	t.Helper()
	e := &pyEnv{}
	logs := &syncBuf{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	var errs []error
	e.Env = sessionstest.NewWith(t, hooks.Options{Timeout: timeout, Logger: logger}, func(bus *hooks.Bus) {
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
	e.logsFn = logs.String
	return e, errs
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

// tool calls plugin's tool name (params: args, session_key, platform, ...)
// and returns the result text it answered.
func (e *pyEnv) tool(t *testing.T, ctx context.Context, plugin, name string, params map[string]any) (string, error) {
	raw, err := e.Bus.CallCapability(ctx, plugin, hooks.CapTool, name, "call", params)
	if err != nil {
		return "", err
	}
	var out struct {
		Result string `json:"result"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out.Result, nil
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
	row := hookstest.Delivery(t, e.DB, bad.Seq, "memory")
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
	// Every host module is written, the packages' __init__.py too.
	var want, got []string
	list := func(root string, into *[]string) {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && filepath.Ext(path) == ".py" {
				rel, _ := filepath.Rel(root, path)
				*into = append(*into, rel)
			}
			return nil
		})
	}
	list("hostlib", &want)
	list(filepath.Join(filepath.Dir(p), "hostlib"), &got)
	if !slices.Equal(want, got) || !slices.Contains(got, filepath.Join("agent", "__init__.py")) {
		t.Fatalf("host modules written: %v, in the source: %v", got, want)
	}
}

// A plugin without register(ctx) is taken as the familiar API's memory and
// context-engine loaders take one: the first top-level subclass of
// MemoryProvider (or ContextEngine) that can be made without arguments is
// registered; a module with neither fails to start, saying why.
func TestPythonPluginWithoutRegister(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		name, src string
		memory    []string // memory providers registered
		engines   []string // context engines registered
		err       string   // the start fails with this
	}{
		{name: "memory provider", memory: []string{"notes"}, src: `
from agent.memory_provider import MemoryProvider
from agent.context_compressor import ContextCompressor   # the host's own engine: never picked

class AbstractNotes(MemoryProvider):                     # first by name, but abstract: passed over
    pass

class Notes(AbstractNotes):
    name = "notes"
    def is_available(self):
        return True
    def initialize(self, session_id, **kwargs):
        self.session_id = session_id
    def get_tool_schemas(self):
        return []
    def prefetch(self, query, *, session_id=""):
        return "notes for %s in %s" % (query, self.session_id)
`},
		{name: "context engine", engines: []string{"folder"}, src: `
from agent.context_engine import ContextEngine

class Folder(ContextEngine):
    name = "folder"
    def update_from_response(self, usage):
        pass
    def should_compress(self, prompt_tokens=None):
        return (prompt_tokens or 0) > 10
    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return messages[-1:]
`},
		{name: "neither", src: "VALUE = 1\n",
			err: "has no register(ctx), and it defines no MemoryProvider or ContextEngine subclass either"},
		{name: "needs arguments", err: "has no register(ctx), and Needy() raised TypeError", src: `
from agent.memory_provider import MemoryProvider

class Needy(MemoryProvider):
    name = "needy"
    def __init__(self, folder):
        self.folder = folder
    def is_available(self):
        return True
    def initialize(self, session_id, **kwargs):
        pass
    def get_tool_schemas(self):
        return []
`},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			e, errs := launch(t, pySpec(t, "bare", writePlugin(t, sc.src)))
			if sc.err != "" {
				if len(errs) != 1 || !strings.Contains(errs[0].Error(), sc.err) {
					t.Fatalf("start: %v, want %q", errs, sc.err)
				}
				return
			}
			if len(errs) != 0 {
				t.Fatal(errs)
			}
			in, _ := e.host.Info("bare")
			names := func(ns []proc.NamedInfo) []string {
				var out []string
				for _, n := range ns {
					out = append(out, n.Name)
				}
				return out
			}
			if in.State != proc.StateRunning || !slices.Equal(names(in.Extras.Memory), sc.memory) ||
				!slices.Equal(names(in.Extras.Engines), sc.engines) {
				t.Fatalf("registered: %+v", in)
			}
			ctx := context.Background()
			if len(sc.memory) > 0 {
				c, ok := e.Bus.MemoryProvider("notes")
				if !ok {
					t.Fatal("the provider is not on the bus")
				}
				a, err := e.Bus.CallMemory(ctx, c, "prefetch", hooks.MemoryCall{Args: []any{"the port"}, SessionID: "s1", Platform: "cli"})
				if err != nil || !a.Available || a.Text() != "notes for the port in s1" {
					t.Fatalf("prefetch: %+v %v", a, err)
				}
			}
			if len(sc.engines) > 0 {
				e.Bus.SelectContextEngine("folder")
				c, ok := e.Bus.ContextEngine()
				if !ok {
					t.Fatal("the engine is not on the bus")
				}
				v, err := e.Bus.CallEngine(ctx, c, "should_compress", hooks.EngineCall{Args: []any{11}, SessionID: "s1"})
				if err != nil || string(v) != "true" {
					t.Fatalf("should_compress: %s %v", v, err)
				}
			}
		})
	}
}

const duckEngine = `
class Duck:                                  # no ContextEngine base, as the familiar agent allows
    def __init__(self, label):
        self.label = label
        self.seen = []

    @property
    def name(self):
        return self.label

    def update_from_response(self, usage):
        self.seen.append(usage.get("prompt_tokens"))

    def should_compress(self, prompt_tokens=None):
        return bool(self.seen) and (prompt_tokens or 0) >= 100

    def compress(self, messages, current_tokens=None, focus_topic=None, force=False, memory_context=""):
        return [{"role": "system", "content": "folded %d by %s (%s)" % (len(messages), self.label, self.context_length)}]

class Lame:                                  # no compress: refused
    name = "lame"
    def should_compress(self, prompt_tokens=None):
        return False
    def update_from_response(self, usage):
        pass

def register(ctx):
    ctx.register_context_engine(Lame())
    ctx.register_context_engine(Duck("duck"))
`

// A context engine that does not inherit from ContextEngine but has its
// methods is driven as a subclass is: its own methods, and the base class's
// defaults for the optional ones it lacks (their state on the object
// itself); an object without them is still refused, with a warning.
func TestPythonDuckTypedContextEngine(t *testing.T) {
	t.Parallel()
	e := start(t, pySpec(t, "duck", writePlugin(t, duckEngine)))
	in, _ := e.host.Info("duck")
	if len(in.Extras.Engines) != 1 || in.Extras.Engines[0].Name != "duck" ||
		!slices.Contains(in.Extras.Warnings, "tried to register a context engine that does not inherit from ContextEngine (ignored)") {
		t.Fatalf("registered: %+v", in.Extras)
	}
	e.Bus.SelectContextEngine("duck")
	c, ok := e.Bus.ContextEngine()
	if !ok {
		t.Fatal("the engine is not on the bus")
	}
	call := func(method string, args ...any) any {
		t.Helper()
		raw, err := e.Bus.CallEngine(context.Background(), c, method,
			hooks.EngineCall{Args: args, SessionID: "s1", Model: "m", ContextLength: 1000})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	tool := map[string]any{"role": "tool", "content": "x"}
	steps := []struct {
		method string
		args   []any
		want   any
	}{
		{"should_compress", []any{500}, false}, // its own: nothing seen yet
		{"get_tool_schemas", nil, []any{}},     // the defaults of the base class
		{"has_content_to_compress", []any{[]any{tool}}, true},
		{"prune_tool_results_only", []any{[]any{tool}}, []any{[]any{tool}, 0.0}},
		{"handle_tool_call", []any{"t", map[string]any{}}, `{"error": "Unknown context engine tool: t"}`},
		// update_model's default set the object's context_length (1000) and
		// threshold (75%).
		{"get_status", nil, map[string]any{"compression_count": 0.0, "context_length": 1000.0, "last_prompt_tokens": 0.0,
			"threshold_tokens": 750.0, "usage_percent": 0.0}},
		{"compress", []any{[]any{tool, tool}}, []any{map[string]any{"role": "system", "content": "folded 2 by duck (1000)"}}},
		{"update_from_response", []any{map[string]any{"prompt_tokens": 500}}, nil},
		{"should_compress", []any{500}, true},
	}
	for _, s := range steps {
		if got := call(s.method, s.args...); !reflect.DeepEqual(got, s.want) {
			t.Fatalf("%s: %#v, want %#v", s.method, got, s.want)
		}
	}
}

// plugins.plugin_storage is the host's, and plugin_data_dir(the plugin's
// own name) is its working folder; any other plugins.X is a clear
// ImportError, unless the plugin ships a package called plugins, which it
// keeps; tools.registry registers a tool only while the plugin loads.
func TestPythonHostPackagePlugins(t *testing.T) {
	t.Parallel()
	const src = `
import importlib
from pathlib import Path

from plugins.plugin_storage import plugin_data_dir
from tools.registry import registry, tool_result

registry.register(name="early", toolset="t", schema={"name": "early", "parameters": {"type": "object"}},
                  handler=lambda args, **kw: tool_result(ok=True))

def _import(name):
    try:
        return getattr(importlib.import_module(name), "VALUE", "imported")
    except ImportError as exc:
        return "%s: %s" % (type(exc).__name__, exc)

def register(ctx):
    def show(raw):
        registry.register(name="late", toolset="t", schema={"name": "late"}, handler=lambda args, **kw: "")
        return "|".join([str(plugin_data_dir(ctx.plugin_id) == Path(ctx.work_dir)), _import("plugins.helper"),
                         _import("plugins.memory"), ",".join(sorted(ctx.tools))])
    ctx.register_command("show-" + ctx.plugin_id, handler=show, description="what the host modules gave")
`
	owning := writePlugin(t, src)
	if err := os.MkdirAll(filepath.Join(owning, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"__init__.py": "", "helper.py": "VALUE = 'its own helper'\n"} {
		if err := os.WriteFile(filepath.Join(owning, "plugins", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := start(t, pySpec(t, "plain", writePlugin(t, src)), pySpec(t, "owning", owning))
	missing := func(name string) string {
		return "ModuleNotFoundError: No module named '" + name + "': in Atrium the package plugins holds only " +
			"plugins.plugin_storage (the familiar agent's other plugins.* modules belong to that agent, not to its plugin API)"
	}
	for plugin, want := range map[string]string{
		"plain":  "True|" + missing("plugins.helper") + "|" + missing("plugins.memory") + "|early",
		"owning": "True|its own helper|ModuleNotFoundError: No module named 'plugins.memory'|early",
	} {
		out, err := e.Bus.RunCommand(context.Background(), "show-"+plugin, "", hooks.LocalContext("cli", "s1"))
		if err != nil || out != want {
			t.Fatalf("%s:\n got %q (%v)\nwant %q", plugin, out, err, want)
		}
	}
	if in, _ := e.host.Info("plain"); len(in.Extras.Tools) != 1 || in.Extras.Tools[0].Name != "early" {
		t.Fatalf("tools: %+v", in.Extras.Tools)
	}
}

const sideBySidePlugin = `
import os, threading, time
from tools.interrupt import is_interrupted, get_interrupt_reason
from gateway.session_context import get_session_env

gate, waiting = threading.Event(), threading.Event()
log = []

def wait_gate(args, **kw):
    waiting.set()
    return "opened" if gate.wait(10) else "never opened"

def is_waiting(args, **kw):
    return str(waiting.is_set())

def open_gate(args, **kw):
    gate.set()
    return "open"

def careful(args, **kw):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if is_interrupted():
            log.append("interrupted (%s)" % get_interrupt_reason())
            return "stopped early"
        time.sleep(0.01)
    log.append("ran out")
    return "done"

def stubborn(args, **kw):  # never looks at its interrupt
    time.sleep(float(args.get("seconds", 30)))
    return "late"

def whose(args, **kw):
    mine = os.environ.get("HERMES_SESSION_KEY")
    time.sleep(0.3)  # another call's conversation would show by now
    return "%s|%s|%s|%s" % (mine, os.environ.get("HERMES_SESSION_KEY"), get_session_env("HERMES_SESSION_KEY"),
                            get_session_env("HERMES_SESSION_PLATFORM"))

def seen(args, **kw):
    return ";".join(log)

def identity(args, **kw):
    return "|".join(get_session_env("HERMES_SESSION_" + k) for k in ("PLATFORM", "USER_ID", "CHAT_ID", "CHAT_TYPE", "SOURCE")) + \
        "|" + get_session_env("HERMES_CRON_SESSION")

def register(ctx):
    for fn in (wait_gate, is_waiting, open_gate, careful, stubborn, whose, seen, identity):
        ctx.register_tool(name=fn.__name__, toolset="t", schema={"name": fn.__name__, "parameters": {"type": "object"}},
                          handler=fn)
`

// A plugin serves every conversation of its profile: its tool calls run
// side by side (one waits on what another does), each sees its own
// conversation in os.environ and gateway.session_context, and a cancelled
// call sets its thread's interrupt (tools.interrupt) and ends alone: the
// plugin is not restarted, unless cancelled calls that ignore it pile up.
func TestPythonToolCallsRunSideBySideAndACancelEndsOne(t *testing.T) {
	t.Parallel()
	e := start(t, pySpec(t, "side", writePlugin(t, sideBySidePlugin)))
	call := func(ctx context.Context, name string, params map[string]any) (string, error) {
		params["args"] = map[string]any{}
		if a, ok := params["a"]; ok {
			params["args"] = a
			delete(params, "a")
		}
		return e.tool(t, ctx, "side", name, params)
	}
	bg := context.Background()
	info := func() proc.Info { in, _ := e.host.Info("side"); return in }
	pid := info().PID

	// Side by side: the gate is opened by a second call while the first waits.
	waited := make(chan string, 1)
	go func() { out, _ := call(bg, "wait_gate", map[string]any{}); waited <- out }()
	sessionstest.WaitFor(t, "wait_gate under way", 10*time.Second, func() bool {
		out, _ := call(bg, "is_waiting", map[string]any{})
		return out == "True"
	})
	if out, err := call(bg, "open_gate", map[string]any{}); err != nil || out != "open" {
		t.Fatalf("open_gate: %q %v", out, err)
	}
	if out := <-waited; out != "opened" {
		t.Fatalf("wait_gate: %q", out)
	}

	// Each call its own conversation.
	got := byConversation(func(k string) string {
		out, err := call(bg, "whose", map[string]any{"session_key": k, "platform": strings.Split(k, ":")[0]})
		if err != nil {
			t.Error(err)
		}
		return out
	})
	for k, out := range got {
		if p := strings.Split(k, ":")[0]; out != k+"|"+k+"|"+k+"|"+p {
			t.Fatalf("%s saw %q", k, out)
		}
	}
	if out, _ := call(bg, "whose", map[string]any{}); out != "None|None||" {
		t.Fatalf("a call of no conversation saw %q", out)
	}
	// The sender and the chat of a chat platform's call; a local surface
	// is the source; a scheduled run says so (HERMES_CRON_SESSION).
	for _, c := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"session_key": "telegram:dm:c1", "platform": "telegram",
			"source": map[string]any{"user_id": "u1", "chat_id": "c1", "chat_type": "dm"}}, "telegram|u1|c1|dm||"},
		{map[string]any{"session_key": "desktop:s1", "platform": "desktop"}, "desktop||||desktop|"},
		{map[string]any{"session_key": "cron:s2", "platform": "cron"}, "cron||||cron|1"},
	} {
		if out, err := call(bg, "identity", c.params); err != nil || out != c.want {
			t.Fatalf("%v: %q %v, want %q", c.params, out, err, c.want)
		}
	}

	// A person stops the turn: the call is cancelled, sees its interrupt
	// and ends; the plugin lives on.
	ctx, stop := context.WithCancelCause(bg)
	go func() { time.Sleep(200 * time.Millisecond); stop(errors.New("stopped: user_stop")) }()
	if _, err := call(ctx, "careful", map[string]any{}); err == nil {
		t.Fatal("the stopped call answered")
	}
	sessionstest.WaitFor(t, "the interrupted call's end", 10*time.Second, func() bool {
		out, _ := call(bg, "seen", map[string]any{})
		return out != ""
	})
	if out, _ := call(bg, "seen", map[string]any{}); out != "interrupted (stopped: user_stop)" {
		t.Fatalf("seen: %q", out)
	}
	if in := info(); in.PID != pid || in.Restarts != 0 {
		t.Fatalf("restarted: %+v (pid was %d)", in, pid)
	}

	// Calls that ignore their interrupt keep running; the fifth such call
	// makes the runner exit, and the host starts it again.
	for i := 1; i <= 5; i++ {
		tctx, cancel := context.WithTimeout(bg, 150*time.Millisecond)
		_, err := call(tctx, "stubborn", map[string]any{"a": map[string]any{"seconds": 30}})
		cancel()
		if err == nil {
			t.Fatalf("stubborn call %d answered", i)
		}
		if i < 5 {
			if out, err := call(bg, "open_gate", map[string]any{}); err != nil || out != "open" {
				t.Fatalf("after %d cancelled calls: %q %v", i, out, err)
			}
			if in := info(); in.PID != pid {
				t.Fatalf("restarted after %d cancelled calls: %+v", i, in)
			}
		}
	}
	sessionstest.WaitFor(t, "the restart", 20*time.Second, func() bool {
		in := info()
		return in.State == proc.StateRunning && in.PID != pid && in.Restarts == 1
	})
	if out, err := call(bg, "open_gate", map[string]any{}); err != nil || out != "open" {
		t.Fatalf("after the restart: %q %v", out, err)
	}
	if logs := e.logsFn(); !strings.Contains(logs, "5 cancelled calls still run") {
		t.Fatalf("the runner did not say why it exited:\n%s", logs)
	}
}

// An observer callback that outlives its bound (an upload to a slow
// server) is cancelled, not its plugin restarted: the event fails on its
// bound, the callback sees its interrupt ("timeout") and returns, and the
// plugin goes on with the next events, in the same process.
func TestAnObserverThatOutlivesItsBoundIsCancelled(t *testing.T) {
	t.Parallel()
	e, errs := launchWith(t, time.Second, shortBound(pySpec(t, "slowobs", writePlugin(t, `
import time
from tools.interrupt import is_interrupted, get_interrupt_reason

seen = []

def on_end(session_id="", **kw):
    if session_id == "slow":
        deadline = time.time() + 20
        while not is_interrupted() and time.time() < deadline:
            time.sleep(0.02)
        seen.append("slow: interrupted (%s)" % get_interrupt_reason() if is_interrupted() else "slow: ran out")
        return
    seen.append("%s: interrupted %s" % (session_id, is_interrupted()))

def seen_cmd(raw_args=""):
    return "; ".join(seen)

def register(ctx):
    ctx.register_hook("on_session_end", on_end)
    ctx.register_command("seen", handler=seen_cmd, description="what it saw")
`))))
	for _, err := range errs {
		t.Fatal(err)
	}
	in, _ := e.host.Info("slowobs")
	pid := in.PID
	slow := e.emit(t, hooks.OnSessionEnd, map[string]any{"session_id": "slow"})
	next := e.emit(t, hooks.OnSessionEnd, map[string]any{"session_id": "next"})
	e.flush(t)
	status := func(ev hooks.Event) (st, msg string) {
		d := hookstest.Delivery(t, e.DB, ev.Seq, "slowobs")
		return d.Status, d.Error
	}
	if st, msg := status(slow); st != "timeout" || !strings.Contains(msg, "did not return within") ||
		!strings.HasSuffix(msg, "; cancelled (plugin slowobs goes on)") {
		t.Fatalf("the slow event: %s %q", st, msg)
	}
	if st, msg := status(next); st != "ok" {
		t.Fatalf("the next event: %s %q", st, msg)
	}
	out, err := e.Bus.RunCommand(context.Background(), "seen", "", hooks.LocalContext("cli", "s1"))
	if err != nil || out != "slow: interrupted (timeout); next: interrupted False" {
		t.Fatalf("the plugin saw %q (%v)", out, err)
	}
	if in, _ := e.host.Info("slowobs"); in.PID != pid || in.Restarts != 0 {
		t.Fatalf("restarted: %+v (pid was %d)", in, pid)
	}
}

// An observer callback that ignores its interrupt holds the runner's main
// thread, where the next event waits: past a grace well inside that event's
// bound the runner exits, and the restarted plugin takes the events after
// it (none is lost but the one that hung).
func TestAnObserverThatIgnoresItsCancelIsEndedByARestart(t *testing.T) {
	t.Parallel()
	e, errs := launchWith(t, time.Second, shortBound(pySpec(t, "deaf", writePlugin(t, `
import time

def on_end(session_id="", **kw):
    if session_id == "deaf":
        time.sleep(60)

def register(ctx):
    ctx.register_hook("on_session_end", on_end)
`))))
	for _, err := range errs {
		t.Fatal(err)
	}
	in, _ := e.host.Info("deaf")
	pid := in.PID
	deaf := e.emit(t, hooks.OnSessionEnd, map[string]any{"session_id": "deaf"})
	behind := e.emit(t, hooks.OnSessionEnd, map[string]any{"session_id": "behind"})
	last := e.emit(t, hooks.OnSessionEnd, map[string]any{"session_id": "after"})
	status := func(ev hooks.Event) string { return hookstest.Delivery(t, e.DB, ev.Seq, "deaf").Status }
	sessionstest.WaitFor(t, "the events after the restart", 30*time.Second, func() bool { return status(last) == "ok" })
	if a, b := status(deaf), status(behind); a != "timeout" || b != "ok" {
		t.Fatalf("the deaf event %s, the one behind it %s", a, b)
	}
	if logs := e.logsFn(); !strings.Contains(logs, "still runs after 0.4s; exiting so that the host starts the plugin again") {
		t.Fatalf("the runner did not say why it exited:\n%s", logs)
	}
	if in, _ := e.host.Info("deaf"); in.PID == pid || in.Restarts != 1 {
		t.Fatalf("not restarted once: %+v (pid was %d)", in, pid)
	}
}

// A child process a tool starts during a call (subprocess with env=None,
// os.popen) inherits that call's conversation, as in the familiar agent,
// even while another conversation's call runs; one started outside any
// call inherits the process's environment. A name set in the process's own
// environment (atrium started from inside another agent's session) does
// not leak into a call that binds it empty, and dict(os.environ) works.
func TestAChildProcessInheritsItsCallsConversation(t *testing.T) {
	t.Parallel()
	spec := pySpec(t, "kids", writePlugin(t, `
import os, subprocess, sys, time

def child(args, **kw):
    time.sleep(float(args.get("wait", 0)))
    code = "import os; print(os.environ.get('HERMES_SESSION_KEY', '-') + '|' + os.environ.get('HERMES_SESSION_PLATFORM', '-'))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    popen = os.popen(sys.executable + ' -c "import os; print(os.environ.get(\'HERMES_SESSION_KEY\', \'-\'))"').read().strip()
    env = dict(os.environ)
    return "%s;%s;%s" % (run, popen, env.get("HERMES_SESSION_PLATFORM", "-"))

AT_LOAD = subprocess.run([sys.executable, "-c", "import os; print(os.environ.get('HERMES_SESSION_KEY', '-'))"],
                         capture_output=True, text=True).stdout.strip()

def at_load(args, **kw):
    return AT_LOAD

def register(ctx):
    for fn in (child, at_load):
        ctx.register_tool(name=fn.__name__, toolset="t", schema={"name": fn.__name__, "parameters": {"type": "object"}},
                          handler=fn)
`))
	spec.Env = append(spec.Env, "HERMES_SESSION_KEY=outer", "HERMES_SESSION_PLATFORM=outer-platform")
	e := start(t, spec)
	call := func(name string, params map[string]any) string {
		out, err := e.tool(t, context.Background(), "kids", name, params)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := call("at_load", map[string]any{"args": map[string]any{}}); got != "outer" {
		t.Fatalf("a child started while the plugin loads: %q", got)
	}
	got := byConversation(func(k string) string {
		params := map[string]any{"session_key": k, "args": map[string]any{"wait": 0.2}}
		if strings.HasPrefix(k, "telegram") {
			params["platform"] = "telegram"
		}
		return call("child", params)
	})
	// The desktop call binds no platform: it reads empty, not the process's.
	if got["telegram:dm:1"] != "telegram:dm:1|telegram;telegram:dm:1;telegram" || got["desktop:s2"] != "desktop:s2|-;desktop:s2;-" {
		t.Fatalf("children saw %q", got)
	}
	if out := call("child", map[string]any{"args": map[string]any{}}); out != "outer|outer-platform;outer;outer-platform" {
		t.Fatalf("a call of no conversation: %q", out)
	}
}

// A memory provider's call that a person stops (a recall over the network,
// here one that waits for its interrupt) is answered as cancelled at once:
// the provider sees tools.interrupt with the reason and returns, its answer
// is dropped, and the plugin lives on with what it holds (same process, no
// restart); its next call is not interrupted.
func TestAStoppedMemoryCallEndsWithoutARestart(t *testing.T) {
	t.Parallel()
	e := start(t, pySpec(t, "recall", writePlugin(t, `
import time
from agent.memory_provider import MemoryProvider
from tools.interrupt import is_interrupted, get_interrupt_reason

class Recall(MemoryProvider):
    name = "recall"
    def __init__(self):
        self.calls = []
    def is_available(self):
        return True
    def initialize(self, session_id, **kwargs):
        pass
    def get_tool_schemas(self):
        return []
    def prefetch(self, query, *, session_id=""):
        self.calls.append(query)
        if query == "slow":
            deadline = time.time() + 20
            while not is_interrupted() and time.time() < deadline:
                time.sleep(0.02)
            self.calls.append("interrupted (%s)" % get_interrupt_reason() if is_interrupted() else "not interrupted")
            return "late"
        return "%s; interrupted now: %s" % (" | ".join(self.calls), is_interrupted())

def register(ctx):
    ctx.register_memory_provider(Recall())
`)))
	c, ok := e.Bus.MemoryProvider("recall")
	if !ok {
		t.Fatal("the provider is not on the bus")
	}
	bg := context.Background()
	in, _ := e.host.Info("recall")
	pid := in.PID
	ctx, stop := context.WithCancelCause(bg)
	go func() { time.Sleep(300 * time.Millisecond); stop(errors.New("stopped: user_stop")) }()
	began := time.Now()
	if a, err := e.Bus.CallMemory(ctx, c, "prefetch", hooks.MemoryCall{Args: []any{"slow"}, SessionID: "s1", Platform: "cli"}); err == nil {
		t.Fatalf("the stopped call answered: %+v", a)
	}
	if took := time.Since(began); took > proc.CancelGrace {
		t.Fatalf("the cancel took %s (the plugin was restarted?)", took)
	}
	var text string
	sessionstest.WaitFor(t, "the next prefetch", 20*time.Second, func() bool {
		a, err := e.Bus.CallMemory(bg, c, "prefetch", hooks.MemoryCall{Args: []any{"next"}, SessionID: "s1", Platform: "cli"})
		text = a.Text()
		return err == nil
	})
	if text != "slow | interrupted (stopped: user_stop) | next; interrupted now: False" {
		t.Fatalf("the provider saw: %q", text)
	}
	if in, _ := e.host.Info("recall"); in.PID != pid || in.Restarts != 0 || in.State != proc.StateRunning {
		t.Fatalf("restarted: %+v (pid was %d)", in, pid)
	}
}

// Someone who also runs the familiar agent has its packages (agent, tools,
// gateway, hermes_cli) installed where Python finds them: the plugin still
// imports the runner's host modules of those names, not that agent's.
func TestHostModulesWinOverInstalledPackagesOfTheSameName(t *testing.T) {
	t.Parallel()
	site := t.TempDir()
	for _, pkg := range []string{"agent", "tools", "gateway", "hermes_cli"} {
		if err := os.MkdirAll(filepath.Join(site, pkg), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(site, pkg, "__init__.py"), []byte("INSTALLED = True\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := pySpec(t, "shadowed", writePlugin(t, `
import agent, tools, gateway, hermes_cli
from agent.memory_provider import MemoryProvider
from tools.registry import tool_result
from tools.interrupt import is_interrupted
from gateway.session_context import get_session_env
from hermes_cli.profiles import get_active_profile_name

def register(ctx):
    for m in (agent, tools, gateway, hermes_cli):
        if getattr(m, "INSTALLED", False):
            raise RuntimeError("imported the installed " + m.__name__)
    ctx.register_command("ok", handler=lambda raw: tool_result(ok=not is_interrupted()), description="ok")
`))
	spec.Env = append(spec.Env, "PYTHONPATH="+site)
	e := start(t, spec)
	if out, err := e.Bus.RunCommand(context.Background(), "ok", "", hooks.LocalContext("cli", "s1")); err != nil || !strings.Contains(out, "true") {
		t.Fatalf("ok: %q %v", out, err)
	}
}

// What a plugin's children, or C code, write to the process's standard
// output (a tool that runs git, os.system, a library that writes to fd 1)
// goes to the plugin's log, as a print() does, and never into the
// protocol; a child that reads its standard input reads nothing, never a
// host message. The plugin lives on (same process), and os.system runs its
// command with the call's conversation and returns its wait status; a tool
// that calls sys.exit() fails that call. On the old runner the first
// os.system put the plugin in error.
func TestAChildsOutputDoesNotBreakTheProtocol(t *testing.T) {
	t.Parallel()
	spec := pySpec(t, "loud", writePlugin(t, `
import os, subprocess, sys

def loud(args, **kw):
    subprocess.run([sys.executable, "-c", "print('from a child')"], check=True)
    os.write(1, b"straight to fd 1\n")
    status = os.system("echo from os.system $HERMES_SESSION_KEY; exit 3")
    if args.get("exit"):
        sys.exit(args["exit"])
    killed = os.system("kill -TERM $$")
    read = subprocess.run(["cat"], capture_output=True, timeout=10).stdout + sys.stdin.read().encode()
    return "status=%d exit=%d killed=%d read=%r" % (status, os.waitstatus_to_exitcode(status), killed, read)

def register(ctx):
    ctx.register_tool(name="loud", toolset="t", schema={"name": "loud", "parameters": {"type": "object"}}, handler=loud)
    print("printed at load")
    os.system("echo os.system at load")
`))
	e := start(t, spec)
	pid := e.host.List()[0].PID
	for i := range 2 {
		out, err := e.tool(t, context.Background(), "loud", "loud", map[string]any{"args": map[string]any{}, "session_key": "desktop:s1"})
		if err != nil || out != "status=768 exit=3 killed=15 read=b''" {
			t.Fatalf("call %d: %q %v\n%s", i, out, err, e.logsFn())
		}
	}
	// sys.exit() in a tool fails that call at once, not the plugin.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := e.tool(t, ctx, "loud", "loud", map[string]any{"args": map[string]any{"exit": 4}}); err == nil || !strings.Contains(err.Error(), "SystemExit: 4") {
		t.Fatalf("a tool that calls sys.exit: %q %v", out, err)
	}
	if list := e.host.List(); len(list) != 1 || list[0].PID != pid || list[0].State != proc.StateRunning {
		t.Fatalf("after the calls: %+v (pid was %d)\n%s", list, pid, e.logsFn())
	}
	logs := e.logsFn()
	for _, want := range []string{"from a child", "straight to fd 1", "from os.system desktop:s1", "printed at load", "os.system at load"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the plugin's log lacks %q:\n%s", want, logs)
		}
	}
}

// byConversation runs call for two conversations at once (a chat
// platform's and the desktop's session keys) and returns what each got.
func byConversation(call func(sessionKey string) string) map[string]string {
	keys := []string{"telegram:dm:1", "desktop:s2"}
	outs := make([]string, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Go(func() { outs[i] = call(k) })
	}
	wg.Wait()
	got := map[string]string{}
	for i, k := range keys {
		got[k] = outs[i]
	}
	return got
}
