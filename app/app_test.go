package app_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"atrium/app"
	"atrium/backend/apperr"
	"atrium/backend/compaction"
	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/plugins"
	"atrium/backend/sessions"
	"atrium/backend/stack"
	"atrium/backend/turns"
)

var ctx = context.Background()

type env struct {
	st  *stack.Stack
	app *app.App
}

// newEnv opens a real stack on a temp home.
func newEnv(t *testing.T) env {
	t.Helper()
	return newEnvWith(t, app.Options{Platform: app.PlatformDashboard, Version: "test"})
}

// newEnvWith is newEnv with the surface's options.
func newEnvWith(t *testing.T, o app.Options) env {
	t.Helper()
	home, err := config.ResolveHome(t.TempDir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	st, loop := openStack(t, home, nil)
	mgr := plugins.NewManager(plugins.DiscoverOptions{Home: home, Version: "dev"})
	return env{st: st, app: app.New(ctx, st, loop, mgr, o)}
}

// openStack opens a real stack on home (register, if not nil, installs
// plugins before its bus starts) and its turn loop; both close with the test.
func openStack(t *testing.T, home config.Home, register func(*stack.Stack) error) (*stack.Stack, *turns.Loop) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := stack.Open(ctx, home, stack.Options{Logger: quiet, Register: register})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	loop, err := st.Loop(stack.ModelFlags{})
	if err != nil {
		t.Fatal(err)
	}
	return st, loop
}

func (e env) mustCreate(t *testing.T, p sessions.CreateParams) sessions.Session {
	t.Helper()
	s, err := e.st.Sessions.Create(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (e env) mustAppend(t *testing.T, id, role, content string) {
	t.Helper()
	if _, err := e.st.Sessions.AppendMessage(ctx, id, sessions.NewMessage{Role: role, Content: content}); err != nil {
		t.Fatal(err)
	}
}

// fixture: a compression chain root -> tip with a delegate child, and an
// unrelated session.
type fixture struct{ root, tip, child, other sessions.Session }

func (e env) mustFixture(t *testing.T) fixture {
	t.Helper()
	f := fixture{root: e.mustCreate(t, sessions.CreateParams{ID: "root", Title: "Kestrel planning"})}
	f.tip = e.mustCreate(t, sessions.CreateParams{ID: "tip", ParentID: "root", Relation: sessions.RelationCompression})
	f.child = e.mustCreate(t, sessions.CreateParams{ID: "child", ParentID: "tip", Relation: sessions.RelationDelegate})
	f.other = e.mustCreate(t, sessions.CreateParams{ID: "other", Title: "unrelated"})
	e.mustAppend(t, "tip", "system", compaction.SummaryPrefix+" earlier we discussed pelicans")
	e.mustAppend(t, "tip", "user", "tell me about pelicans")
	e.mustAppend(t, "tip", "tool", compaction.StubPrefix+" 300 lines")
	return f
}

func (e env) deleteEvents(t *testing.T) int {
	t.Helper()
	if err := e.st.Bus.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := hooks.ListEvents(ctx, e.st.DB, hooks.LogFilter{Hook: hooks.OnSessionDelete})
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

func TestSessionsReadServices(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustFixture(t)
	s := e.app.Sessions

	page, err := s.List(app.ListFilter{Limit: 2})
	if err != nil || len(page.Sessions) != 2 || page.Next == "" {
		t.Fatalf("list page 1 = %+v, %v", page, err)
	}
	rest, err := s.List(app.ListFilter{Limit: 10, Cursor: page.Next})
	if err != nil || len(rest.Sessions) != 2 || rest.Next != "" {
		t.Fatalf("list page 2 = %+v, %v", rest, err)
	}
	if _, err := s.List(app.ListFilter{Source: "nowhere"}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("bad source: %v", err)
	}

	hits, err := s.Search("pelic", 10, false)
	if err != nil || len(hits) != 1 || hits[0].Session.ID != "tip" {
		t.Fatalf("search = %+v, %v", hits, err)
	}
	got, err := s.Get("tip")
	if err != nil || got.ParentSessionID != "root" || got.MessageCount != 3 {
		t.Fatalf("get = %+v, %v", got, err)
	}
	msgs, err := s.Transcript("tip")
	if err != nil || len(msgs) != 3 {
		t.Fatalf("transcript = %+v, %v", msgs, err)
	}
	markers := []string{msgs[0].Marker, msgs[1].Marker, msgs[2].Marker}
	if fmt.Sprint(markers) != fmt.Sprint([]string{app.MarkerSummary, "", app.MarkerStub}) || !msgs[0].Compaction || msgs[1].Compaction {
		t.Fatalf("markers = %v", markers)
	}
	chain, err := s.Lineage("tip")
	if err != nil || len(chain) != 2 || chain[0].ID != "root" {
		t.Fatalf("lineage = %+v, %v", chain, err)
	}
	for _, id := range []string{"missing", "../etc"} {
		_, err := s.Get(id)
		want := map[string]apperr.Code{"missing": apperr.NotFound, "../etc": apperr.Invalid}[id]
		if apperr.CodeOf(err) != want {
			t.Fatalf("get %q: %v, want %s", id, err, want)
		}
	}
}

func TestDeleteThroughReceiptsReplaysAndFiresOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustFixture(t)
	s := e.app.Sessions

	pre, err := s.Preview([]string{"tip"})
	if err != nil || pre.Count != 3 || pre.Cascaded != 2 {
		t.Fatalf("preview = %+v, %v", pre, err)
	}
	first, err := s.Delete("req-1", []string{"tip"})
	if err != nil || first.Replayed || len(first.AffectedIDs) != pre.Count {
		t.Fatalf("delete = %+v, %v", first, err)
	}
	again, err := s.Delete("req-1", []string{"tip"})
	if err != nil || !again.Replayed || fmt.Sprint(again.AffectedIDs) != fmt.Sprint(first.AffectedIDs) {
		t.Fatalf("replay = %+v, %v", again, err)
	}
	if n := e.deleteEvents(t); n != 1 {
		t.Fatalf("on_session_delete events = %d, want 1", n)
	}
	if _, err := s.Delete("req-1", []string{"other"}); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("reuse: %v", err)
	}
	if got, err := s.Get("root"); err != nil || got.Where != "trash" || got.TrashedAt == nil || got.PurgeAfter == nil {
		t.Fatalf("root not in the trash: %+v, %v", got, err)
	}
	if page, err := s.List(app.ListFilter{}); err != nil || len(page.Sessions) != 1 || page.Sessions[0].ID != "other" {
		t.Fatalf("trashed rows listed: %+v, %v", page, err)
	}
	if page, err := s.List(app.ListFilter{Scope: "trash"}); err != nil || len(page.Sessions) != len(first.AffectedIDs) {
		t.Fatalf("trash = %+v, %v", page, err)
	}
	if _, err := s.Delete("req-2", []string{"gone"}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("unknown id: %v", err)
	}
	if n := e.deleteEvents(t); n != 1 {
		t.Fatalf("failed requests fired: %d events", n)
	}
}

func TestBulkArchiveThenUnarchive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustFixture(t)
	s := e.app.Sessions
	r, err := s.Archive("a-1", []string{"root", "other"})
	if err != nil || !r.Changed {
		t.Fatalf("archive = %+v, %v", r, err)
	}
	page, _ := s.List(app.ListFilter{Archived: true})
	if len(page.Sessions) < 2 {
		t.Fatalf("archived list = %+v", page)
	}
	if _, err := s.Unarchive("u-1", []string{"root", "other"}); err != nil {
		t.Fatal(err)
	}
	page, _ = s.List(app.ListFilter{Archived: true})
	if len(page.Sessions) != 0 {
		t.Fatalf("still archived: %+v", page)
	}
}

