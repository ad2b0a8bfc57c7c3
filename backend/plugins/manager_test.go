package plugins_test

import (
	"archive/zip"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/plugins"
)

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) record(c plugins.Change) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, c.Name+"="+c.State)
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

func (e *env) manager() (*plugins.Manager, *recorder) {
	m := plugins.NewManager(e.opts())
	rec := &recorder{}
	m.OnChange(rec.record)
	return m, rec
}

// MustZip writes a zip with the given entries (name → content; a name ending
// in "@" becomes a symlink to its content).
func MustZip(t *testing.T, path string, entries ...string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for i := 0; i+1 < len(entries); i += 2 {
		name := entries[i]
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		h.SetMode(0o644)
		if n, ok := strings.CutSuffix(name, "@"); ok {
			h.Name = n
			h.SetMode(os.ModeSymlink | 0o777)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(entries[i+1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEnableDisableRewriteConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	MustWrite(t, e.bundled, "on", py("on"))
	MustWrite(t, e.bundled, "off", py("off", "enabled_by_default: false"))
	MustWrite(t, e.home.PluginsDir(), "mine", py("mine"))
	if err := os.WriteFile(e.home.ConfigPath(), []byte("# mine\nsessions:\n  retention_days: 7 # a week\nplugins:\n  # seconds per callback\n  hook_callback_timeout: 5\n  enabled: [stale]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, rec := e.manager()

	if p, err := m.Enable(context.Background(), "mine"); err != nil || !p.Enabled || p.State != plugins.StateStopped {
		t.Fatalf("enable mine: %+v %v", p, err)
	}
	if p, err := m.Enable(context.Background(), "off"); err != nil || !p.Enabled {
		t.Fatalf("enable off: %+v %v", p, err)
	}
	if p, err := m.Disable(context.Background(), "on"); err != nil || p.Enabled || p.State != plugins.StateDisabled {
		t.Fatalf("disable on: %+v %v", p, err)
	}
	if p, err := m.Disable(context.Background(), "mine"); err != nil || p.Enabled {
		t.Fatalf("disable mine: %+v %v", p, err)
	}
	if p, err := m.Enable(context.Background(), "on"); err != nil || !p.Enabled {
		t.Fatalf("re-enable on: %+v %v", p, err)
	}
	cfg, warnings, err := config.Load(e.home.ConfigPath())
	if err != nil || len(warnings) > 0 {
		t.Fatalf("config: %v %q", err, warnings)
	}
	if !slices.Equal(cfg.Plugins.Enabled, []string{"stale", "off"}) || !slices.Equal(cfg.Plugins.Disabled, []string{"mine"}) {
		t.Fatalf("enabled %q disabled %q", cfg.Plugins.Enabled, cfg.Plugins.Disabled)
	}
	if cfg.RetentionDays() != 7 || cfg.Plugins.HookCallbackTimeout == nil || *cfg.Plugins.HookCallbackTimeout != 5 {
		t.Fatalf("the rest of the file was lost: %+v", cfg)
	}
	raw, _ := os.ReadFile(e.home.ConfigPath())
	for _, c := range []string{"# mine\n", "retention_days: 7 # a week\n", "  # seconds per callback\n  hook_callback_timeout: 5\n"} {
		if !strings.Contains(string(raw), c) {
			t.Fatalf("comment lost (%q) in:\n%s", c, raw)
		}
	}
	want := []string{"mine=stopped", "off=stopped", "on=disabled", "mine=disabled", "on=stopped"}
	if !slices.Equal(rec.got(), want) {
		t.Fatalf("observer %q, want %q", rec.got(), want)
	}
	if _, err := m.Enable(context.Background(), "ghost"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("unknown: %v", err)
	}
	if err := m.Remove(context.Background(), "on"); apperr.CodeOf(err) != apperr.Rejected || !strings.Contains(err.Error(), "bundled plugins can only be disabled") {
		t.Fatalf("remove bundled: %v", err)
	}
}

func TestEnableWithoutConfigFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	MustWrite(t, e.home.PluginsDir(), "mine", py("mine"))
	m, _ := e.manager()
	if _, err := m.Enable(context.Background(), "mine"); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(e.home.ConfigPath())
	if err != nil || !slices.Equal(cfg.Plugins.Enabled, []string{"mine"}) {
		t.Fatalf("%+v %v", cfg.Plugins, err)
	}
}

func TestInstallAndRemove(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m, rec := e.manager()
	ctx := context.Background()
	src := MustWrite(t, t.TempDir(), "src-folder", py("fromdir", "version: 1.0.0"), "__init__.py", "print('hi')\n")
	if err := os.MkdirAll(filepath.Join(src, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "lib", "x.py"), []byte("x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	p, err := m.Install(ctx, src, false)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.home.PluginsDir(), "fromdir")
	if p.Source != "user" || p.Dir != dir || p.Enabled || p.State != plugins.StateDisabled {
		t.Fatalf("installed %+v", p)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "lib", "x.py")); err != nil || string(b) != "x = 1\n" {
		t.Fatalf("copied tree: %q %v", b, err)
	}

	// The same name again: a conflict, then replaced with force.
	if err := os.WriteFile(filepath.Join(src, plugins.ManifestFile), []byte(py("fromdir", "version: 2.0.0")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Install(ctx, src, false); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("no force: %v", err)
	}
	if p, err := m.Install(ctx, src, true); err != nil || p.Manifest.Version != "2.0.0" {
		t.Fatalf("force: %+v %v", p, err)
	}

	// From a zip wrapped in one top-level folder.
	z := MustZip(t, filepath.Join(t.TempDir(), "p.zip"), "wrapped/", "", "wrapped/plugin.yaml", py("fromzip"), "wrapped/main.py", "pass\n")
	if p, err := m.Install(ctx, z, false); err != nil || p.Dir != filepath.Join(e.home.PluginsDir(), "fromzip") {
		t.Fatalf("zip: %+v %v", p, err)
	}
	if _, err := os.Stat(filepath.Join(e.home.PluginsDir(), "fromzip", "main.py")); err != nil {
		t.Fatal(err)
	}

	if err := m.Remove(context.Background(), "fromzip"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.home.PluginsDir(), "fromzip")); !os.IsNotExist(err) {
		t.Fatalf("still there: %v", err)
	}
	if err := m.Remove(context.Background(), "fromzip"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("remove twice: %v", err)
	}
	want := []string{"fromdir=disabled", "fromdir=disabled", "fromzip=disabled", "fromzip=removed"}
	if !slices.Equal(rec.got(), want) {
		t.Fatalf("observer %q", rec.got())
	}
}

func TestInstallRefusesUnsafeArchives(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m, rec := e.manager()
	ctx := context.Background()
	tmp := t.TempDir()
	scenarios := []struct {
		name    string
		entries []string
		code    apperr.Code
	}{
		{"dotdot", []string{"plugin.yaml", py("evil"), "../evil", "boom"}, apperr.Invalid},
		{"nested dotdot", []string{"plugin.yaml", py("evil"), "a/../../evil", "boom"}, apperr.Invalid},
		{"absolute", []string{"plugin.yaml", py("evil"), "/tmp/evil", "boom"}, apperr.Invalid},
		{"symlink", []string{"plugin.yaml", py("evil"), "link@", "/etc/passwd"}, apperr.Invalid},
		{"no manifest", []string{"main.py", "pass"}, apperr.Invalid},
		{"bad manifest", []string{"plugin.yaml", "name: evil\n"}, apperr.Invalid}, // no runtime and no __init__.py
		{"bad name", []string{"plugin.yaml", "name: Evil Plugin\n", "__init__.py", "def register(ctx): pass\n"}, apperr.Invalid},
		{"go runtime", []string{"plugin.yaml", "name: evil\nruntime: go\n"}, apperr.Invalid},
		{"too new", []string{"plugin.yaml", py("evil", `requires_atrium: ">=9"`)}, apperr.Rejected},
	}
	for _, sc := range scenarios {
		z := MustZip(t, filepath.Join(tmp, sc.name+".zip"), sc.entries...)
		if _, err := m.Install(ctx, z, true); apperr.CodeOf(err) != sc.code {
			t.Errorf("%s: %v, want %s", sc.name, err, sc.code)
		}
	}
	entries, _ := os.ReadDir(e.home.PluginsDir())
	if len(entries) != 0 {
		t.Fatalf("something was written: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.home.PluginsDir()), "evil")); !os.IsNotExist(err) {
		t.Fatal("../evil escaped")
	}
	if len(rec.got()) != 0 {
		t.Fatalf("observer fired: %q", rec.got())
	}

	// A folder with a symlink is refused too.
	src := MustWrite(t, t.TempDir(), "linked", py("linked"))
	if err := os.Symlink("/etc/passwd", filepath.Join(src, "passwd")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Install(ctx, src, false); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("symlinked folder: %v", err)
	}
	if _, err := m.Install(ctx, filepath.Join(tmp, "missing"), false); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("missing path: %v", err)
	}
}
