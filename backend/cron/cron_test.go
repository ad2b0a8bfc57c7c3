package cron_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/compaction"
	"atrium/backend/cron"
	"atrium/backend/db"
	"atrium/backend/gateway"
	"atrium/backend/hooks"
	"atrium/backend/hooks/hookstest"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/turns"
)

// fakeClock is the scheduler's clock and the store's: time moves only when
// the test advances it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) At(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, waiter{at: t, ch: ch})
	return ch
}

// Set moves the clock to t and fires every timer due by then.
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(t) {
			w.ch <- t
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

type memCalls struct {
	mu    sync.Mutex
	calls []hooks.MemoryCall
}

type env struct {
	clock *fakeClock
	db    *db.DB
	bus   *hooks.Bus
	sess  *sessions.Service
	rec   *hookstest.Recorder
	loop  *turns.Loop
	mem   *memCalls
}

func newEnv(t *testing.T, start time.Time) *env {
	t.Helper()
	ctx := context.Background()
	clock := &fakeClock{now: start}
	d, err := db.Open(ctx, filepath.Join(t.TempDir(), "state.db"), db.Options{Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	bus := hooks.NewBus(d, hooks.Options{Timeout: 5 * time.Second})
	rec := hookstest.Record(t, bus)
	mem := &memCalls{}
	// An in-process memory provider that records how it is called.
	if err := bus.Plugin("mem").RegisterCapability(hooks.CapMemoryProvider, "recall", nil, func(_ context.Context, method string, raw json.RawMessage) (json.RawMessage, error) {
		var c hooks.MemoryCall
		_ = json.Unmarshal(raw, &c)
		if method == "initialize" {
			mem.mu.Lock()
			mem.calls = append(mem.calls, c)
			mem.mu.Unlock()
		}
		return json.RawMessage(`{"available": true, "value": null}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := bus.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = bus.Close(ctx)
		_ = d.Close()
	})
	sess := sessions.NewService(d, bus, sessions.Options{Profile: "default", SessionsDir: t.TempDir()})
	c := compaction.DefaultConfig()
	// A one-turn job's own turn is protected by protect_turns (2 by
	// default): with 0, its oversized tool output is folded (post_tool).
	c.Threshold, c.SoftThreshold, c.ProtectTurns = 0.5, 0.9, 0
	eng := compaction.NewEngine(d, sess, bus, llm.OfflineSummarizer{}, c)
	if err := eng.RegisterCommands(bus.Commands()); err != nil {
		t.Fatal(err)
	}
	loop, err := turns.New(d, sess, eng, bus, turns.Options{Provider: llm.OfflineProvider{Window: 9000}, MemoryProvider: "recall"})
	if err != nil {
		t.Fatal(err)
	}
	return &env{clock: clock, db: d, bus: bus, sess: sess, rec: rec, loop: loop, mem: mem}
}

func (e *env) scheduler(t *testing.T) *cron.Service {
	t.Helper()
	store := gateway.NewStore(e.db)
	return cron.New(cron.Options{DB: e.db, Sessions: e.sess, Loop: e.loop, Outbox: store, Clock: e.clock,
		Poll: time.Hour, Home: func(ctx context.Context, platform string) (string, string, bool) {
			homes, _ := store.Homes(ctx)
			h, ok := homes[platform]
			return h.ChatID, h.ThreadID, ok
		}})
}

func (e *env) started(t *testing.T) *cron.Service {
	t.Helper()
	s := e.scheduler(t)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// idle waits until the schedulers sleep on the clock again (n timers).
func (e *env) idle(t *testing.T, n int) {
	t.Helper()
	waitFor(t, "the scheduler asleep", func() bool {
		e.clock.mu.Lock()
		defer e.clock.mu.Unlock()
		return len(e.clock.waiters) >= n
	})
}

func (e *env) job(t *testing.T, s *cron.Service, name string) cron.Job {
	t.Helper()
	j, err := s.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func (e *env) count(t *testing.T, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := e.db.Read.Raw(q, args...).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// Monday 1 June 2026, 06:00 UTC = 08:00 in Paris.
var monday = time.Date(2026, 6, 1, 6, 0, 0, 0, time.UTC)

func TestCronRunsAtItsTimeInItsZone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, monday)
	s := e.started(t)
	ctx := context.Background()
	j, err := s.Add(ctx, cron.AddParams{Name: "report", Schedule: "0 9 * * 1-5", Timezone: "Europe/Paris",
		Prompt: "use tool big_output: nightly", Deliver: "telegram:42"})
	if err != nil {
		t.Fatal(err)
	}
	nine := time.Date(2026, 6, 1, 7, 0, 0, 0, time.UTC) // 09:00 in Paris (CEST)
	if j.NextRun == nil || !j.NextRun.Equal(nine) || j.Timezone != "Europe/Paris" {
		t.Fatalf("job %+v", j)
	}
	e.idle(t, 1)
	e.clock.Set(nine.Add(-time.Second))
	e.idle(t, 1)
	if n := e.job(t, s, "report").Runs; n != 0 {
		t.Fatalf("ran before its time: %d", n)
	}
	e.clock.Set(nine)
	waitFor(t, "the run", func() bool { j := e.job(t, s, "report"); return j.Runs == 1 && j.LastStatus != "running" })
	j = e.job(t, s, "report")
	if j.LastStatus != "ok" || j.LastTick == nil || !j.LastTick.Equal(nine) || j.LastSessionID == "" {
		t.Fatalf("after the run: %+v", j)
	}
	first, err := e.sess.Get(ctx, j.LastSessionID)
	if err != nil || first.Source != "cron" || first.Title != "report" || first.Platform != "cron" {
		t.Fatalf("session %+v %v", first, err)
	}
	chain, _ := e.sess.Lineage(ctx, first.ID)
	tip := chain[len(chain)-1]
	if !tip.Ended() || tip.EndReason != "cron" {
		t.Fatalf("the run's session did not end: %+v", tip)
	}
	if err := e.bus.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	fins := e.rec.Events(hooks.OnSessionFinalize)
	posts := e.rec.Events(hooks.PostCompaction)
	if len(fins) != 1 || len(posts) == 0 {
		t.Fatalf("finalize %d, post_compaction %d", len(fins), len(posts))
	}
	var fin hooks.SessionFinalize
	var post hooks.PostCompactionPayload
	_ = fins[0].Decode(&fin)
	_ = posts[0].Decode(&post)
	if fin.SessionID != tip.ID || fin.Platform == nil || *fin.Platform != "cron" || fin.Reason != "cron" {
		t.Fatalf("finalize %+v", fin)
	}
	if post.Reason != compaction.ReasonPostTool || post.OldSessionID != first.ID || post.Platform == nil || *post.Platform != "cron" {
		t.Fatalf("post_compaction %+v", post)
	}
	ds, _ := gateway.NewStore(e.db).Deliveries(ctx, "", 10)
	if len(ds) != 1 || ds[0].Platform != "telegram" || ds[0].ChatID != "42" || ds[0].Origin != "cron:report" || ds[0].Text == "" {
		t.Fatalf("delivery %+v", ds)
	}
	e.mem.mu.Lock()
	defer e.mem.mu.Unlock()
	if len(e.mem.calls) == 0 || e.mem.calls[0].AgentContext != "cron" || e.mem.calls[0].Platform != "cron" {
		t.Fatalf("memory provider initialize: %+v", e.mem.calls)
	}
}

// Runs missed while no host ran are run once at the next start, and two
// hosts never run the same tick.
func TestMissedRunsRunOnceAndTwoHostsNeverShareATick(t *testing.T) {
	t.Parallel()
	e := newEnv(t, monday)
	ctx := context.Background()
	first := e.scheduler(t)
	if _, err := first.Add(ctx, cron.AddParams{Name: "digest", Schedule: "0 9 * * *", Timezone: "UTC", Prompt: "say hi"}); err != nil {
		t.Fatal(err)
	}
	// No host runs from Monday 06:00 to Thursday 12:00: Monday, Tuesday,
	// Wednesday and Thursday 09:00 were missed.
	e.clock.Set(time.Date(2026, 6, 4, 12, 0, 0, 0, time.UTC))
	a, b := e.started(t), e.started(t) // two hosts start at once
	waitFor(t, "the catch-up run", func() bool { j := e.job(t, a, "digest"); return j.Runs == 1 && j.LastStatus == "ok" })
	e.idle(t, 2)
	j := e.job(t, a, "digest")
	thursday9 := time.Date(2026, 6, 4, 9, 0, 0, 0, time.UTC)
	if j.Runs != 1 || !j.LastTick.Equal(thursday9) || !j.NextRun.Equal(thursday9.Add(24*time.Hour)) {
		t.Fatalf("after the catch-up: %+v", j)
	}
	// Friday 09:00: both hosts wake; one runs it.
	e.clock.Set(thursday9.Add(24 * time.Hour))
	waitFor(t, "Friday's run", func() bool { j := e.job(t, b, "digest"); return j.Runs == 2 && j.LastStatus == "ok" })
	e.idle(t, 2)
	if n := e.count(t, `SELECT COUNT(*) FROM sessions WHERE source = 'cron'`); n != 2 {
		t.Fatalf("cron sessions %d, want 2", n)
	}
	if err := e.bus.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(e.rec.Events(hooks.OnSessionFinalize)); n != 2 {
		t.Fatalf("finalize %d", n)
	}
}

func TestCronJobsAreManaged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, monday)
	s := e.scheduler(t)
	ctx := context.Background()
	bad := []cron.AddParams{
		{Name: "", Schedule: "0 9 * * *", Prompt: "x"},
		{Name: "a/b", Schedule: "0 9 * * *", Prompt: "x"},
		{Name: "x", Schedule: "61 9 * * *", Prompt: "x"},
		{Name: "x", Schedule: "0 9 * *", Prompt: "x"},
		{Name: "x", Schedule: "0 9 * * *", Timezone: "Mars/Olympus", Prompt: "x"},
		{Name: "x", Schedule: "0 9 * * *", Prompt: " "},
		{Name: "x", Schedule: "0 9 * * *", Prompt: "x", Deliver: "telegram 42"},
		{Name: "x", Schedule: "0 9 * * *", Prompt: "x", Deliver: "Telegram"},
	}
	for _, p := range bad {
		if _, err := s.Add(ctx, p); apperr.CodeOf(err) != apperr.Invalid {
			t.Fatalf("%+v: got %v, want invalid", p, err)
		}
	}
	j, err := s.Add(ctx, cron.AddParams{Name: "tz", Schedule: "CRON_TZ=Asia/Tokyo 30 4 * * *", Prompt: "x"})
	if err != nil || j.Timezone != "Asia/Tokyo" || j.Schedule != "30 4 * * *" {
		t.Fatalf("CRON_TZ prefix: %+v %v", j, err)
	}
	if _, err := s.Add(ctx, cron.AddParams{Name: "tz", Schedule: "@daily", Prompt: "x"}); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("duplicate: %v", err)
	}
	if j, err := s.SetPaused(ctx, "tz", true); err != nil || !j.Paused || j.NextRun != nil {
		t.Fatalf("pause %+v %v", j, err)
	}
	if _, err := s.SetPaused(ctx, "nope", true); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("pause unknown: %v", err)
	}
	res, err := s.Run(ctx, "tz") // a paused job runs when asked
	if err != nil || res.Reply == "" || res.SessionID == "" {
		t.Fatalf("run now: %+v %v", res, err)
	}
	if err := s.Remove(ctx, "tz"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "tz"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("remove twice: %v", err)
	}
}

// A job delivering to the bare platform name (the familiar --deliver
// telegram) posts to the platform's home channel, as a chat's /sethome
// set it; with none, its run says so (the answer was not delivered, and
// what sets one).
func TestCronDeliversToTheHomeChannel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, monday)
	s := e.scheduler(t)
	ctx := context.Background()
	if _, err := s.Add(ctx, cron.AddParams{Name: "digest", Schedule: "@daily", Prompt: "the digest", Deliver: "telegram"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(ctx, "digest")
	if err == nil || !strings.Contains(res.Error, "telegram has no home channel to deliver to: type /sethome") ||
		!strings.Contains(res.Error, "TELEGRAM_HOME_CHANNEL") {
		t.Fatalf("without a home channel: %+v %v", res, err)
	}
	if j := e.job(t, s, "digest"); j.LastStatus != "error" || !strings.Contains(j.LastError, "no home channel") {
		t.Fatalf("the job's record: %+v", j)
	}
	if err := gateway.NewStore(e.db).SetHome(ctx, "telegram", "-100200", "17", "Ada"); err != nil {
		t.Fatal(err)
	}
	res, err = s.Run(ctx, "digest")
	if err != nil || res.Delivered == 0 {
		t.Fatalf("with a home channel: %+v %v", res, err)
	}
	ds, _ := gateway.NewStore(e.db).Deliveries(ctx, "", 10)
	if len(ds) != 1 || ds[0].ChatID != "-100200" || ds[0].ThreadID != "17" || ds[0].Origin != "cron:digest" {
		t.Fatalf("delivery %+v", ds)
	}

	// Once the topic is a conversation, the answer is mirrored into its
	// session as the familiar scheduler mirrors it: the person's side,
	// named as the job's.
	topic, err := e.sess.Create(ctx, sessions.CreateParams{Title: "the topic", Source: "gateway", SenderID: "42"})
	if err != nil {
		t.Fatal(err)
	}
	if err := gateway.NewStore(e.db).SetRoute(ctx, "telegram:group:-100200:17:42", "telegram", topic.ID); err != nil {
		t.Fatal(err)
	}
	if res, err = s.Run(ctx, "digest"); err != nil || res.Delivered == 0 {
		t.Fatalf("into the topic: %+v %v", res, err)
	}
	ms, err := e.sess.Messages(ctx, topic.ID, true)
	if err != nil || len(ms) != 1 || ms[0].Role != "user" || ms[0].Content != "[Cron delivery: digest]\n"+ds[0].Text {
		t.Fatalf("the topic's conversation: %+v %v", ms, err)
	}
}

// answering is a model that answers every message with its text.
type answering struct {
	llm.OfflineProvider
	text string
}

func (a answering) Complete(context.Context, llm.Request) (llm.Response, error) {
	return llm.Response{Content: a.text}, nil
}

// A job's answer delivered to a chat sends the files its MEDIA: tags
// name after its text, as a gateway reply does; the profile's protected
// files are refused in the text.
func TestCronDeliversTheFilesAnAnswerNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t, monday)
	dir := t.TempDir()
	chart, secret := filepath.Join(dir, "chart.png"), filepath.Join(dir, ".env")
	for _, p := range []string{chart, secret} {
		if err := os.WriteFile(p, []byte("data"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	eng := compaction.NewEngine(e.db, e.sess, e.bus, llm.OfflineSummarizer{}, compaction.DefaultConfig())
	loop, err := turns.New(e.db, e.sess, eng, e.bus, turns.Options{Provider: answering{OfflineProvider: llm.OfflineProvider{Window: 9000},
		text: "Today's chart.\nMEDIA:" + chart + "\nMEDIA:" + secret}})
	if err != nil {
		t.Fatal(err)
	}
	s := cron.New(cron.Options{DB: e.db, Sessions: e.sess, Loop: loop, Outbox: gateway.NewStore(e.db), Clock: e.clock, Poll: time.Hour,
		Media: gateway.MediaPolicy{Denied: []string{secret}}})
	ctx := context.Background()
	if _, err := s.Add(ctx, cron.AddParams{Name: "chart", Schedule: "@daily", Prompt: "draw it", Deliver: "telegram:-100200"}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(ctx, "chart")
	if err != nil || res.Delivered == 0 {
		t.Fatalf("run: %+v %v", res, err)
	}
	ds, _ := gateway.NewStore(e.db).Deliveries(ctx, "", 10)
	if len(ds) != 2 {
		t.Fatalf("deliveries %+v, want the text and the file", ds)
	}
	text, file := ds[1], ds[0] // newest first
	if text.ID != res.Delivered || text.File != nil || text.Text != "Today's chart.\n\n⚠️ Could not send .env: it holds the profile's configuration or secrets" {
		t.Fatalf("text %+v (delivered %d)", text, res.Delivered)
	}
	if file.File == nil || file.File.Path != chart || file.File.Kind != gateway.KindImage || file.ChatID != "-100200" || file.Origin != "cron:chart" {
		t.Fatalf("file %+v %+v", file, file.File)
	}
}
