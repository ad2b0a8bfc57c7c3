package app_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"atrium/app"
	"atrium/backend/apperr"
	"atrium/backend/sessions"
)

// fakeSaver answers the save dialog with path (or an error) and records
// what it was asked.
type fakeSaver struct {
	path  string
	err   error
	asked []string
}

func (f *fakeSaver) SaveFile(title, filename string) (string, error) {
	f.asked = append(f.asked, filename)
	return f.path, f.err
}

func TestSaveExportWritesWhereTheUserChose(t *testing.T) {
	dir := t.TempDir()
	sv := &fakeSaver{path: filepath.Join(dir, "plan.md")}
	e := newEnvWith(t, app.Options{Platform: app.PlatformDesktop, Version: "test", Saver: sv})
	s := e.mustCreate(t, sessions.CreateParams{ID: "s1", Title: "Kernel upgrade plan"})
	e.mustAppend(t, s.ID, "user", "upgrade the kernel")

	got, err := e.app.Sessions.SaveExport(s.ID, "markdown")
	if err != nil {
		t.Fatal(err)
	}
	data, rerr := os.ReadFile(sv.path)
	if rerr != nil || got.Path != sv.path || got.Bytes != len(data) || !strings.Contains(string(data), "upgrade the kernel") {
		t.Fatalf("saved %+v, file %q %v", got, data, rerr)
	}
	if len(sv.asked) != 1 || !strings.HasSuffix(sv.asked[0], ".md") {
		t.Fatalf("dialog proposed %v", sv.asked)
	}
	// Saving over an existing file replaces it whole; no temporary is left.
	if _, err := e.app.Sessions.SaveExport(s.ID, "json"); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(sv.path)
	entries, _ := os.ReadDir(dir)
	if !strings.HasPrefix(strings.TrimSpace(string(data)), "{") || len(entries) != 1 {
		t.Fatalf("after the second save: %q, %d entries", data[:min(len(data), 40)], len(entries))
	}
}

func TestSaveExportCancelledMissingAndWithoutDialog(t *testing.T) {
	sv := &fakeSaver{} // the user cancels
	e := newEnvWith(t, app.Options{Platform: app.PlatformDesktop, Version: "test", Saver: sv})
	s := e.mustCreate(t, sessions.CreateParams{ID: "s1", Title: "t"})
	if got, err := e.app.Sessions.SaveExport(s.ID, "markdown"); err != nil || got.Path != "" {
		t.Fatalf("cancelled: %+v %v", got, err)
	}
	// A missing session or a bad format is said before any dialog opens.
	sv.asked = nil
	if _, err := e.app.Sessions.SaveExport("nope", "markdown"); apperr.CodeOf(err) != apperr.NotFound || len(sv.asked) != 0 {
		t.Fatalf("missing: %v, dialog %v", err, sv.asked)
	}
	if _, err := e.app.Sessions.SaveExport(s.ID, "pdf"); apperr.CodeOf(err) != apperr.Invalid || len(sv.asked) != 0 {
		t.Fatalf("bad format: %v, dialog %v", err, sv.asked)
	}
	// A folder that cannot be written is a clear error, not a crash.
	sv.path = filepath.Join(t.TempDir(), "no", "such", "dir", "x.md")
	if _, err := e.app.Sessions.SaveExport(s.ID, "markdown"); apperr.CodeOf(err) != apperr.Rejected || !strings.Contains(err.Error(), "x.md") {
		t.Fatalf("unwritable: %v", err)
	}
	sv.err = errors.New("dialog broke")
	if _, err := e.app.Sessions.SaveExport(s.ID, "markdown"); err == nil {
		t.Fatal("a failing dialog is an error")
	}
	// The dashboard has no dialog: it downloads Export's content.
	d := newEnv(t)
	d.mustCreate(t, sessions.CreateParams{ID: "s1", Title: "t"})
	if _, err := d.app.Sessions.SaveExport("s1", "markdown"); apperr.CodeOf(err) != apperr.Rejected {
		t.Fatalf("dashboard: %v", err)
	}
}
