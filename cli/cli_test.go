package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"atrium/backend/hooks"
	"atrium/cli"
)

type run struct {
	code           int
	stdout, stderr string
}

func atrium(t *testing.T, home string, args ...string) run {
	t.Helper()
	stopHostAtCleanup(t, home)
	var out, errb bytes.Buffer
	code := cli.Main(append(args, "--home", home), cli.Env{Version: "v9.9.9-test", Stdout: &out, Stderr: &errb})
	return run{code, out.String(), errb.String()}
}

func atriumStdin(t *testing.T, home, stdin string, args ...string) run {
	t.Helper()
	stopHostAtCleanup(t, home)
	var out, errb bytes.Buffer
	root := cli.NewRoot(cli.Env{Version: "v9.9.9-test", Stdout: &out, Stderr: &errb})
	root.SetArgs(append(args, "--home", home))
	root.SetIn(strings.NewReader(stdin))
	code := 0
	if err := root.Execute(); err != nil {
		errb.WriteString(err.Error())
		code = 1
	}
	return run{code, out.String(), errb.String()}
}

func mustJSON(t *testing.T, r run, v any) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, r.stdout)
	}
}

func create(t *testing.T, home string, args ...string) string {
	t.Helper()
	var s struct {
		ID string `json:"id"`
	}
	mustJSON(t, atrium(t, home, append([]string{"sessions", "create", "--json"}, args...)...), &s)
	return s.ID
}

type event struct {
	EventID    string              `json:"event_id"`
	Seq        int64               `json:"seq"`
	Hook       string              `json:"hook"`
	Payload    hooks.SessionDelete `json:"payload"`
	Delivered  bool                `json:"delivered"`
	Redelivery bool                `json:"redelivery"`
}

func events(t *testing.T, home string) []event {
	t.Helper()
	var evs []event
	mustJSON(t, atrium(t, home, "events", "list", "--json", "--hook", "on_session_delete"), &evs)
	return evs
}

func TestVersionHelpAndBadInput(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if r := atrium(t, home, "--version"); r.code != 0 || r.stdout != "v9.9.9-test\n" {
		t.Fatalf("--version: %+v", r)
	}
	if r := atrium(t, home, "version"); r.code != 0 || strings.TrimSpace(r.stdout) != "v9.9.9-test" {
		t.Fatalf("version: %+v", r)
	}
	var out, errb bytes.Buffer
	if code := cli.Main(nil, cli.Env{Stdout: &out, Stderr: &errb}); code != 0 || !strings.Contains(out.String(), "Usage:") ||
		!strings.Contains(errb.String(), "no desktop window") {
		t.Fatalf("bare atrium without the window: %d %q %q", code, out.String(), errb.String())
	}
	scenarios := []struct {
		name string
		args []string
		code int
	}{
		{"unknown flag", []string{"sessions", "list", "--bogus"}, cli.ExitInvalid},
		{"missing arg", []string{"sessions", "show"}, cli.ExitInvalid},
		{"hostile id", []string{"sessions", "delete", "../../etc/passwd"}, cli.ExitInvalid},
		{"unknown id", []string{"sessions", "delete", "nope"}, cli.ExitNotFound},
		{"unknown hook", []string{"events", "list", "--hook", "on_coffee"}, cli.ExitInvalid},
		{"bad profile", []string{"sessions", "list", "--profile", "../x"}, cli.ExitInvalid},
		{"bad source", []string{"sessions", "create", "--source", "fax"}, cli.ExitInvalid},
		{"if-empty with two ids", []string{"sessions", "delete", "--if-empty", "a", "b"}, cli.ExitInvalid},
	}
	for _, sc := range scenarios {
		r := atrium(t, home, sc.args...)
		if r.code != sc.code {
			t.Errorf("%s: exit %d, want %d (%s)", sc.name, r.code, sc.code, r.stderr)
		}
		if lines := strings.Count(strings.TrimSpace(r.stderr), "\n"); lines != 0 || !strings.HasPrefix(r.stderr, "atrium: ") {
			t.Errorf("%s: stderr must be one line, got %q", sc.name, r.stderr)
		}
	}
	if evs := events(t, home); len(evs) != 0 {
		t.Fatalf("bad input fired %v", evs)
	}
}

