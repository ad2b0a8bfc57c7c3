package plugins

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/plugins/proc"
	bundled "atrium/plugins"
)

// WorkDir is a plugin's own folder, <home>/plugins-data/<name>/: its HOME
// and working directory.
func WorkDir(home config.Home, name string) string {
	return filepath.Join(home.Dir, "plugins-data", name)
}

// BundledCacheDir is where MaterializeBundled writes the embedded tree for
// one Atrium version: <home>/cache/bundled/<version>/.
func BundledCacheDir(home config.Home, version string) string {
	v := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, version)
	if v == "" || v == "." || v == ".." {
		v = "dev"
	}
	return filepath.Join(home.Dir, "cache", "bundled", v)
}

// SpecContext is what a process plugin learns of its world beyond its own
// manifest and settings, in ATRIUM_PLUGIN_CONTEXT (JSON): the hook names
// Atrium fires, the built-in tools, the gates of its config entry. The
// Python runner reads it. (Nothing in it may change with other plugins'
// state: a changed spec restarts the plugin.)
type SpecContext struct {
	BuiltinTools []string
	// ExtraEnv are further variables passed through when set: those the
	// plugin's tools named in requires_env at its last handshake.
	ExtraEnv []string
}

// Spec builds what the process host needs to run p: the argv (python:
// [python, runnerPath, Dir]; command: the manifest's command, a relative
// program resolved against Dir), the minimal environment (PATH, LANG and TZ
// from the host, HOME = the work dir, the requires_env and optional_env
// names that are set, ATRIUM_PLUGIN_NAME, ATRIUM_PLUGIN_DIR, ATRIUM_HOME and
// HERMES_HOME = the profile's folder, ATRIUM_PROFILE), the work dir and the
// validated settings.
func (p Plugin) Spec(home config.Home, cfg config.Config, python string, runnerPath string) (proc.Spec, error) {
	return p.SpecWith(home, cfg, python, runnerPath, SpecContext{})
}

// SpecWith is Spec with the context the plugin is told about.
func (p Plugin) SpecWith(home config.Home, cfg config.Config, python string, runnerPath string, x SpecContext) (proc.Spec, error) {
	m := p.Manifest
	name := p.Name()
	if p.State == StateError {
		return proc.Spec{}, apperr.New(apperr.Invalid, "plugin %s is broken: %s", name, p.Err)
	}
	if m.Runtime == RuntimeGo {
		return proc.Spec{}, apperr.New(apperr.Invalid, "plugin %s has runtime go: it runs in-process, not under the process host", name)
	}
	if p.Dir == "" {
		return proc.Spec{}, apperr.New(apperr.Invalid, "plugin %s is embedded only: materialize the bundled plugins (MaterializeBundled) and discover with BundledDir", name)
	}
	entry := cfg.Plugins.Entries[name]
	settings, _, err := m.Settings(entry)
	if err != nil {
		return proc.Spec{}, err
	}
	var argv []string
	switch m.Runtime {
	case RuntimePython:
		if python == "" || runnerPath == "" {
			return proc.Spec{}, apperr.New(apperr.Invalid, "plugin %s needs a Python interpreter and the runner", name)
		}
		argv = []string{python, runnerPath, p.Dir}
	case RuntimeCommand:
		argv = []string{resolveProgram(p.Dir, m.Command[0])}
		for _, a := range m.Command[1:] {
			argv = append(argv, resolveArg(p.Dir, a))
		}
	default:
		return proc.Spec{}, apperr.New(apperr.Invalid, "plugin %s: unknown runtime %q", name, m.Runtime)
	}
	work := WorkDir(home, name)
	env := []string{}
	for _, k := range []string{"PATH", "LANG", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, "HOME="+work)
	seen := map[string]bool{}
	pass := func(k string) {
		if seen[k] || contains(reservedEnv, k) || !envRe.MatchString(k) {
			return
		}
		seen[k] = true
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for _, list := range [][]EnvVar{m.RequiresEnv, m.OptionalEnv} {
		for _, e := range list {
			pass(e.Name)
		}
	}
	for _, k := range x.ExtraEnv {
		pass(k)
	}
	gates := GatesOf(entry)
	llmGate, _ := asMap(entry)["llm"].(map[string]any)
	ctxJSON, err := json.Marshal(map[string]any{
		"plugin_id": name, "profile": home.Profile, "hermes_home": home.Dir,
		"hooks": hooks.Names(), "sync_hooks": syncHooks(), "foreign_hooks": hooks.ForeignHooks,
		"hook_timeout":        cfg.HookTimeout().Seconds(),
		"builtin_tools":       nonNilList(x.BuiltinTools),
		"allow_tool_override": gates.AllowToolOverride, "allow_gateway_injection": gates.AllowGatewayInjection,
		"granted_capabilities": nonNilList(gates.GrantedCapabilities), "llm_gate": llmGate,
		"manifest": map[string]any{"name": m.Name, "version": m.Version, "description": m.Description, "kind": m.Kind,
			"source": p.Source, "path": p.Dir, "requires_env": m.RequiresEnv},
	})
	if err != nil {
		return proc.Spec{}, apperr.Wrap(apperr.Internal, err, "plugin %s: encode its context", name)
	}
	env = append(env, "ATRIUM_PLUGIN_NAME="+name, "ATRIUM_PLUGIN_DIR="+p.Dir, "ATRIUM_HOME="+home.Dir,
		"HERMES_HOME="+home.Dir, "ATRIUM_PROFILE="+home.Profile, contextEnv+"="+string(ctxJSON))
	return proc.Spec{
		Name:     name,
		Dir:      p.Dir,
		Argv:     argv,
		Env:      env,
		WorkDir:  work,
		Settings: settings,
		Hooks:    m.DeclaredHooks(),
		Commands: append([]string(nil), m.Commands...),
		Timeout:  cfg.HookTimeout(),
	}, nil
}

// contextEnv is the variable that tells a plugin process its world (JSON).
const contextEnv = "ATRIUM_PLUGIN_CONTEXT"

func syncHooks() []string {
	var out []string
	for _, n := range hooks.Names() {
		if k, _ := hooks.Lookup(n); k == hooks.Sync {
			out = append(out, n)
		}
	}
	return out
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// resolveProgram makes a program with a path (./run, bin/x) absolute
// against dir; a bare name (node, python3) is left for PATH unless a file of
// that name sits in dir.
func resolveProgram(dir, prog string) string {
	if filepath.IsAbs(prog) {
		return prog
	}
	if strings.ContainsRune(prog, '/') || strings.ContainsRune(prog, filepath.Separator) {
		return filepath.Join(dir, prog)
	}
	if info, err := os.Stat(filepath.Join(dir, prog)); err == nil && !info.IsDir() {
		return filepath.Join(dir, prog)
	}
	return prog
}

// resolveArg makes an argument that names a file or folder inside the
// plugin's folder (plugin.py, lib/main.js) absolute against it: the plugin
// runs in its own working folder, not in its plugin folder, so
// command: [python3, plugin.py] would otherwise look in the wrong place.
// Options ("-x", "--flag=v"), absolute paths and words that name nothing in
// the folder are passed as written.
func resolveArg(dir, arg string) string {
	if arg == "" || strings.HasPrefix(arg, "-") || filepath.IsAbs(arg) || !filepath.IsLocal(filepath.FromSlash(arg)) {
		return arg
	}
	if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(arg))); err == nil {
		return filepath.Join(dir, filepath.FromSlash(arg))
	}
	return arg
}

