package plugins_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"atrium/backend/config"
	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/plugins"
	"atrium/backend/plugins/proc"
	"atrium/backend/sessions/sessionstest"
)

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
}

// pyPlugin writes a user plugin that registers hooks (each appending
// "hook event_id" to events.log in its work folder) and, optionally, a
// command; the manifest declares nothing, so only its handshake tells.
func (e *env) pyPlugin(name, version string, hookNames ...string) string {
	e.t.Helper()
	var reg strings.Builder
	for _, h := range hookNames {
		fmt.Fprintf(&reg, "    ctx.register_hook(%q, record)\n", h)
	}
	src := `import os
def record(event_id=None, **kwargs):
    with open(os.path.join(os.environ["HOME"], "events.log"), "a") as f:
        f.write("%s\n" % event_id)
def register(ctx):
` + reg.String() + "    ctx.register_command(\"" + name + "-cmd\", handler=lambda raw: \"ok\", description=\"test\")\n"
	return MustWrite(e.t, e.home.PluginsDir(), name, py(name, "version: "+version), "__init__.py", src)
}

func (e *env) enable(names ...string) {
	e.t.Helper()
	b, _ := json.Marshal(names)
	if err := os.WriteFile(e.home.ConfigPath(), []byte("plugins:\n  enabled: "+string(b)+"\n"), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

type changeLog struct {
	mu  sync.Mutex
	got []plugins.Change
}

func (c *changeLog) add(ch plugins.Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, ch)
}

func (c *changeLog) has(name, state string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.got, func(ch plugins.Change) bool { return ch.Name == name && ch.State == state })
}

// runtime starts a store and a bus, and a runtime on e's plugins.
func (e *env) runtime(want plugins.Want, process string) (*plugins.Runtime, *sessionstest.Env, *changeLog) {
	e.t.Helper()
	st := sessionstest.NewWith(e.t, hooks.Options{Timeout: 5 * time.Second})
	rt := plugins.NewRuntime(plugins.RuntimeOptions{Discover: e.opts(), Bus: st.Bus, Want: want, Process: process,
		Go: map[string]plugins.GoPlugin{
			"gone-wrong": func(*hooks.Context, config.Home, map[string]any) error { panic("broken Register") },
			"audit": func(c *hooks.Context, _ config.Home, _ map[string]any) error {
				return c.RegisterHook(hooks.OnSessionDelete, func(context.Context, hooks.Event) error { return nil })
			},
		},
		Tune: func(h *proc.Host) { h.Grace = 500 * time.Millisecond; h.BackoffMin = 50 * time.Millisecond }})
	log := &changeLog{}
	rt.OnChange(log.add)
	e.t.Cleanup(func() { _ = rt.Stop(context.Background()) })
	return rt, st, log
}

func hostedNames(rt *plugins.Runtime) []string {
	var out []string
	for _, in := range rt.Host().List() {
		out = append(out, in.Name)
	}
	slices.Sort(out)
	return out
}

func (e *env) list() map[string]plugins.Plugin {
	e.t.Helper()
	all, err := plugins.NewManager(e.opts()).List()
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]plugins.Plugin{}
	for _, p := range all {
		out[p.Name()] = p
	}
	return out
}

