package cli_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func restoreEvents(t *testing.T, home string) []json.RawMessage {
	t.Helper()
	var evs []struct {
		Payload json.RawMessage `json:"payload"`
	}
	mustJSON(t, atrium(t, home, "events", "list", "--json", "--hook", "on_session_restore"), &evs)
	out := make([]json.RawMessage, len(evs))
	for i, e := range evs {
		out[i] = e.Payload
	}
	return out
}

func TestTrashFromTheCommandLine(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	a := create(t, home, "--title", "alpha")
	b := create(t, home, "--title", "beta")
	if r := atrium(t, home, "sessions", "delete", a); r.code != 0 || !strings.Contains(r.stdout, "moved 1 session(s) to the trash; restorable until") {
		t.Fatalf("delete: %+v", r)
	}
	evs := events(t, home)
	if len(evs) != 1 || !evs[0].Payload.Restorable || evs[0].Payload.PurgeAfter == nil {
		t.Fatalf("events = %+v", evs)
	}
	var page struct {
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
	}
	mustJSON(t, atrium(t, home, "sessions", "list", "--json"), &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID != b {
		t.Fatalf("list = %+v", page)
	}
	if r := atrium(t, home, "sessions", "trash", "list"); r.code != 0 || !strings.Contains(r.stdout, a) || strings.Contains(r.stdout, b) {
		t.Fatalf("trash list: %+v", r)
	}
	if r := atrium(t, home, "sessions", "trash", "restore", a); r.code != 0 || !strings.Contains(r.stdout, "restored 1 session(s)") {
		t.Fatalf("restore: %+v", r)
	}
	if rs := restoreEvents(t, home); len(rs) != 1 || !strings.Contains(strings.ReplaceAll(string(rs[0]), " ", ""), `"reason":"trash"`) {
		t.Fatalf("restore events = %s", rs)
	}
	// Restoring again changes nothing and fires nothing.
	if r := atrium(t, home, "sessions", "trash", "restore", a); r.code != 0 || !strings.Contains(r.stdout, "nothing changed") {
		t.Fatalf("second restore: %+v", r)
	}
	if len(restoreEvents(t, home)) != 1 {
		t.Fatal("a no-op restore fired")
	}

	// Emptying the trash and --now need a yes when no terminal can ask.
	atrium(t, home, "sessions", "delete", b)
	if r := atrium(t, home, "sessions", "trash", "empty"); r.code != 5 || !strings.Contains(r.stderr, "--yes") {
		t.Fatalf("empty without --yes: %+v", r)
	}
	if r := atrium(t, home, "sessions", "trash", "empty", "--yes"); r.code != 0 || !strings.Contains(r.stdout, "deleted 1 session(s) for good") {
		t.Fatalf("empty: %+v", r)
	}
	if len(events(t, home)) != 2 {
		t.Fatal("purging the trash fired again")
	}
	if r := atrium(t, home, "sessions", "delete", "--now", a); r.code != 5 {
		t.Fatalf("--now without --yes: %+v", r)
	}
	if r := atrium(t, home, "sessions", "delete", "--now", "--yes", a); r.code != 0 || !strings.Contains(r.stdout, "for good") {
		t.Fatalf("--now --yes: %+v", r)
	}
	if evs := events(t, home); len(evs) != 3 || evs[2].Payload.Restorable {
		t.Fatalf("events = %+v", evs)
	}
	if r := atrium(t, home, "sessions", "trash", "empty", "--older-than", "soon", "--yes"); r.code != 2 || !strings.Contains(r.stderr, "90m, 12h, 30d, 2w") {
		t.Fatalf("bad --older-than: %+v", r)
	}
}

func TestDeleteIfEmptyRefusesASessionWithMessages(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	id := create(t, home, "--title", "busy")
	atrium(t, home, "messages", "append", id, "--role", "user", "--content", "hello")
	r := atrium(t, home, "sessions", "delete", "--if-empty", id)
	if r.code != 5 || !strings.Contains(r.stderr, "was not deleted: it has 1 message(s) and 0 child session(s)") {
		t.Fatalf("--if-empty on a busy session: %+v", r)
	}
	if len(events(t, home)) != 0 {
		t.Fatal("a kept session fired a delete")
	}
}

func TestBulkByRuleDryRunAndUndoFromTheCommandLine(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	var cron []string
	for i := 0; i < 3; i++ {
		cron = append(cron, create(t, home, "--title", "nightly", "--source", "cron"))
	}
	create(t, home, "--parent", cron[0], "--relation", "delegate", "--title", "step")
	keep := create(t, home, "--title", "mine")
	var p struct {
		Count    int      `json:"count"`
		Cascaded int      `json:"cascaded"`
		IDs      []string `json:"ids"`
	}
	mustJSON(t, atrium(t, home, "sessions", "delete", "--source", "cron", "--messages", "<3", "--dry-run", "--json"), &p)
	if p.Count != 4 || p.Cascaded != 1 || len(p.IDs) != 4 {
		t.Fatalf("dry run = %+v", p)
	}
	if len(events(t, home)) != 0 {
		t.Fatal("the dry run fired")
	}
	r := atrium(t, home, "sessions", "delete", "--source", "cron", "--messages", "<3", "--request-id", "clean-1")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "3 session(s) match; with their compression chains and subagents 4 would be moved to the trash (1 cascaded)") ||
		!strings.Contains(r.stdout, "undo it with: atrium sessions undo clean-1") {
		t.Fatalf("delete by rule: %+v", r)
	}
	if evs := events(t, home); len(evs) != 1 || len(evs[0].Payload.DeletedIDs) != 4 {
		t.Fatalf("events = %+v", evs)
	}
	if r := atrium(t, home, "sessions", "requests"); r.code != 0 || !strings.Contains(r.stdout, "atrium sessions undo clean-1") {
		t.Fatalf("requests: %+v", r)
	}
	if r := atrium(t, home, "sessions", "undo", "clean-1"); r.code != 0 || !strings.Contains(r.stdout, "restored 4 session(s)") {
		t.Fatalf("undo: %+v", r)
	}
	if r := atrium(t, home, "sessions", "undo", "clean-1"); r.code != 0 || !strings.Contains(r.stdout, "already applied") {
		t.Fatalf("second undo: %+v", r)
	}
	if len(restoreEvents(t, home)) != 1 {
		t.Fatal("undo fired more than once")
	}
	// Ids and filter flags do not mix; bad filter input names the field.
	if r := atrium(t, home, "sessions", "delete", keep, "--source", "cli"); r.code != 2 {
		t.Fatalf("ids and filter: %+v", r)
	}
	if r := atrium(t, home, "sessions", "delete", "--messages", "few"); r.code != 2 || !strings.Contains(r.stderr, "messages") {
		t.Fatalf("bad filter: %+v", r)
	}
	if r := atrium(t, home, "sessions", "archive", "--scope", "all"); r.code != 2 || !strings.Contains(r.stderr, "at least one condition") {
		t.Fatalf("empty rule: %+v", r)
	}
	if r := atrium(t, home, "sessions", "list", "--source", "cron", "--messages", "0"); r.code != 0 || strings.Count(r.stdout, "nightly") != 3 {
		t.Fatalf("list with a filter: %+v", r)
	}
}