// DefaultOptions are a profile's discovery options as Atrium runs it: the
// embedded bundled plugins, written out once per version under the cache so
// python and command ones have a folder (or the folder of
// $ATRIUM_BUNDLED_PLUGINS instead), the user folder, and the project folder
// when $ATRIUM_ENABLE_PROJECT_PLUGINS is 1.
func DefaultOptions(home config.Home, cfg config.Config, version string) DiscoverOptions {
	o := DiscoverOptions{Home: home, Config: cfg, Version: version}
	if os.Getenv(EnvBundled) == "" {
		o.BundledDir = PrepareBundled(home, version)
	}
	return o
}

// PrepareBundled writes the embedded bundled plugins to
// BundledCacheDir(home, version) unless a complete copy is there, and
// returns that folder; "" if it cannot be written (bundled python plugins
// then cannot start, and say so).
func PrepareBundled(home config.Home, version string) string {
	dir := BundledCacheDir(home, version)
	done := filepath.Join(dir, ".complete")
	if _, err := os.Stat(done); err == nil {
		return dir
	}
	if err := MaterializeBundled(dir); err != nil {
		return ""
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		return ""
	}
	return dir
}

// MaterializeBundled writes the embedded bundled plugins to dst (replacing
// what was there), so python and command bundled plugins have a folder to
// run from. Files starting with "#!" are made executable.
func MaterializeBundled(dst string) error {
	return materialize(bundled.Bundled, dst)
}

func materialize(src fs.FS, dst string) error {
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("materialize bundled plugins: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, ".bundled-*")
	if err != nil {
		return fmt.Errorf("materialize bundled plugins: %w", err)
	}
	defer os.RemoveAll(tmp)
	err = fs.WalkDir(src, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(tmp, filepath.FromSlash(name))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(src, name)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(string(data), "#!") {
			mode = 0o755
		}
		return os.WriteFile(target, data, mode)
	})
	if err != nil {
		return fmt.Errorf("materialize bundled plugins: %w", err)
	}
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("materialize bundled plugins: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		if _, serr := os.Stat(filepath.Join(dst)); serr == nil {
			return nil // another process materialized it meanwhile
		}
		return fmt.Errorf("materialize bundled plugins: %w", err)
	}
	return nil
}