func TestACommandStartsOnlyThePluginsItsHooksReach(t *testing.T) {
	t.Parallel()
	needPython(t)
	e := newEnv(t)
	e.pyPlugin("deleter", "1", hooks.OnSessionDelete)
	compactor := e.pyPlugin("compactor", "1", hooks.PostCompaction)
	e.enable("deleter", "compactor")
	want := plugins.Want{Processes: true, Hooks: []string{hooks.OnSessionDelete}}

	// Neither handshake is known yet: both start, and what they register is recorded.
	rt, _, _ := e.runtime(want, "atrium sessions delete")
	if err := rt.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := hostedNames(rt); !slices.Equal(got, []string{"compactor", "deleter"}) {
		t.Fatalf("first run started %v", got)
	}
	_ = rt.Stop(context.Background())
	l := e.list()
	if p := l["compactor"]; !p.Registered || !slices.Equal(p.Hooks, []string{hooks.PostCompaction}) || !slices.Equal(p.Commands, []string{"compactor-cmd"}) || p.State != plugins.StateStopped {
		t.Fatalf("compactor after its first start: %+v", p)
	}

	// Now the handshake decides: a delete has nothing for the compactor.
	rt2, _, _ := e.runtime(want, "atrium sessions delete")
	if err := rt2.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := hostedNames(rt2); !slices.Equal(got, []string{"deleter"}) {
		t.Fatalf("second run started %v, want only deleter", got)
	}
	_ = rt2.Stop(context.Background())

	// Its code changes to take deletes too: a new folder fingerprint, so it
	// starts again and its new handshake counts.
	time.Sleep(10 * time.Millisecond)
	src := "def register(ctx):\n    ctx.register_hook('on_session_delete', lambda **kw: None)\n"
	if err := os.WriteFile(filepath.Join(compactor, "__init__.py"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	rt3, _, _ := e.runtime(want, "atrium sessions delete")
	if err := rt3.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := hostedNames(rt3); !slices.Equal(got, []string{"compactor", "deleter"}) {
		t.Fatalf("after the edit started %v", got)
	}
	_ = rt3.Stop(context.Background())
	rt4, _, _ := e.runtime(plugins.Want{Processes: true, Hooks: []string{hooks.PostCompaction}}, "atrium compact")
	if err := rt4.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := hostedNames(rt4); len(got) != 0 {
		t.Fatalf("a compaction reaches nobody now, started %v", got)
	}
}

func TestManagerChangesTakeEffectInTheAttachedRuntime(t *testing.T) {
	t.Parallel()
	needPython(t)
	e := newEnv(t)
	dir := e.pyPlugin("idx", "1", hooks.OnSessionDelete)
	MustWrite(t, e.bundled, "audit", "name: audit\nruntime: go\nhooks: [on_session_delete]\n")
	rt, st, log := e.runtime(plugins.Want{Processes: true}, "the desktop window")
	m := plugins.NewManager(e.opts())
	m.Attach(rt)
	mlog := &changeLog{}
	m.OnChange(mlog.add)
	if err := rt.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := hostedNames(rt); len(got) != 0 {
		t.Fatalf("a user plugin is opt-in, hosted %v", got)
	}
	if p := e.list()["audit"]; p.State != plugins.StateRunning || p.PID != os.Getpid() || p.Process != "the desktop window" {
		t.Fatalf("in-process bundled plugin: %+v", p)
	}

	p, err := m.Enable(context.Background(), "idx")
	if err != nil || p.State != plugins.StateRunning || p.PID == 0 || p.Process != "the desktop window" || !p.Registered ||
		!slices.Equal(p.Hooks, []string{hooks.OnSessionDelete}) {
		t.Fatalf("enable: %+v %v", p, err)
	}
	if !log.has("idx", plugins.StateRunning) || !mlog.has("idx", plugins.StateRunning) {
		t.Fatalf("no running event: %+v", mlog.got)
	}
	pid := p.PID
	// It receives events at once.
	emit(t, st, hooks.OnSessionDelete, map[string]any{"session_id": "s1"})
	work := plugins.WorkDir(e.home, "idx")
	waitUntil(t, "the event", func() bool { b, _ := os.ReadFile(filepath.Join(work, "events.log")); return len(b) > 0 })

	// Reinstalling a new version restarts it from the new folder.
	src := MustWrite(t, t.TempDir(), "idx", py("idx", "version: 2"), "__init__.py",
		"def register(ctx):\n    ctx.register_hook('on_session_delete', lambda **kw: None)\n    ctx.register_hook('post_compaction', lambda **kw: None)\n")
	p, err = m.Install(context.Background(), src, true)
	if err != nil || p.State != plugins.StateRunning || p.PID == pid || p.Manifest.Version != "2" ||
		!slices.Equal(p.Hooks, []string{hooks.OnSessionDelete, hooks.PostCompaction}) {
		t.Fatalf("reinstall: %+v %v", p, err)
	}
	if !pidGone(pid) {
		t.Fatal("the old child still runs")
	}
	pid = p.PID

	// Disable stops it and withdraws its hooks.
	p, err = m.Disable(context.Background(), "idx")
	if err != nil || p.State != plugins.StateDisabled || len(hostedNames(rt)) != 0 || slices.Contains(st.Bus.Subscribers(hooks.OnSessionDelete), "idx") {
		t.Fatalf("disable: %+v %v hosted %v", p, err, hostedNames(rt))
	}
	if !pidGone(pid) || !mlog.has("idx", plugins.StateStopped) || !mlog.has("idx", plugins.StateDisabled) {
		t.Fatalf("disable left pid %d or no events: %+v", pid, mlog.got)
	}
	// An in-process plugin is unloaded and loaded the same way.
	if _, err := m.Disable(context.Background(), "audit"); err != nil || slices.Contains(st.Bus.Subscribers(hooks.OnSessionDelete), "audit") {
		t.Fatalf("disable audit: %v %v", err, st.Bus.Subscribers(hooks.OnSessionDelete))
	}
	if p, err := m.Enable(context.Background(), "audit"); err != nil || p.State != plugins.StateRunning || !slices.Contains(st.Bus.Subscribers(hooks.OnSessionDelete), "audit") {
		t.Fatalf("enable audit: %+v %v", p, err)
	}

	// Reload restarts what runs; remove stops and deletes.
	if _, err := m.Enable(context.Background(), "idx"); err != nil {
		t.Fatal(err)
	}
	pid = e.list()["idx"].PID
	if _, err := m.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := e.list()["idx"]; p.State != plugins.StateRunning || p.PID == pid || p.PID == 0 {
		t.Fatalf("reload did not restart idx: %+v (was %d)", p, pid)
	}
	pid = e.list()["idx"].PID
	if err := m.Remove(context.Background(), "idx"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) || len(hostedNames(rt)) != 0 || !pidGone(pid) || !mlog.has("idx", "removed") {
		t.Fatalf("remove: %v hosted %v", err, hostedNames(rt))
	}
}

func TestWatchAppliesChangesMadeByAnotherProcess(t *testing.T) {
	t.Parallel()
	needPython(t)
	e := newEnv(t)
	e.pyPlugin("idx", "1", hooks.OnSessionDelete)
	rt, _, _ := e.runtime(plugins.Want{Processes: true}, "atrium serve")
	if err := rt.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go rt.Watch(ctx, 50*time.Millisecond)

	// `atrium plugins enable idx` in a terminal: a manager of its own.
	other := plugins.NewManager(e.opts())
	if _, err := other.Enable(context.Background(), "idx"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "idx running", func() bool {
		return slices.Equal(hostedNames(rt), []string{"idx"}) && e.list()["idx"].State == plugins.StateRunning
	})
	if p := e.list()["idx"]; p.Process != "atrium serve" {
		t.Fatalf("listed as %+v", p)
	}
	pid := e.list()["idx"].PID
	// `atrium plugins reload`: the running process restarts it.
	if _, err := other.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "idx restarted", func() bool {
		p := e.list()["idx"]
		return p.State == plugins.StateRunning && p.PID != pid && p.PID != 0
	})
	if _, err := other.Disable(context.Background(), "idx"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "idx stopped", func() bool { return len(hostedNames(rt)) == 0 })
	if p := e.list()["idx"]; p.State != plugins.StateDisabled {
		t.Fatalf("after disable: %+v", p)
	}
}

func TestListShowsFailuresAfterTheProcessIsGone(t *testing.T) {
	t.Parallel()
	needPython(t)
	e := newEnv(t)
	MustWrite(t, e.home.PluginsDir(), "noisy", py("noisy"), "__init__.py",
		"def register(ctx):\n    print('not json', flush=True)\n    raise RuntimeError('no way')\n")
	MustWrite(t, e.bundled, "gone-wrong", "name: gone-wrong\nruntime: go\n")
	MustWrite(t, e.bundled, "no-impl", "name: no-impl\nruntime: go\n")
	e.enable("noisy")
	rt, _, log := e.runtime(plugins.Want{Processes: true}, "atrium chat")
	err := rt.Sync(context.Background())
	for _, name := range []string{"noisy", "gone-wrong", "no-impl"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Fatalf("sync error does not name %s: %v", name, err)
		}
	}
	if !log.has("gone-wrong", plugins.StateError) || !log.has("no-impl", plugins.StateError) {
		t.Fatalf("changes: %+v", log.got)
	}
	l := e.list()
	if p := l["gone-wrong"]; p.State != plugins.StateError || !strings.Contains(p.Err, "panic in Register: broken Register") {
		t.Fatalf("gone-wrong while its process lives: %+v", p)
	}
	if p := l["noisy"]; p.State != plugins.StateError || p.Err == "" {
		t.Fatalf("noisy while its process lives: %+v", p)
	}
	_ = rt.Stop(context.Background())
	// The process is gone; what failed still says so, with when.
	l = e.list()
	for _, name := range []string{"noisy", "no-impl"} {
		if p := l[name]; p.State != plugins.StateError || !strings.Contains(p.Err, "(last start, ") {
			t.Fatalf("%s after its process ended: %+v", name, p)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(e.home.Dir, "run", "plugins")); len(entries) != 0 {
		t.Fatalf("the stopped process left its record: %v", entries)
	}
}

func TestRecordsOfDeadProcessesAreIgnoredAndRemoved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	MustWrite(t, e.bundled, "audit", "name: audit\nruntime: go\n")
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true(1)")
	}
	dead := cmd.ProcessState.Pid()
	run := filepath.Join(e.home.Dir, "run", "plugins")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	rec := fmt.Sprintf(`{"pid": %d, "process": "atrium serve", "plugins": [{"name": "audit", "state": "running", "pid": %d, "hooks": [], "commands": []}]}`, dead, dead)
	path := filepath.Join(run, fmt.Sprintf("%d.json", dead))
	if err := os.WriteFile(path, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	// A live pid with another start time is another process: also stale.
	mine := fmt.Sprintf(`{"pid": %d, "start": "1", "process": "atrium serve", "plugins": [{"name": "audit", "state": "running", "pid": 1}]}`, os.Getpid())
	reused := filepath.Join(run, "reused.json")
	if err := os.WriteFile(reused, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := e.list()["audit"]; p.State != plugins.StateStopped {
		t.Fatalf("a dead process's record counted: %+v", p)
	}
	for _, f := range []string{path, reused} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Fatalf("stale record %s kept", f)
		}
	}
}

