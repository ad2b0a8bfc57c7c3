package cli_test

import (
	"archive/zip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"atrium/cli"
)

type pluginRow struct {
	Name     string   `json:"name"`
	Source   string   `json:"source"`
	Enabled  bool     `json:"enabled"`
	State    string   `json:"state"`
	Reason   string   `json:"reason"`
	Hooks    []string `json:"hooks"`
	Commands []string `json:"commands"`
}

func pluginList(t *testing.T, home string) map[string]pluginRow {
	t.Helper()
	var rows []pluginRow
	mustJSON(t, atrium(t, home, "plugins", "list", "--json"), &rows)
	out := map[string]pluginRow{}
	for _, r := range rows {
		out[r.Name] = r
	}
	return out
}

func TestPluginsCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	got := pluginList(t, home)
	if !got["memory-rules"].Enabled || got["hook-audit"].Enabled || got["hook-audit"].State != "disabled" || got["session-index"].Source != "bundled" {
		t.Fatalf("bundled: %+v", got)
	}
	if r := atrium(t, home, "plugins", "list"); r.code != 0 || !strings.Contains(r.stdout, "NAME") || !strings.Contains(r.stdout, "memory-rules") {
		t.Fatalf("table: %+v", r)
	}

	src := filepath.Join(t.TempDir(), "echo")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := "name: echo\nruntime: command\ncommand: [./echo.sh]\nhooks: [on_session_delete]\ncommands: [echo]\n"
	if err := os.WriteFile(filepath.Join(src, "plugin.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := atrium(t, home, "plugins", "install", src); r.code != 0 || !strings.Contains(r.stdout, "installed echo") {
		t.Fatalf("install: %+v", r)
	}
	if r := atrium(t, home, "plugins", "install", src); r.code != cli.ExitConflict {
		t.Fatalf("install again: %+v", r)
	}
	if r := atrium(t, home, "plugins", "install", src, "--force"); r.code != 0 {
		t.Fatalf("install --force: %+v", r)
	}
	if p := pluginList(t, home)["echo"]; p.Source != "user" || p.Enabled || p.Commands[0] != "echo" {
		t.Fatalf("installed: %+v", p)
	}
	if r := atrium(t, home, "plugins", "enable", "echo"); r.code != 0 {
		t.Fatalf("enable: %+v", r)
	}
	if r := atrium(t, home, "plugins", "disable", "memory-rules"); r.code != 0 {
		t.Fatalf("disable: %+v", r)
	}
	got = pluginList(t, home)
	if !got["echo"].Enabled || got["echo"].State != "stopped" || got["memory-rules"].Enabled {
		t.Fatalf("after toggles: %+v", got)
	}
	if r := atrium(t, home, "plugins", "remove", "memory-rules"); r.code != cli.ExitRejected {
		t.Fatalf("remove bundled: %+v", r)
	}
	if r := atrium(t, home, "plugins", "remove", "echo"); r.code != 0 {
		t.Fatalf("remove: %+v", r)
	}
	for _, args := range [][]string{{"plugins", "enable", "nope"}, {"plugins", "disable", "nope"}, {"plugins", "remove", "echo"}} {
		if r := atrium(t, home, args...); r.code != cli.ExitNotFound {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if r := atrium(t, home, "plugins", "enable"); r.code != cli.ExitInvalid {
		t.Fatalf("missing arg: %+v", r)
	}

	// An unsafe zip is refused with exit 2 and writes nothing.
	z := filepath.Join(t.TempDir(), "evil.zip")
	f, err := os.Create(z)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, n := range []string{"plugin.yaml", "../evil"} {
		w, _ := zw.Create(n)
		_, _ = w.Write([]byte("name: evil\nruntime: python\n"))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if r := atrium(t, home, "plugins", "install", z); r.code != cli.ExitInvalid {
		t.Fatalf("evil zip: %+v", r)
	}
	if _, ok := pluginList(t, home)["evil"]; ok {
		t.Fatal("evil installed")
	}
}

func TestPluginsDoctorAndReload(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	var d struct {
		Started    bool     `json:"started"`
		Registered []string `json:"registered_hooks"`
		DryRun     string   `json:"dry_run"`
	}
	// By default no fake record reaches the plugin; --dry-event opts in.
	mustJSON(t, atrium(t, home, "plugins", "doctor", "session-index", "--json"), &d)
	if !d.Started || !strings.HasPrefix(d.DryRun, "not run") || len(d.Registered) != 2 {
		t.Fatalf("doctor: %+v", d)
	}
	mustJSON(t, atrium(t, home, "plugins", "doctor", "session-index", "--dry-event", "--json"), &d)
	if !d.Started || !strings.HasPrefix(d.DryRun, "on_session_delete ok") || len(d.Registered) != 2 {
		t.Fatalf("doctor --dry-event: %+v", d)
	}
	if r := atrium(t, home, "plugins", "doctor", "nope"); r.code != cli.ExitNotFound {
		t.Fatalf("doctor of an unknown plugin: %+v", r)
	}
	if r := atrium(t, home, "plugins", "reload"); r.code != 0 || !strings.Contains(r.stdout, "reloaded 3 plugin(s)") {
		t.Fatalf("reload: %+v", r)
	}
	// Nothing the doctor did reached the event log.
	var evs []map[string]any
	mustJSON(t, atrium(t, home, "events", "list", "--json"), &evs)
	if len(evs) != 0 {
		t.Fatalf("doctor wrote events: %v", evs)
	}
}