func TestConversationsRenameAndExportFromTheCommandLine(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	root := create(t, home, "--title", "talk")
	atrium(t, home, "messages", "append", root, "--role", "user", "--content", "the kestrel nests")
	tip := create(t, home, "--parent", root, "--relation", "compression", "--title", "talk")
	create(t, home, "--parent", tip, "--relation", "delegate", "--title", "helper")
	r := atrium(t, home, "sessions", "list", "--conversations")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 2 || !strings.Contains(r.stdout, tip) || strings.Contains(r.stdout, root) {
		t.Fatalf("conversations: %+v", r)
	}
	if r := atrium(t, home, "sessions", "rename", tip, "Kestrel notes"); r.code != 0 || !strings.Contains(r.stdout, "Kestrel notes") {
		t.Fatalf("rename: %+v", r)
	}
	if r := atrium(t, home, "sessions", "search", "kestrel"); r.code != 0 || !strings.Contains(r.stdout, tip) || !strings.Contains(r.stdout, "active") {
		t.Fatalf("search: %+v", r)
	}
	out := home + "/talk.md"
	if r := atrium(t, home, "sessions", "export", root, "--output", out); r.code != 0 {
		t.Fatalf("export: %+v", r)
	}
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), "# Kestrel notes") || !strings.Contains(string(b), "the kestrel nests") {
		t.Fatalf("exported: %s, %v", b, err)
	}
	if r := atrium(t, home, "sessions", "export", root, "--format", "pdf"); r.code != 2 {
		t.Fatalf("bad format: %+v", r)
	}
}

func TestStorageFromTheCommandLine(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	id := create(t, home, "--title", "old talk")
	atrium(t, home, "messages", "append", id, "--role", "user", "--content", "hello")
	atrium(t, home, "sessions", "delete", id)
	r := atrium(t, home, "storage")
	if r.code != 0 || !strings.Contains(r.stdout, "trash       1 session(s), 1 message(s)") || !strings.Contains(r.stdout, "retention") {
		t.Fatalf("storage: %+v", r)
	}
	var st struct {
		Trash struct {
			Sessions int `json:"sessions"`
		} `json:"trash"`
	}
	mustJSON(t, atrium(t, home, "storage", "--json"), &st)
	if st.Trash.Sessions != 1 {
		t.Fatalf("storage json = %+v", st)
	}
	atrium(t, home, "sessions", "trash", "empty", "--yes")
	if r := atrium(t, home, "storage", "vacuum"); r.code != 0 || !strings.Contains(r.stdout, "freed") {
		t.Fatalf("vacuum: %+v", r)
	}
	if r := atrium(t, home, "storage", "confirm-retention"); r.code != 0 || !strings.Contains(r.stdout, "confirmed") {
		t.Fatalf("confirm: %+v", r)
	}
}