func TestSendRunsATurnOnTheConfiguredPlatform(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustCreate(t, sessions.CreateParams{ID: "chat"})
	turn, err := e.app.Sessions.Send("chat", "hello there")
	if err != nil || turn.Reply == "" {
		t.Fatalf("send = %+v, %v", turn, err)
	}
	if _, err := e.app.Sessions.Send("chat", "  "); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("empty: %v", err)
	}
	if err := e.st.Bus.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := hooks.ListEvents(ctx, e.st.DB, hooks.LogFilter{Hook: hooks.OnSessionStart})
	if err != nil || len(evs) != 1 || !strings.Contains(string(evs[0].Payload), `"dashboard"`) {
		t.Fatalf("on_session_start = %+v, %v", evs, err)
	}
	recent, err := e.app.Activity.Recent(0, 100)
	if err != nil || len(recent) == 0 {
		t.Fatalf("activity = %+v, %v", recent, err)
	}
	after, err := e.app.Activity.Recent(recent[len(recent)-1].Seq, 100)
	if err != nil || len(after) != 0 {
		t.Fatalf("after last seq = %+v, %v", after, err)
	}
}

func TestSettingsRoundTripAndRefuseInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := e.st.Home.ConfigPath()
	if err := os.WriteFile(path, []byte("# mine\nmodel:\n  provider: offline\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := e.app.Settings.Set(app.SettingsDTO{HookTimeoutSeconds: 12, RetentionDays: 7, ArchiveIdleDays: 3, Profile: "work"})
	thirty, yes, no, manual, zero, none := 30, true, false, "manual", 0.0, ""
	want := app.SettingsDTO{HookTimeoutSeconds: 12, RetentionDays: 7, ArchiveIdleDays: 3, Profile: "work", Profiles: []string{"default"},
		TrashDays: &thirty, TrashAutomatic: &yes, AutoPrune: &no, ApprovalsMode: &manual, ApprovalTimeoutSeconds: &zero,
		ApprovalsReviewerModel: &none, ApprovalsSmartPolicy: &none,
		Model: &app.ModelSettingsDTO{Provider: "offline", Key: app.KeyStatusDTO{EnvPath: e.st.Home.EnvPath()}},
		Tools: &app.ToolsSettingsDTO{Terminal: true, Files: true, Memory: true, OwnLists: []string{}, Web: true, WebProvider: "firecrawl",
			WebKey:      app.KeyStatusDTO{Name: "FIRECRAWL_API_KEY", EnvPath: e.st.Home.EnvPath()},
			WebProblem:  "web search needs FIRECRAWL_API_KEY (or a self-hosted FIRECRAWL_API_URL) or TAVILY_API_KEY in the profile's .env",
			ProcessEnds: "all", ToolProgress: "all"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("set = %+v, %v", got, err)
	}
	if p := config.StartupProfile(e.st.Home.Root); p != "work" {
		t.Fatalf("startup profile = %q", p)
	}
	if h, err := config.ResolveHome(e.st.Home.Root, ""); err != nil || h.Profile != "work" {
		t.Fatalf("home without a profile = %+v, %v", h, err)
	}
	if _, err := e.app.Settings.Set(app.SettingsDTO{RetentionDays: 5, Profile: "../x"}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("bad profile: %v", err)
	}
	if now, _ := e.app.Settings.Get(); now.RetentionDays != 7 || now.Profile != "work" {
		t.Fatalf("a bad profile changed settings: %+v", now)
	}
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), "provider: offline") {
		t.Fatalf("other keys lost:\n%s", raw)
	}
	if _, err := e.app.Settings.Set(app.SettingsDTO{RetentionDays: 0}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("retention 0: %v", err)
	}
	if now, _ := e.app.Settings.Get(); now.RetentionDays != 7 {
		t.Fatalf("invalid set changed the file: %+v", now)
	}
	if m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".config-*")); len(m) != 0 {
		t.Fatalf("temp files left: %v", m)
	}
}

func TestPluginsListAndUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.app.Plugins.List(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.app.Plugins.Enable("no-such-plugin"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("enable unknown: %v", err)
	}
}

func TestErrorFormatterHidesInternalMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	scenarios := []struct {
		name string
		err  error
		want app.ErrorDTO
	}{
		{"plain", errors.New("disk /secret/path failed"), app.ErrorDTO{Code: "internal", Message: "Internal error."}},
		{"coded internal", apperr.New(apperr.Internal, "sql: table x"), app.ErrorDTO{Code: "internal", Message: "Internal error."}},
		{"not found", fmt.Errorf("get: %w", apperr.New(apperr.NotFound, "session x not found")), app.ErrorDTO{Code: "not_found", Message: "get: session x not found"}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if got := e.app.ErrorFormatter(sc.err); got != sc.want {
				t.Fatalf("got %+v, want %+v", got, sc.want)
			}
		})
	}
}

// A call cancelled at shutdown (the window closing while the filter facets
// were read) is not logged as an internal error; a real one still is.
func TestFormatErrorCancelledIsNotAnError(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	lg := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	got := app.FormatError(lg, fmt.Errorf("session platforms: %w", context.Canceled))
	if got.Code != "internal" || buf.Len() != 0 {
		t.Fatalf("cancelled: %+v, logged %q", got, buf.String())
	}
	app.FormatError(lg, errors.New("disk full"))
	if !strings.Contains(buf.String(), "level=ERROR") {
		t.Fatalf("a real internal error was not logged: %q", buf.String())
	}
}

// A Claude Code Stop hook's instruction, stored as a user message, is
// marked as the hook's (the window shows it so), not the person's; a
// person's message is not, whatever else it says.
func TestStopHookFeedbackIsMarked(t *testing.T) {
	e := newEnv(t)
	s := e.mustCreate(t, sessions.CreateParams{Title: "kept going"})
	for _, text := range []string{"run the tests", "Stop hook feedback:\n[./check.sh]: tests fail", "what did the Stop hook feedback say?"} {
		e.mustAppend(t, s.ID, "user", text)
	}
	msgs, err := e.app.Sessions.Transcript(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var markers []string
	for _, m := range msgs {
		markers = append(markers, m.Marker)
	}
	if fmt.Sprint(markers) != fmt.Sprint([]string{"", app.MarkerHookFeedback, ""}) || msgs[1].Compaction {
		t.Fatalf("markers %q", markers)
	}
}
