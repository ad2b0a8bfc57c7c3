package plugins_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/plugins"
)

// env is a test's world: a bundled folder, a home, a project folder and a
// private environment (so tests stay parallel).
type env struct {
	t       *testing.T
	bundled string
	home    config.Home
	project string
	vars    map[string]string
	cfg     config.Config
	version string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	home, err := config.ResolveHome(filepath.Join(root, "home"), "")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, bundled: filepath.Join(root, "bundled"), home: home, project: filepath.Join(root, "project"),
		vars: map[string]string{}, version: "v0.5.0"}
	e.vars[plugins.EnvBundled] = e.bundled
	if err := os.MkdirAll(e.bundled, 0o755); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) opts() plugins.DiscoverOptions {
	return plugins.DiscoverOptions{Home: e.home, Config: e.cfg, Version: e.version, ProjectDir: e.project,
		Getenv: func(k string) string { return e.vars[k] }}
}

// MustWrite writes a plugin folder with the given plugin.yaml (and files).
func MustWrite(t *testing.T, root, folder, manifest string, files ...string) string {
	t.Helper()
	dir := filepath.Join(root, folder)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if manifest != "" {
		if err := os.WriteFile(filepath.Join(dir, plugins.ManifestFile), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i+1 < len(files); i += 2 {
		if err := os.WriteFile(filepath.Join(dir, files[i]), []byte(files[i+1]), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func py(name string, extra ...string) string {
	return "name: " + name + "\nruntime: python\n" + strings.Join(extra, "\n") + "\n"
}

func (e *env) discover() map[string]plugins.Plugin {
	e.t.Helper()
	all, err := plugins.Discover(e.opts())
	if err != nil {
		e.t.Fatal(err)
	}
	if !slices.IsSortedFunc(all, func(a, b plugins.Plugin) int { return strings.Compare(a.Manifest.Name, b.Manifest.Name) }) {
		e.t.Fatalf("not sorted by name: %+v", all)
	}
	out := map[string]plugins.Plugin{}
	for _, p := range all {
		out[p.Manifest.Name] = p
	}
	return out
}

func TestDiscoverPrecedence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	MustWrite(t, e.bundled, "alpha", py("alpha", "version: 1.0.0"))
	MustWrite(t, e.bundled, "beta", py("beta", "version: 1.0.0"))
	MustWrite(t, e.home.PluginsDir(), "alpha", py("alpha", "version: 2.0.0"))
	MustWrite(t, e.home.PluginsDir(), "gamma", py("gamma", "version: 2.0.0"))
	MustWrite(t, e.project, "alpha", py("alpha", "version: 3.0.0"))
	MustWrite(t, e.project, "delta", py("delta", "version: 3.0.0"))

	got := e.discover()
	want := map[string]string{"alpha": "user", "beta": "bundled", "gamma": "user"}
	if len(got) != len(want) {
		t.Fatalf("without the env var the project is ignored: %v", got)
	}
	for n, src := range want {
		if got[n].Source != src {
			t.Errorf("%s: source %q, want %q", n, got[n].Source, src)
		}
	}
	if got["alpha"].Manifest.Version != "2.0.0" || got["alpha"].Dir != filepath.Join(e.home.PluginsDir(), "alpha") {
		t.Errorf("user alpha should win over bundled: %+v", got["alpha"])
	}

	e.vars[plugins.EnvProjectPlugins] = "1"
	got = e.discover()
	if got["alpha"].Source != "project" || got["alpha"].Manifest.Version != "3.0.0" || got["delta"].Source != "project" {
		t.Fatalf("project should win: %+v", got)
	}
	if len(got) != 4 {
		t.Fatalf("got %d plugins", len(got))
	}
}

func TestImpostorIsIgnored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	MustWrite(t, e.bundled, "memo", py("memo", "version: 1.0.0"))
	MustWrite(t, e.home.PluginsDir(), "evil", py("memo", "version: 6.6.6"))
	e.cfg.Plugins.Enabled = []string{"memo"}
	got := e.discover()
	p := got["memo"]
	if p.Source != "bundled" || p.Manifest.Version != "1.0.0" || len(got) != 1 {
		t.Fatalf("impostor won: %+v", got)
	}
	if !strings.Contains(strings.Join(p.Warnings, "\n"), "claims the bundled name") {
		t.Fatalf("no impostor warning: %q", p.Warnings)
	}
}

func TestEnablement(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	MustWrite(t, e.bundled, "on", py("on"))
	MustWrite(t, e.bundled, "off", py("off", "enabled_by_default: false"))
	MustWrite(t, e.home.PluginsDir(), "mine", py("mine"))
	MustWrite(t, e.home.PluginsDir(), "other", py("other"))

	type want struct {
		enabled bool
		state   string
	}
	scenarios := []struct {
		name     string
		enabled  []string
		disabled []string
		safe     bool
		want     map[string]want
	}{
		{"defaults", nil, nil, false, map[string]want{
			"on": {true, "stopped"}, "off": {false, "disabled"}, "mine": {false, "disabled"}, "other": {false, "disabled"}}},
		{"opt in", []string{"mine", "off"}, nil, false, map[string]want{
			"on": {true, "stopped"}, "off": {true, "stopped"}, "mine": {true, "stopped"}, "other": {false, "disabled"}}},
		{"deny wins", []string{"mine"}, []string{"mine", "on"}, false, map[string]want{
			"on": {false, "disabled"}, "off": {false, "disabled"}, "mine": {false, "disabled"}, "other": {false, "disabled"}}},
		{"safe mode", []string{"mine"}, nil, true, map[string]want{
			"on": {false, "disabled"}, "off": {false, "disabled"}, "mine": {false, "disabled"}, "other": {false, "disabled"}}},
	}
	for _, sc := range scenarios {
		e.cfg.Plugins.Enabled, e.cfg.Plugins.Disabled = sc.enabled, sc.disabled
		e.vars[plugins.EnvSafeMode] = map[bool]string{true: "1"}[sc.safe]
		got := e.discover()
		for n, w := range sc.want {
			p := got[n]
			if p.Enabled != w.enabled || p.State != w.state {
				t.Errorf("%s: %s: enabled %v state %q (%s), want %v %q", sc.name, n, p.Enabled, p.State, p.Err, w.enabled, w.state)
			}
			if sc.safe && p.Err != "safe mode" {
				t.Errorf("%s: %s: reason %q", sc.name, n, p.Err)
			}
			if !p.Enabled && p.Err == "" {
				t.Errorf("%s: %s: disabled without a reason", sc.name, n)
			}
		}
	}
}

func TestBrokenManifestsAreErrorEntries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.version = "v0.4.1-3-gabc123"
	user := e.home.PluginsDir()
	MustWrite(t, user, "good", py("good"))
	MustWrite(t, user, "badyaml", "name: badyaml\nruntime: python\nhooks: [on_session_delete\n")
	MustWrite(t, user, "noname", "runtime: python\n")
	MustWrite(t, user, "noruntime", "name: noruntime\n")
	MustWrite(t, user, "weird", "name: weird\nruntime: java\n")
	MustWrite(t, user, "gouser", "name: gouser\nruntime: go\n")
	MustWrite(t, user, "future", py("future", `requires_atrium: ">=0.5.0 <2"`))
	MustWrite(t, user, "nocmd", "name: nocmd\nruntime: command\n")
	MustWrite(t, user, "badhook", py("badhook", "hooks: [on_nothing]"))
	MustWrite(t, user, "empty", "")
	MustWrite(t, user, "fits", py("fits", `requires_atrium: ">=0.4.0, <0.5"`))
	e.cfg.Plugins.Enabled = []string{"good", "fits", "gouser"}

	got := e.discover()
	scenarios := []struct{ name, reason string }{
		{"badyaml", "badyaml/plugin.yaml:3:"},
		{"noname", "name is required"},
		{"noruntime", "runtime is required"},
		{"weird", `unknown runtime "java"`},
		{"gouser", "runtime go is only for bundled plugins"},
		{"future", "requires atrium >=0.5.0 <2"},
		{"nocmd", "needs command"},
		{"empty", "no plugin.yaml"},
	}
	for _, sc := range scenarios {
		p, ok := got[sc.name]
		if !ok {
			t.Errorf("%s: missing entry (have %v)", sc.name, slices.Sorted(mapsKeys(got)))
			continue
		}
		if p.State != plugins.StateError || !strings.Contains(p.Err, sc.reason) {
			t.Errorf("%s: state %q err %q, want error with %q", sc.name, p.State, p.Err, sc.reason)
		}
	}
	for _, n := range []string{"good", "fits"} {
		if got[n].State != plugins.StateStopped || !got[n].Enabled {
			t.Errorf("%s should load: %+v", n, got[n])
		}
	}
	// An unknown hook name is a warning, never an error.
	if p := got["badhook"]; p.State == plugins.StateError || !slices.ContainsFunc(p.Warnings, func(w string) bool {
		return strings.Contains(w, `unknown hook "on_nothing"`)
	}) {
		t.Errorf("badhook: %+v", p)
	}
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestUnknownFieldsWarn(t *testing.T) {
	t.Parallel()
	m, warnings, err := plugins.ParseManifest([]byte("name: x\nruntime: python\nflavour: mint\nconfig_schema:\n  a: {type: int, colour: red}\n"), "x/plugin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(warnings, "\n")
	if m.Name != "x" || len(warnings) != 2 || !strings.Contains(joined, `unknown field "flavour"`) || !strings.Contains(joined, `config_schema.a: unknown field "colour"`) {
		t.Fatalf("warnings %q", warnings)
	}
}

func TestConfigSchema(t *testing.T) {
	t.Parallel()
	m, _, err := plugins.ParseManifest([]byte(`name: s
runtime: python
config_schema:
  label: {type: string, default: "hi"}
  count: {type: int, default: 3}
  ratio: {type: float, default: 1}
  on:    {type: bool, default: true}
  tags:  {type: list, default: [a]}
  token: {type: string, required: true}
`), "s/plugin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	entry := func(settings map[string]any) any { return map[string]any{"settings": settings} }

	got, _, err := m.Settings(entry(map[string]any{"token": "t", "count": uint64(7)}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"label": "hi", "count": 7, "ratio": 1.0, "on": true, "tags": []any{"a"}, "token": "t"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("settings %#v, want %#v", got, want)
	}
	// As in the familiar plugin API, a mismatch never stops a plugin: a
	// wrong type is a warning (the value is passed on as written), a missing
	// required setting a warning, an unknown one passed on with a warning.
	got, w, err := m.Settings(entry(map[string]any{"token": "t", "count": "seven"}))
	if err != nil || got["count"] != "seven" || len(w) != 1 || !strings.Contains(w[0], "count should be int") {
		t.Fatalf("wrong type: %v %v %q", got, err, w)
	}
	if _, w, err := m.Settings(entry(map[string]any{"token": "t", "on": 1})); err != nil || len(w) != 1 || !strings.Contains(w[0], "want bool") {
		t.Fatalf("an int for a bool: %v %q", err, w)
	}
	if _, w, err := m.Settings(entry(map[string]any{"token": "t", "count": true})); err != nil || len(w) != 1 || !strings.Contains(w[0], "want int, got bool") {
		t.Fatalf("a bool never satisfies an int: %v %q", err, w)
	}
	if _, w, err := m.Settings(nil); err != nil || len(w) != 1 || !strings.Contains(w[0], "token is required") {
		t.Fatalf("missing required: %v %q", err, w)
	}
	if got, w, err := m.Settings(entry(map[string]any{"token": "t", "nope": 1})); err != nil || len(w) != 1 || got["nope"] != 1 {
		t.Fatalf("unknown setting: %v %q %v", err, w, got)
	}
	// Older files keep settings under config; settings wins.
	if got, _, err := m.Settings(map[string]any{"config": map[string]any{"token": "old", "label": "x"}, "settings": map[string]any{"token": "new"}}); err != nil || got["token"] != "new" || got["label"] != "x" {
		t.Fatalf("config and settings: %v %v", got, err)
	}
	if _, w, err := plugins.ParseManifest([]byte("name: s\nruntime: python\nconfig_schema:\n  n: {type: int, default: x}\n  m: {type: decimal}\n  a: {type: array, default: [1]}\n  o: {type: object}\n"), "f"); err != nil || len(w) != 2 {
		t.Fatalf("bad default and unknown type are warnings: %v %q", err, w)
	}

	// Through discovery: a bad setting in config.yaml is a warning; the plugin loads.
	e := newEnv(t)
	MustWrite(t, e.home.PluginsDir(), "s", py("s", "config_schema:\n  n: {type: int, required: true}"))
	e.cfg.Plugins.Enabled = []string{"s"}
	e.cfg.Plugins.Entries = map[string]any{"s": map[string]any{"settings": map[string]any{"n": true}}}
	if p := e.discover()["s"]; p.State != plugins.StateStopped || !slices.ContainsFunc(p.Warnings, func(w string) bool { return strings.Contains(w, "want int") }) {
		t.Fatalf("bad setting: %+v", p)
	}
}

func TestVersionRanges(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		rng, version string
		ok           bool
	}{
		{">=0.3.0 <2", "v0.4.1-3-gabc123", true},
		{">=0.3.0 <2", "0.2.9", false},
		{">=0.3.0 <2", "2.0.0", false},
		{">=0.3.0 <2", "dev", true},
		{">= 1.2", "1.2.0", true},
		{"1.2.3", "v1.2.3", true},
		{"!=1.0.0", "1.0.0", false},
		{"", "0.0.1", true},
	}
	for _, sc := range scenarios {
		r, err := plugins.ParseRange(sc.rng)
		if err != nil {
			t.Fatalf("%q: %v", sc.rng, err)
		}
		if got := r.Allows(sc.version); got != sc.ok {
			t.Errorf("%q allows %q = %v, want %v", sc.rng, sc.version, got, sc.ok)
		}
	}
	if _, err := plugins.ParseRange(">=banana"); err == nil {
		t.Fatal("bad range accepted")
	}
}

func TestEmbeddedBundle(t *testing.T) {
	t.Parallel()
	home, _ := config.ResolveHome(t.TempDir(), "")
	all, err := plugins.Discover(plugins.DiscoverOptions{Home: home, Version: "dev", Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]plugins.Plugin{}
	for _, p := range all {
		if p.Err != "" && p.State == plugins.StateError {
			t.Errorf("%s: %s", p.Manifest.Name, p.Err)
		}
		if len(p.Warnings) > 0 {
			t.Errorf("%s warns: %q", p.Manifest.Name, p.Warnings)
		}
		got[p.Manifest.Name] = p
	}
	if !got["memory-rules"].Enabled || !got["session-index"].Enabled || got["hook-audit"].Enabled || len(got) != 3 {
		t.Fatalf("bundled: %+v", all)
	}
	var observers []string
	for _, n := range hooks.Names() {
		if k, _ := hooks.Lookup(n); k == hooks.Observer {
			observers = append(observers, n)
		}
	}
	if a := slices.Sorted(slices.Values(got["hook-audit"].Manifest.Hooks)); !slices.Equal(a, observers) {
		t.Fatalf("hook-audit hooks %v, want every observer hook %v", a, observers)
	}
	if got["memory-rules"].Dir != "" {
		t.Fatalf("an embedded plugin has no folder: %q", got["memory-rules"].Dir)
	}

	// Materialized, the bundled plugins have folders and a spec.
	dst := plugins.BundledCacheDir(home, "v1.0.0")
	if err := plugins.MaterializeBundled(dst); err != nil {
		t.Fatal(err)
	}
	all, err = plugins.Discover(plugins.DiscoverOptions{Home: home, Version: "dev", BundledDir: dst, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if p.Manifest.Name != "session-index" {
			continue
		}
		spec, err := p.Spec(home, config.Config{}, "/usr/bin/python3", "/opt/runner.py")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"/usr/bin/python3", "/opt/runner.py", filepath.Join(dst, "session-index")}
		if !slices.Equal(spec.Argv, want) || spec.WorkDir != filepath.Join(home.Dir, "plugins-data", "session-index") {
			t.Fatalf("spec %+v", spec)
		}
		if _, err := os.Stat(filepath.Join(spec.Dir, "plugin.yaml")); err != nil {
			t.Fatal(err)
		}
	}
}

// Not parallel: it sets process environment variables.
func TestSpecEnvironment(t *testing.T) {
	t.Setenv("PLUGIN_TOKEN", "s3cret")
	t.Setenv("UNRELATED_SECRET", "nope")
	t.Setenv("TZ", "UTC")
	e := newEnv(t)
	dir := MustWrite(t, e.home.PluginsDir(), "cmd", `name: cmd
runtime: command
command: [./run.sh, --fast]
requires_env: [PLUGIN_TOKEN, MISSING_ONE]
config_schema:
  n: {type: int, default: 2}
`, "run.sh", "#!/bin/sh\n")
	e.cfg.Plugins.Enabled = []string{"cmd"}
	p := e.discover()["cmd"]
	spec, err := p.Spec(e.home, e.cfg, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(spec.Argv, []string{filepath.Join(dir, "run.sh"), "--fast"}) {
		t.Fatalf("argv %q", spec.Argv)
	}
	work := filepath.Join(e.home.Dir, "plugins-data", "cmd")
	envMap := map[string]string{}
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		envMap[k] = v
	}
	var pctx map[string]any
	if err := json.Unmarshal([]byte(envMap["ATRIUM_PLUGIN_CONTEXT"]), &pctx); err != nil || pctx["plugin_id"] != "cmd" || pctx["hook_timeout"] != 30.0 {
		t.Fatalf("ATRIUM_PLUGIN_CONTEXT: %v %v", pctx, err)
	}
	delete(envMap, "ATRIUM_PLUGIN_CONTEXT")
	want := map[string]string{"PATH": os.Getenv("PATH"), "TZ": "UTC", "HOME": work, "PLUGIN_TOKEN": "s3cret",
		"ATRIUM_PLUGIN_NAME": "cmd", "ATRIUM_PLUGIN_DIR": dir, "ATRIUM_HOME": e.home.Dir, "HERMES_HOME": e.home.Dir,
		"ATRIUM_PROFILE": "default"}
	if v, ok := os.LookupEnv("LANG"); ok {
		want["LANG"] = v
	}
	if !reflect.DeepEqual(envMap, want) {
		t.Fatalf("env %v, want %v", envMap, want)
	}
	if spec.WorkDir != work || spec.Settings["n"] != 2 || spec.Timeout != hooks.DefaultTimeout {
		t.Fatalf("spec %+v", spec)
	}
	// An interpreter from PATH and a script in the plugin's folder: the
	// arguments that name a file there are resolved against it too.
	dir = MustWrite(t, e.home.PluginsDir(), "interp", `name: interp
runtime: command
command: [python3, plugin.py, --level=2, -v, data/rules.txt, plain-word, /etc/hosts]
`, "plugin.py", "print('x')\n")
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "rules.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.cfg.Plugins.Enabled = []string{"cmd", "interp"}
	spec, err = e.discover()["interp"].Spec(e.home, e.cfg, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"python3", filepath.Join(dir, "plugin.py"), "--level=2", "-v", filepath.Join(dir, "data", "rules.txt"), "plain-word", "/etc/hosts"}; !slices.Equal(spec.Argv, want) {
		t.Fatalf("argv %q, want %q", spec.Argv, want)
	}
	if _, err := (plugins.Plugin{Manifest: plugins.Manifest{Name: "g", Runtime: "go"}, Dir: "/x"}).Spec(e.home, e.cfg, "", ""); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("go runtime spec: %v", err)
	}
}

func (e *env) discoverByID() map[string]plugins.Plugin {
	e.t.Helper()
	all, err := plugins.Discover(e.opts())
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]plugins.Plugin{}
	for _, p := range all {
		out[p.Name()] = p
	}
	return out
}

func keys(m map[string]plugins.Plugin) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func writeFile(path, data string) error { return os.WriteFile(path, []byte(data), 0o644) }
