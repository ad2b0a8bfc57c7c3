package plugins_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"atrium/backend/config"
	"atrium/backend/plugins"
)

// A config.yaml of comments alone (a template with every key commented
// out) keeps them when a key is first written into it, and when the only
// key goes again; the comments above a first key that is removed (the
// file's title) stay at the top.
func TestAnEditKeepsAFileOfCommentsOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	const template = "# Atrium settings\n\n# sessions:\n#   retention_days: 30\n"
	if err := os.WriteFile(path, []byte(template), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	if err := plugins.EditConfig(path, plugins.ConfigEdit{Section: "sessions", Key: "trash_days", Value: 7}); err != nil {
		t.Fatal(err)
	}
	if got, want := read(), template+"sessions:\n  trash_days: 7\n"; got != want {
		t.Fatalf("after the first key:\n%q\nwant\n%q", got, want)
	}
	if err := plugins.EditConfigPath(path, []string{"command_allowlist"}, []string{"plugin_rule:echo"}); err != nil {
		t.Fatal(err)
	}
	if got, want := read(), template+"sessions:\n  trash_days: 7\ncommand_allowlist:\n  - plugin_rule:echo\n"; got != want {
		t.Fatalf("after the second key:\n%q\nwant\n%q", got, want)
	}
	// A file without comments, or with nothing, gains none.
	bare := filepath.Join(t.TempDir(), "config.yaml")
	if err := plugins.EditConfigPath(bare, []string{"command_allowlist"}, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(bare); string(data) != "command_allowlist:\n  - a\n" {
		t.Fatalf("a new file: %q", data)
	}
	if err := plugins.EditConfigPath(bare, []string{"command_allowlist"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := plugins.EditConfigPath(bare, []string{"command_allowlist"}, []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(bare); string(data) != "command_allowlist:\n  - b\n" {
		t.Fatalf("a file emptied and written again: %q", data)
	}
	// The comments-only file emptied of its keys is its comments again.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	only := filepath.Join(t.TempDir(), "config.yaml")
	must(os.WriteFile(only, []byte("# nothing yet"), 0o600))
	must(plugins.EditConfigPath(only, []string{"command_allowlist"}, []string{"x"}))
	must(plugins.EditConfigPath(only, []string{"command_allowlist"}, nil))
	if data, _ := os.ReadFile(only); string(data) != "# nothing yet\n" {
		t.Fatalf("emptied: %q", data)
	}
	// The file's title above a first key that goes heads the next key.
	titled := filepath.Join(t.TempDir(), "config.yaml")
	must(os.WriteFile(titled, []byte("# my atrium\ncommand_allowlist:\n  - x\n# kept a week\nsessions:\n  trash_days: 7\n"), 0o600))
	must(plugins.EditConfigPath(titled, []string{"command_allowlist"}, nil))
	if data, _ := os.ReadFile(titled); string(data) != "# my atrium\n# kept a week\nsessions:\n  trash_days: 7\n" {
		t.Fatalf("the first key removed: %q", data)
	}
}

// Removing a key of a section the file does not have changes nothing: no
// empty section is left behind (`approvals timeout 0` on a fresh file).
func TestRemovingAKeyOfAMissingSectionWritesNoSection(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("sessions:\n  trash_days: 7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := plugins.EditConfig(path, plugins.ConfigEdit{Section: "approvals", Key: "timeout", Value: nil}); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(path); string(data) != "sessions:\n  trash_days: 7\n" {
		t.Fatalf("config.yaml: %q", data)
	}
}

// A config.yaml a person wrote keeps its lines: Settings, the command
// line, plugin toggles, a plugin's set_config and an "always" rule change
// the lines of their keys and nothing else: blank lines, quotes, flow
// lists, indentation and comments stay as written.
func TestAHandWrittenConfigKeepsItsLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	MustWrite(t, e.home.PluginsDir(), "mine", py("mine"))
	MustWrite(t, e.home.PluginsDir(), "other", py("other"))
	const written = `# my atrium: laptop

storage:
    synchronous: NORMAL    # I can lose a second

# Sessions
sessions:
    trash_days: 30

    # at least this long
    retention_days: 90

plugins:
    enabled:
        - "other"    # the one I rely on
    disabled: []

command_allowlist: ['git status']
`
	path := e.home.ConfigPath()
	if err := os.WriteFile(path, []byte(written), 0o600); err != nil {
		t.Fatal(err)
	}
	want := written
	step := func(what string, err error, from, to string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !strings.Contains(want, from) {
			t.Fatalf("%s: the test's text has no %q", what, from)
		}
		want = strings.Replace(want, from, to, 1)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != want {
			t.Fatalf("%s:\n%s\nwant\n%s", what, data, want)
		}
		if _, _, err := config.Load(path); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	m, _ := e.manager()
	_, err := m.Enable(context.Background(), "mine")
	step("enable", err, "the one I rely on\n", "the one I rely on\n        - \"mine\"\n") // in the quotes the list has
	_, err = m.Disable(context.Background(), "other")
	step("disable", err, "        - \"other\"    # the one I rely on\n        - \"mine\"\n    disabled: []", "        - \"mine\"\n    disabled: [other]")
	step("Settings", plugins.EditConfig(path, plugins.ConfigEdit{Section: "storage", Key: "synchronous", Value: "FULL"},
		plugins.ConfigEdit{Section: "sessions", Key: "retention_days", Value: nil}),
		"NORMAL    # I can lose a second\n\n# Sessions\nsessions:\n    trash_days: 30\n\n    # at least this long\n    retention_days: 90\n",
		"FULL    # I can lose a second\n\n# Sessions\nsessions:\n    trash_days: 30\n")
	step("an always", plugins.UpdateConfigPath(path, []string{"command_allowlist"}, func(cur any) (any, error) {
		return append(cur.([]any), "plugin_rule:echo"), nil
	}), "['git status']", "['git status', 'plugin_rule:echo']")
	step("set_config", plugins.SetPluginSetting(e.home, "mine", "voice.speed", 1.5),
		"    disabled: [other]\n", "    disabled: [other]\n    entries:\n        mine:\n            settings:\n                voice:\n                    speed: 1.5\n")
	step("a new section", plugins.EditConfig(path, plugins.ConfigEdit{Section: "approvals", Key: "mode", Value: "off"}),
		"'plugin_rule:echo']\n", "'plugin_rule:echo']\n\napprovals:\n    mode: \"off\"\n")
}

// A file beyond an in-place edit (an anchor and its alias here) is still
// edited: written whole, every value kept.
func TestAConfigBeyondAnInPlaceEditIsWrittenWhole(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("sessions:\n  trash_days: &days 30\n  retention_days: *days\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := plugins.EditConfig(path, plugins.ConfigEdit{Section: "approvals", Key: "mode", Value: "off"}); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(path)
	if err != nil || cfg.RetentionDays() != 30 || cfg.ApprovalsMode() != "off" {
		data, _ := os.ReadFile(path)
		t.Fatalf("%v\n%s", err, data)
	}
}

// Processes toggling plugins at once all count: each reads the lists under
// the file's lock.
func TestPluginTogglesAtOnceAllCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var names []string
	for i := range 8 {
		n := fmt.Sprintf("p%d", i)
		MustWrite(t, e.home.PluginsDir(), n, py(n))
		names = append(names, n)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for _, n := range names {
		wg.Go(func() {
			m := plugins.NewManager(e.opts()) // one per process
			_, err := m.Enable(context.Background(), n)
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
	cfg, _, err := config.Load(e.home.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(cfg.Plugins.Enabled))
	if !slices.Equal(got, names) {
		t.Fatalf("enabled %q, want %q", got, names)
	}
}

// A config.yaml linked from a dotfiles repository stays a link: the file
// it names takes the edit, and keeps its permissions.
func TestALinkedConfigStaysALink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dotfiles := filepath.Join(dir, "dotfiles", "atrium.yaml")
	if err := os.MkdirAll(filepath.Dir(dotfiles), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dotfiles, []byte("sessions:\n  trash_days: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "home", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dotfiles, path); err != nil {
		t.Fatal(err)
	}
	if err := plugins.EditConfig(path, plugins.ConfigEdit{Section: "sessions", Key: "trash_days", Value: 30}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("config.yaml is no longer a link: %v %v", fi.Mode(), err)
	}
	data, err := os.ReadFile(dotfiles)
	if err != nil || string(data) != "sessions:\n  trash_days: 30\n" {
		t.Fatalf("the linked file: %q %v", data, err)
	}
	if fi, _ := os.Stat(dotfiles); fi.Mode().Perm() != 0o644 {
		t.Fatalf("permissions %v", fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(filepath.Dir(dotfiles)); len(entries) != 1 {
		t.Fatalf("left in the dotfiles folder: %v", entries)
	}
}