func TestDeleteThroughReceiptsFromTheCommandLine(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	parent := create(t, home, "--title", "parent")
	child := create(t, home, "--parent", parent, "--relation", "delegate")
	other := create(t, home, "--title", "other")
	var show map[string]any
	mustJSON(t, atrium(t, home, "sessions", "show", child, "--json"), &show)
	if show["parent_session_id"] != parent || show["relation"] != "delegate" {
		t.Fatalf("show: %v", show)
	}
	if r := atrium(t, home, "messages", "append", parent, "--role", "user", "--content", "remember the blue endpoint"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	var hits []map[string]any
	mustJSON(t, atrium(t, home, "sessions", "search", "blue", "--json"), &hits)
	if len(hits) != 1 {
		t.Fatalf("search: %v", hits)
	}

	args := []string{"sessions", "delete", parent, other, "--request-id", "req-1", "--json"}
	var first, second struct {
		Replayed bool `json:"replayed"`
		Result   struct {
			AffectedIDs []string `json:"affected_ids"`
		} `json:"result"`
	}
	mustJSON(t, atrium(t, home, args...), &first)
	mustJSON(t, atrium(t, home, args...), &second)
	if first.Replayed || !second.Replayed || len(first.Result.AffectedIDs) != 3 || len(second.Result.AffectedIDs) != 3 {
		t.Fatalf("first %+v second %+v", first, second)
	}
	evs := events(t, home)
	if len(evs) != 1 {
		t.Fatalf("events = %+v, want exactly one", evs)
	}
	p := evs[0].Payload
	if p.SessionID != parent || p.Reason != "delete" || p.Profile != "default" || len(p.DeletedIDs) != 3 ||
		p.SessionsDir != filepath.Join(home, "sessions") || !evs[0].Delivered || evs[0].EventID == "" {
		t.Fatalf("event = %+v", evs[0])
	}
	// Same request id, different request: conflict, nothing changes.
	if r := atrium(t, home, "sessions", "archive", other, "--request-id", "req-1"); r.code != cli.ExitConflict {
		t.Fatalf("conflict: %+v", r)
	}
	if len(events(t, home)) != 1 {
		t.Fatal("a conflict fired")
	}
}

func TestArchiveTwiceAndUnarchive(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	id := create(t, home, "--title", "done")
	var res struct {
		Changed bool `json:"changed"`
	}
	mustJSON(t, atrium(t, home, "sessions", "archive", id, "--json"), &res)
	if !res.Changed {
		t.Fatal("first archive did not change")
	}
	mustJSON(t, atrium(t, home, "sessions", "archive", id, "--json"), &res)
	if res.Changed {
		t.Fatal("second archive changed")
	}
	mustJSON(t, atrium(t, home, "sessions", "unarchive", id, "--json"), &res)
	if !res.Changed {
		t.Fatal("unarchive did not change")
	}
	evs := events(t, home)
	if len(evs) != 1 || evs[0].Payload.Reason != "archive" {
		t.Fatalf("events %+v", evs)
	}
	var page struct {
		Sessions []map[string]any `json:"sessions"`
	}
	mustJSON(t, atrium(t, home, "sessions", "list", "--json"), &page)
	if len(page.Sessions) != 1 {
		t.Fatalf("list after unarchive: %v", page)
	}
}

func TestGlobalFlagsProfilesAndConfigErrors(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	// --home and --profile accepted before the subcommand too.
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"--home", home, "--profile", "work", "sessions", "create", "--title", "w"}, cli.Env{Stdout: &out, Stderr: &errb}); code != 0 {
		t.Fatal(errb.String())
	}
	for _, p := range []string{"state.db", "sessions", "plugins"} {
		if _, err := os.Stat(filepath.Join(home, "profiles", "work", p)); err != nil {
			t.Fatalf("profile layout: %v", err)
		}
	}
	var page struct {
		Sessions []map[string]any `json:"sessions"`
	}
	mustJSON(t, atrium(t, home, "sessions", "list", "--json"), &page)
	if len(page.Sessions) != 0 {
		t.Fatal("default profile sees the work profile's session")
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("sessions:\n  retention_days: [oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := atrium(t, home, "sessions", "list")
	if r.code != cli.ExitInvalid || !strings.Contains(r.stderr, filepath.Join(home, "config.yaml")+":2:") {
		t.Fatalf("corrupt config: %+v", r)
	}
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("sessions:\n  retention_days: 7\n  colour: blue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = atrium(t, home, "sessions", "list")
	if r.code != 0 || !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, "colour") {
		t.Fatalf("unknown key must warn, not fail: %+v", r)
	}
}

func TestMoveAndMaintenanceFromTheCommandLine(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	a := create(t, home, "--title", "to move")
	empty := create(t, home, "--title", "empty")
	if r := atrium(t, home, "sessions", "end", empty); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := atrium(t, home, "sessions", "move", a, "--to-profile", "work"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	var show map[string]any
	mustJSON(t, atrium(t, home, "sessions", "show", a, "--json", "--profile", "work"), &show)
	if show["profile"] != "work" {
		t.Fatalf("moved: %v", show)
	}
	if r := atrium(t, home, "sessions", "show", a); r.code != cli.ExitNotFound {
		t.Fatalf("still in default: %+v", r)
	}
	var rep struct {
		Ran        bool `json:"ran"`
		EmptySweep struct {
			AffectedIDs []string `json:"affected_ids"`
		} `json:"empty_sweep"`
	}
	mustJSON(t, atrium(t, home, "maintenance", "run", "--json"), &rep)
	if !rep.Ran || len(rep.EmptySweep.AffectedIDs) != 1 || rep.EmptySweep.AffectedIDs[0] != empty {
		t.Fatalf("maintenance: %+v", rep)
	}
	evs := events(t, home)
	if len(evs) != 2 || evs[0].Payload.Reason != "profile_repair" || evs[1].Payload.Reason != "empty_sweep" {
		t.Fatalf("events: %+v", evs)
	}
	var repaired []any
	mustJSON(t, atrium(t, home, "sessions", "repair-profile", "--json"), &repaired)
	if len(repaired) != 0 {
		t.Fatalf("nothing to repair, got %v", repaired)
	}
}

func TestChatSendCompactAndCommandsFromTheCommandLine(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	id := create(t, home, "--title", "talk")
	for i := 0; i < 4; i++ {
		r := atrium(t, home, "send", id, "we decided the deploy window is Friday 18:00 and the on-call owner is Grace; please remember the runbook at /ops/deploy.md for later")
		if r.code != 0 || !strings.Contains(r.stdout, "offline reply to") {
			t.Fatalf("send: %+v", r)
		}
	}
	if r := atrium(t, home, "send", id, "/whoami"); r.code != 0 || !strings.Contains(r.stdout, "local user on cli, session "+id) {
		t.Fatalf("/whoami: %+v", r)
	}
	var res struct {
		Changed      bool   `json:"changed"`
		SessionID    string `json:"session_id"`
		OldSessionID string `json:"old_session_id"`
	}
	mustJSON(t, atrium(t, home, "compact", id, "--json"), &res)
	if !res.Changed || res.OldSessionID != id || res.SessionID == id {
		t.Fatalf("compact: %+v", res)
	}
	// chat on the old id follows the rotation and says so; stdin is not a
	// terminal, so it reads one line per turn.
	var out, errb bytes.Buffer
	root := cli.NewRoot(cli.Env{Stdout: &out, Stderr: &errb})
	root.SetArgs([]string{"chat", id, "--home", home})
	root.SetIn(strings.NewReader("hello again\n/compress\n/exit\n"))
	if err := root.Execute(); err != nil {
		t.Fatalf("chat: %v %s", err, errb.String())
	}
	if !strings.Contains(out.String(), "continues in "+res.SessionID) || !strings.Contains(out.String(), "offline reply to: hello again") ||
		!strings.Contains(out.String(), "ended") {
		t.Fatalf("chat output:\n%s", out.String())
	}
	var msgs []map[string]any
	mustJSON(t, atrium(t, home, "messages", "list", res.SessionID, "--json"), &msgs)
	if len(msgs) == 0 {
		t.Fatal("no messages in the continuation")
	}
	var evs []event
	mustJSON(t, atrium(t, home, "events", "list", "--json", "--hook", "post_compaction"), &evs)
	if len(evs) != 1 {
		t.Fatalf("post_compaction events: %d (the empty /compress must fire nothing)", len(evs))
	}
	if r := atrium(t, home, "compact", res.SessionID, "--kind", "shrink"); r.code != cli.ExitInvalid {
		t.Fatalf("bad kind: %+v", r)
	}
}
