package plugins

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"atrium/backend/apperr"
	"atrium/backend/config"
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

// Spec builds what the process host needs to run p: the argv (python:
// [python, runnerPath, Dir]; command: the manifest's command, a relative
// program resolved against Dir), the minimal environment (PATH, LANG and TZ
// from the host, HOME = the work dir, the requires_env names that are set,
// ATRIUM_PLUGIN_NAME, ATRIUM_PLUGIN_DIR and ATRIUM_HOME = the profile's
// folder), the work dir and the validated settings.
func (p Plugin) Spec(home config.Home, cfg config.Config, python string, runnerPath string) (proc.Spec, error) {
	m := p.Manifest
	if p.State == StateError {
		return proc.Spec{}, apperr.New(apperr.Invalid, "plugin %s is broken: %s", m.Name, p.Err)
	}
	if m.Runtime == RuntimeGo {
		return proc.Spec{}, apperr.New(apperr.Invalid, "plugin %s has runtime go: it runs in-process, not under the process host", m.Name)
	}
	if p.Dir == "" {
		return proc.Spec{}, apperr.New(apperr.Invalid, "plugin %s is embedded only: materialize the bundled plugins (MaterializeBundled) and discover with BundledDir", m.Name)
	}
	settings, _, err := m.Settings(cfg.Plugins.Entries[m.Name])
	if err != nil {
		return proc.Spec{}, err
	}
	var argv []string
	switch m.Runtime {
	case RuntimePython:
		if python == "" || runnerPath == "" {
			return proc.Spec{}, apperr.New(apperr.Invalid, "plugin %s needs a Python interpreter and the runner", m.Name)
		}
		argv = []string{python, runnerPath, p.Dir}
	case RuntimeCommand:
		argv = append([]string{resolveProgram(p.Dir, m.Command[0])}, m.Command[1:]...)
	default:
		return proc.Spec{}, apperr.New(apperr.Invalid, "plugin %s: unknown runtime %q", m.Name, m.Runtime)
	}
	work := WorkDir(home, m.Name)
	env := []string{}
	for _, k := range []string{"PATH", "LANG", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, "HOME="+work)
	for _, k := range m.RequiresEnv {
		if contains(reservedEnv, k) {
			continue
		}
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env, "ATRIUM_PLUGIN_NAME="+m.Name, "ATRIUM_PLUGIN_DIR="+p.Dir, "ATRIUM_HOME="+home.Dir)
	return proc.Spec{
		Name:     m.Name,
		Dir:      p.Dir,
		Argv:     argv,
		Env:      env,
		WorkDir:  work,
		Settings: settings,
		Hooks:    append([]string(nil), m.Hooks...),
		Commands: append([]string(nil), m.Commands...),
		Timeout:  cfg.HookTimeout(),
	}, nil
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
