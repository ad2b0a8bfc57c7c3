package stack_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"atrium/backend/compaction"
	"atrium/backend/config"
	"atrium/backend/sessions"
	"atrium/backend/stack"
)

// notLoading counts the log's records that say config.yaml does not load.
type notLoading struct {
	slog.Handler
	n atomic.Int32
}

func (h *notLoading) Enabled(context.Context, slog.Level) bool { return true }

func (h *notLoading) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "config.yaml does not load") {
		h.n.Add(1)
	}
	return nil
}

// newHome is a profile home, and how the test writes its config.yaml: as
// every Atrium write does, a new file renamed over the old.
func newHome(t *testing.T) (config.Home, func(text string)) {
	t.Helper()
	home, err := config.ResolveHome(t.TempDir(), "default")
	if err != nil {
		t.Fatal(err)
	}
	if err := home.Ensure(); err != nil {
		t.Fatal(err)
	}
	return home, func(text string) {
		t.Helper()
		tmp := home.ConfigPath() + ".new"
		if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, home.ConfigPath()); err != nil {
			t.Fatal(err)
		}
	}
}

// A running process follows config.yaml as it is now: the trash (the next
// delete), the hook timeout, the compaction thresholds, idle archiving and
// retention (the next maintenance run, and what the Storage page shows)
// without the profile being opened again. A file that does not load keeps the settings read
// before, said once in the log.
func TestARunningStackFollowsConfigYaml(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home, write := newHome(t)
	write("sessions:\n  trash_days: 30\nplugins:\n  hook_callback_timeout: 5\n")
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixMilli())
	said := &notLoading{Handler: slog.DiscardHandler}
	st, err := stack.Open(ctx, home, stack.Options{Logger: slog.New(said),
		Clock: func() time.Time { return time.UnixMilli(now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	create := func(title string) string {
		t.Helper()
		s, err := st.Sessions.Create(ctx, sessions.CreateParams{Title: title})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: "user", Content: "keep me"}); err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	del := func(id string) sessions.Result {
		t.Helper()
		r, err := st.Sessions.Delete(ctx, []string{id}, nil)
		if err != nil || !r.Changed {
			t.Fatalf("delete %s: %+v %v", id, r, err)
		}
		return r
	}
	if r := del(create("a")); !r.Trashed || st.Bus.Timeout() != 5*time.Second {
		t.Fatalf("trash_days 30: %+v, hook timeout %v", r, st.Bus.Timeout())
	}
	write("sessions:\n  trash_days: 0\nplugins:\n  hook_callback_timeout: 7\n")
	if r := del(create("b")); r.Trashed || st.Bus.Timeout() != 7*time.Second || st.Sessions.TrashDays() != 0 {
		t.Fatalf("trash_days 0: %+v, hook timeout %v", r, st.Bus.Timeout())
	}
	// The compaction block too: the next compaction's thresholds.
	write("sessions:\n  trash_days: 0\ncompaction:\n  threshold: 0.5\n  soft_threshold: 0.3\n  rotate: false\n")
	del(create("b2"))
	if c := st.Compaction.Config(); c.Threshold != 0.5 || c.SoftThreshold != 0.3 || c.Rotate {
		t.Fatalf("the compaction block after a change: %+v", c)
	}
	write("sessions: [trash_days\n")
	for _, title := range []string{"c", "d"} {
		if r := del(create(title)); r.Trashed {
			t.Fatalf("a broken config.yaml: %+v", r)
		}
	}
	if n := said.n.Load(); n != 1 {
		t.Fatalf("the broken file was said %d times", n)
	}
	// Idle archiving and retention, at the next maintenance run.
	idle := create("idle")
	now.Add((3 * 24 * time.Hour).Milliseconds())
	if rep, err := st.Maintenance.Run(ctx, true); err != nil || rep.ArchiveIdle != nil {
		t.Fatalf("maintenance without archive_idle_days: %+v %v", rep, err)
	}
	write("sessions:\n  trash_days: 0\n  archive_idle_days: 1\n  retention_days: 45\n")
	rep, err := st.Maintenance.Run(ctx, true)
	if err != nil || rep.ArchiveIdle == nil || strings.Join(rep.ArchiveIdle.AffectedIDs, ",") != idle {
		t.Fatalf("maintenance with archive_idle_days 1: %+v %v", rep.ArchiveIdle, err)
	}
	if r, err := st.Maintenance.Retention(ctx); err != nil || r.Days != 45 {
		t.Fatalf("retention shown: %+v %v", r, err)
	}
}

// compaction.summarizer is read at each summary too: model asks the model
// config.yaml names then (its key from the .env as it is), offline asks
// nobody.
func TestTheSummarizerFollowsConfigYaml(t *testing.T) {
	ctx := context.Background()
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"A summary from the model."}}]}`))
	}))
	defer srv.Close()
	home, write := newHome(t)
	model := "model:\n  provider: custom\n  base_url: " + srv.URL + "/v1\n  default: m\n  api_key_env: ATRIUM_T_SUM_KEY\n"
	write(model + "compaction:\n  summarizer: offline\n  rotate: false\n")
	st, err := stack.Open(ctx, home, stack.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	summarize := func() compaction.Result {
		t.Helper()
		s, err := st.Sessions.Create(ctx, sessions.CreateParams{Title: "long"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 12 {
			role := []string{"user", "assistant"}[i%2]
			if _, err := st.Sessions.AppendMessage(ctx, s.ID, sessions.NewMessage{Role: role, Content: strings.Repeat("words ", 40)}); err != nil {
				t.Fatal(err)
			}
		}
		res, err := st.Compaction.Compact(ctx, compaction.Request{SessionID: s.ID, Kind: compaction.KindSummarize, Reason: compaction.ReasonManual})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if r := summarize(); !r.Changed || asked.Load() != 0 {
		t.Fatalf("offline: %+v, the model asked %d times", r, asked.Load())
	}
	write(model + "compaction:\n  summarizer: model\n  rotate: false\n")
	if r := summarize(); r.Changed || !strings.Contains(r.Detail, "$ATRIUM_T_SUM_KEY is not set") || asked.Load() != 0 {
		t.Fatalf("model without its key: %+v, asked %d times", r, asked.Load())
	}
	if err := os.WriteFile(home.EnvPath(), []byte("ATRIUM_T_SUM_KEY=sk-sum\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := summarize(); !r.Changed || asked.Load() != 1 {
		t.Fatalf("model with its key: %+v, asked %d times", r, asked.Load())
	}
}
