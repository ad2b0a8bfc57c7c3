package app_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"atrium/app"
	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/plugins"
	"atrium/backend/stack"
)

// TestPluginPageOperationsRunTheirPluginsLive drives the plugin service over
// the HTTP API against a real runtime: enabling starts the plugin's process,
// reload restarts it, disabling stops it, and each change is pushed as a
// plugin-state event.
func TestPluginPageOperationsRunTheirPluginsLive(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	_, st, rt, c := pluginServer(t, "idx", "name: idx\nruntime: python\nversion: 1.0.0\n", "def register(ctx):\n    ctx.register_hook('on_session_delete', lambda **kw: None)\n", rec)

	var p app.PluginDTO
	if code := c.do("POST", "/api/plugins/idx/enable", token, nil, &p); code != 200 || p.State != plugins.StateRunning || p.PID == 0 ||
		p.Process != "atrium serve" || !p.Registered || !slices.Equal(p.Hooks, []string{hooks.OnSessionDelete}) {
		t.Fatalf("enable = %d %+v", code, p)
	}
	if !slices.Contains(st.Bus.Subscribers(hooks.OnSessionDelete), "idx") {
		t.Fatal("enabled plugin is not subscribed")
	}
	pid := p.PID
	var list []app.PluginDTO
	if code := c.do("POST", "/api/plugins/reload", token, nil, &list); code != 200 {
		t.Fatalf("reload = %d", code)
	}
	i := slices.IndexFunc(list, func(p app.PluginDTO) bool { return p.Name == "idx" })
	if i < 0 || list[i].State != plugins.StateRunning || list[i].PID == pid || list[i].PID == 0 {
		t.Fatalf("reload did not restart idx: %+v", list)
	}
	var off app.PluginDTO
	if code := c.do("POST", "/api/plugins/idx/disable", token, nil, &off); code != 200 || off.State != plugins.StateDisabled || off.PID != 0 {
		t.Fatalf("disable = %d %+v", code, off)
	}
	if slices.Contains(st.Bus.Subscribers(hooks.OnSessionDelete), "idx") || len(rt.Host().List()) != 0 {
		t.Fatal("disabled plugin still hosted")
	}
	var states []string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		states = states[:0]
		for _, d := range rec.named(app.EventPluginState) {
			if s := d.(app.PluginStateDTO); s.Name == "idx" {
				states = append(states, s.State)
			}
		}
		if len(states) > 0 && states[len(states)-1] == plugins.StateDisabled {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// enable: running (runtime), running (manager); reload: stopped, running,
	// running; disable: stopped, disabled.
	for _, want := range []string{plugins.StateRunning, plugins.StateStopped, plugins.StateDisabled} {
		if !slices.Contains(states, want) {
			t.Fatalf("plugin-state events %v lack %s", states, want)
		}
	}
	if states[len(states)-1] != plugins.StateDisabled {
		t.Fatalf("last plugin-state %v", states)
	}
}

func TestReadyRunsOnceWhenTheUIHasPainted(t *testing.T) {
	t.Parallel()
	calls := 0
	e := newEnvWith(t, app.Options{Platform: app.PlatformDesktop, Version: "test", Ready: func() { calls++ }})
	srv := httptest.NewServer(app.NewHandler(e.app, token, app.Serving{}))
	t.Cleanup(srv.Close)
	c := client{t: t, srv: srv}
	if code := c.do("POST", "/api/ready", token, nil, nil); code != 200 {
		t.Fatalf("ready = %d", code)
	}
	e.app.Settings.Ready()
	if calls != 1 {
		t.Fatalf("ready ran %d times, want 1", calls)
	}
	if code := c.do("POST", "/api/ready", "", nil, nil); code != 401 {
		t.Fatalf("ready without the token = %d", code)
	}
}

// The Plugins page keeps a value for what a plugin declares in the
// profile's .env, as the familiar agent's installer does: the plugin stops
// listing it as missing, gets it at its next start (Reload), and the value
// never comes back; a variable that changes how programs start is refused
// whatever the manifest declares, as is one it does not declare.
func TestAPluginsVariableIsKeptFromThePage(t *testing.T) {
	t.Parallel()
	manifest := "name: needy\nversion: 1.0.0\nrequires_env:\n  - name: ATRIUM_T_PLUG_TOKEN\n    description: the service's token\n    secret: true\noptional_env: [LD_PRELOAD]\n"
	// It writes down how long a token it started with.
	code := "import os\ndef register(ctx):\n    open(os.path.join(os.environ['HOME'], 'seen'), 'w').write(str(len(os.environ.get('ATRIUM_T_PLUG_TOKEN', ''))))\n    ctx.register_hook('on_session_delete', lambda **kw: None)\n"
	home, _, _, c := pluginServer(t, "needy", manifest, code, nil)
	seen := func(want string) {
		t.Helper()
		path := filepath.Join(plugins.WorkDir(home, "needy"), "seen")
		deadline := time.Now().Add(20 * time.Second)
		for {
			b, _ := os.ReadFile(path)
			if string(b) == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the plugin started with a token of %q characters, want %s", b, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var p app.PluginDTO
	if code := c.do("POST", "/api/plugins/needy/enable", token, nil, &p); code != 200 || len(p.MissingEnv) != 1 ||
		p.MissingEnv[0] != (app.EnvNeedDTO{Name: "ATRIUM_T_PLUG_TOKEN", Description: "the service's token", Secret: true}) {
		t.Fatalf("enable = %d %+v", code, p)
	}
	seen("0")
	for _, bad := range []app.PluginEnvRequest{{Name: "LD_PRELOAD", Value: "/tmp/x.so"}, {Name: "ATRIUM_T_OTHER_TOKEN", Value: "x"}, {Name: "ATRIUM_T_PLUG_TOKEN", Value: "two\nlines"}} {
		if code := c.do("POST", "/api/plugins/needy/env", token, bad, nil); code != 400 {
			t.Fatalf("set %s = %d", bad.Name, code)
		}
	}
	if _, err := os.Stat(home.EnvPath()); !os.IsNotExist(err) {
		t.Fatalf("a refused value wrote .env: %v", err)
	}
	var raw json.RawMessage
	if code := c.do("POST", "/api/plugins/needy/env", token, app.PluginEnvRequest{Name: "ATRIUM_T_PLUG_TOKEN", Value: "tok-123456"}, &raw); code != 200 ||
		strings.Contains(string(raw), "tok-123456") || !strings.Contains(string(raw), `"missing_env":[]`) {
		t.Fatalf("set = %d %s", code, raw)
	}
	if b, _ := os.ReadFile(home.EnvPath()); string(b) != "ATRIUM_T_PLUG_TOKEN=tok-123456\n" {
		t.Fatalf(".env = %q", b)
	}
	if code := c.do("POST", "/api/plugins/reload", token, nil, nil); code != 200 {
		t.Fatalf("reload = %d", code)
	}
	seen("10")
}

// pluginServer serves the API of a home holding one user plugin (its
// manifest and __init__.py) against a real runtime of plugin processes;
// emit (may be nil) receives the app's live events.
func pluginServer(t *testing.T, name, manifest, code string, emit app.Emitter) (config.Home, *stack.Stack, *plugins.Runtime, client) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	home, err := config.ResolveHome(t.TempDir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home.PluginsDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(manifest), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "__init__.py"), []byte(code), 0o644)
	opts := plugins.DiscoverOptions{Home: home, Version: "dev", Bundled: os.DirFS(t.TempDir())}
	var rt *plugins.Runtime
	st, loop := openStack(t, home, func(st *stack.Stack) error {
		rt = plugins.NewRuntime(plugins.RuntimeOptions{Discover: opts, Bus: st.Bus, Want: plugins.Want{Processes: true}, Process: "atrium serve",
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		st.OnClose(rt.Stop)
		return rt.Sync(context.Background())
	})
	mgr := plugins.NewManager(opts)
	mgr.Attach(rt)
	a := app.New(ctx, st, loop, mgr, app.Options{Platform: app.PlatformDashboard, Version: "test", Emitter: emit})
	srv := httptest.NewServer(app.NewHandler(a, token, app.Serving{}))
	t.Cleanup(srv.Close)
	return home, st, rt, client{t: t, srv: srv}
}