func emit(t *testing.T, st *sessionstest.Env, hook string, payload any) {
	t.Helper()
	err := st.DB.InTx(context.Background(), func(tx *db.Tx) error {
		_, err := st.Bus.EnqueueTx(context.Background(), tx, hook, payload)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func pidGone(pid int) bool {
	return pid <= 0 || errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func TestAPluginThatRegistersBySettingsIsStartedAgainWhenTheyChange(t *testing.T) {
	t.Parallel()
	needPython(t)
	e := newEnv(t)
	MustWrite(t, e.home.PluginsDir(), "picky", py("picky", "config_schema:\n  hook: {type: string, default: post_compaction}"), "__init__.py",
		"def register(ctx):\n    ctx.register_hook(ctx.settings['hook'], lambda **kw: None)\n")
	e.enable("picky")
	rt, _, _ := e.runtime(plugins.Want{Processes: true, Hooks: []string{hooks.PostCompaction}}, "atrium compact")
	if err := rt.Sync(context.Background()); err != nil || !slices.Equal(hostedNames(rt), []string{"picky"}) {
		t.Fatalf("first start: %v %v", err, hostedNames(rt))
	}
	_ = rt.Stop(context.Background())
	deleteOnly := plugins.Want{Processes: true, Hooks: []string{hooks.OnSessionDelete}}
	rt2, _, _ := e.runtime(deleteOnly, "atrium sessions delete")
	if err := rt2.Sync(context.Background()); err != nil || len(hostedNames(rt2)) != 0 {
		t.Fatalf("a delete reaches nothing it registered: %v %v", err, hostedNames(rt2))
	}
	_ = rt2.Stop(context.Background())
	// Its settings now make it register deletes: the last handshake no longer tells.
	cfg := "plugins:\n  enabled: [picky]\n  entries:\n    picky:\n      settings:\n        hook: on_session_delete\n"
	if err := os.WriteFile(e.home.ConfigPath(), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	rt3, st, _ := e.runtime(deleteOnly, "atrium sessions delete")
	if err := rt3.Sync(context.Background()); err != nil || !slices.Equal(hostedNames(rt3), []string{"picky"}) {
		t.Fatalf("after the settings changed: %v %v", err, hostedNames(rt3))
	}
	if !slices.Contains(st.Bus.Subscribers(hooks.OnSessionDelete), "picky") {
		t.Fatal("not subscribed to what its settings say")
	}
}

// A Reload in a process that also watches (the dashboard's Reload touches
// the reload marker, which its own watcher sees) restarts each plugin once,
// not a second time right after it returned.
func TestReloadWhileWatchingRestartsOnce(t *testing.T) {
	t.Parallel()
	needPython(t)
	e := newEnv(t)
	e.pyPlugin("idx", "1", hooks.OnSessionDelete)
	e.enable("idx")
	rt, _, _ := e.runtime(plugins.Want{Processes: true}, "atrium serve")
	if err := rt.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go rt.Watch(ctx, 20*time.Millisecond) // it ticks many times during the Reload
	before := rt.Host().List()[0].PID
	if err := rt.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := rt.Host().List()[0]
	if after.PID == before || after.State != plugins.StateRunning {
		t.Fatalf("after Reload: %+v (pid before %d)", after, before)
	}
	// Fifty watch intervals: the plugin keeps the process Reload started.
	for range 50 {
		time.Sleep(20 * time.Millisecond)
		if now := rt.Host().List(); len(now) != 1 || now[0].PID != after.PID {
			t.Fatalf("restarted again after Reload returned: %+v (pid after Reload %d)", now, after.PID)
		}
	}
}

// The bus's callback bound follows plugins.hook_callback_timeout at every
// sync, like the plugin specs; disabling a plugin retires its position (no
// event waits for it), enabling it again resumes it.
func TestSyncAppliesTheTimeoutAndRetiresDisabledPlugins(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rt, st, _ := e.runtime(plugins.Want{}, "atrium serve")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(e.home.Dir, 0o755))
	MustWrite(t, e.bundled, "audit", "name: audit\nruntime: go\nhooks: [on_session_delete]\n")
	must(os.WriteFile(e.home.ConfigPath(), []byte("plugins:\n  hook_callback_timeout: 7\n"), 0o644))
	must(rt.Sync(context.Background()))
	if got := st.Bus.Timeout(); got != 7*time.Second {
		t.Fatalf("timeout after sync = %s, want 7s", got)
	}
	must(st.Bus.Flush(context.Background()))
	active := func() bool {
		states, err := st.Bus.SubscriberStates(context.Background())
		must(err)
		for _, s := range states {
			if s.Name == "audit" {
				return s.Active
			}
		}
		return false
	}
	if !active() {
		t.Fatal("the enabled plugin has no active position")
	}
	must(os.WriteFile(e.home.ConfigPath(), []byte("plugins:\n  disabled: [audit]\n  hook_callback_timeout: 2\n"), 0o644))
	must(rt.Sync(context.Background()))
	if got := st.Bus.Timeout(); got != 2*time.Second {
		t.Fatalf("timeout after the second sync = %s, want 2s", got)
	}
	if active() {
		t.Fatal("a disabled plugin still holds events back")
	}
	must(os.WriteFile(e.home.ConfigPath(), []byte("plugins:\n  enabled: []\n"), 0o644))
	must(rt.Sync(context.Background()))
	must(st.Bus.Flush(context.Background()))
	// The plugin's subscriber claims its row again from its own worker.
	waitUntil(t, "the re-enabled plugin's position is active again", active)
	if st.Bus.Timeout() != hooks.DefaultTimeout {
		t.Fatalf("enabled again: timeout %s", st.Bus.Timeout())
	}
}

// A change of plugins.hook_callback_timeout alone reaches a running Python
// plugin without a restart (same process, what it holds kept): the runner's
// own bounds follow it (the configure notification). A process plugin that
// does not take configure is started again, as before, and so is any
// plugin when anything else in its spec changed.
func TestATimeoutChangeReachesARunningPluginWithoutARestart(t *testing.T) {
	t.Parallel()
	needPython(t)
	e := newEnv(t)
	MustWrite(t, e.home.PluginsDir(), "live", py("live", "config_schema:\n  note: {type: string, default: a}"), "__init__.py", `
import __main__
HELD = []

def register(ctx):
    def pre_llm_call(**kw):
        HELD.append(1)
        return {"context": "bound=%s held=%d" % (__main__._callback_timeout(), len(HELD))}
    ctx.register_hook("pre_llm_call", pre_llm_call)
`)
	// A process plugin that does not take configure is started again.
	MustWrite(t, e.home.PluginsDir(), "plain", "name: plain\nruntime: command\ncommand: [python3, plain.py]\n", "plain.py", `
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocol_version": 1, "hooks": [], "commands": []}}), flush=True)
`)
	write := func(cfg string) {
		t.Helper()
		if err := os.WriteFile(e.home.ConfigPath(), []byte("plugins:\n  enabled: [live, plain]\n"+cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("  hook_callback_timeout: 7\n")
	rt, st, _ := e.runtime(plugins.Want{Processes: true}, "atrium serve")
	ask := func() string {
		t.Helper()
		res, err := st.Bus.CallSync(context.Background(), hooks.PreLLMCall, map[string]any{"session_id": "s"})
		if err != nil || len(res) != 1 || res[0].Err != nil {
			t.Fatalf("pre_llm_call: %+v %v", res, err)
		}
		m, _ := res[0].Value.(map[string]any)
		s, _ := m["context"].(string)
		return s
	}
	var plainPID int
	sync := func() int {
		t.Helper()
		if err := rt.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		pids := map[string]int{}
		// One launched from its last handshake starts in the background.
		waitUntil(t, "both running", func() bool {
			clear(pids)
			for _, in := range rt.Host().List() {
				if in.State == plugins.StateRunning {
					pids[in.Name] = in.PID
				}
			}
			return len(pids) == 2
		})
		if pids["plain"] == plainPID {
			t.Fatalf("hosted %v; plain's process was %d", pids, plainPID)
		}
		plainPID = pids["plain"]
		return pids["live"]
	}
	pid := sync()
	if got := ask(); got != "bound=7.0 held=1" {
		t.Fatalf("at the start: %q", got)
	}
	write("  hook_callback_timeout: 2.5\n")
	if again := sync(); again != pid {
		t.Fatalf("restarted for a timeout: pid %d, then %d", pid, again)
	}
	if got := st.Bus.Timeout(); got != 2500*time.Millisecond {
		t.Fatalf("the bus's bound: %v", got)
	}
	if got := ask(); got != "bound=2.5 held=2" {
		t.Fatalf("after the change: %q", got)
	}
	write("  hook_callback_timeout: 0\n") // unbounded
	if again := sync(); again != pid {
		t.Fatalf("restarted for an unbounded timeout: pid %d, then %d", pid, again)
	}
	if got := ask(); got != "bound=0.0 held=3" {
		t.Fatalf("unbounded: %q", got)
	}
	// Its settings changed: a new process, which starts with the timeout now.
	write("  hook_callback_timeout: 4\n  entries:\n    live:\n      settings:\n        note: b\n")
	if again := sync(); again == pid {
		t.Fatal("not restarted when its settings changed")
	}
	if got := ask(); got != "bound=4.0 held=1" {
		t.Fatalf("the new process: %q", got)
	}
}
