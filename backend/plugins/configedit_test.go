package plugins_test

import (
	"os"
	"path/filepath"
	"testing"

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
	// From here the comments belong to the first key (blank lines between
	// them are not kept by the YAML library, as in any file with keys).
	if got, want := read(), "# Atrium settings\n# sessions:\n#   retention_days: 30\nsessions:\n  trash_days: 7\ncommand_allowlist:\n  - plugin_rule:echo\n"; got != want {
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
