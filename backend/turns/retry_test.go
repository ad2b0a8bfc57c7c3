package turns_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/compaction"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// reply is one scripted answer of a loopback model: an HTTP status (200:
// content as the assistant's text), with a Retry-After header when set.
type reply struct {
	status     int
	retryAfter string
	content    string
}

// scriptedModel is a loopback OpenAI-compatible server answering each
// request with the next reply of its script (the last one again once the
// script is spent), and the models its requests named.
type scriptedModel struct {
	srv    *httptest.Server
	mu     sync.Mutex
	script []reply
	cycle  bool // the script again from its start once spent
	models []string
}

func newScriptedModel(t testing.TB, script ...reply) *scriptedModel {
	t.Helper()
	m := &scriptedModel{script: script}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		m.mu.Lock()
		next := m.script[min(len(m.models), len(m.script)-1)]
		if m.cycle {
			next = m.script[len(m.models)%len(m.script)]
		}
		m.models = append(m.models, body.Model)
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if next.retryAfter != "" {
			w.Header().Set("Retry-After", next.retryAfter)
		}
		w.WriteHeader(next.status)
		if next.status != http.StatusOK {
			_, _ = fmt.Fprintf(w, `{"error":{"message":"failed with %d"}}`, next.status)
			return
		}
		_, _ = fmt.Fprintf(w, `{"choices":[{"message":{"role":"assistant","content":%q}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, next.content)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// asked is the models the requests so far named, in order.
func (m *scriptedModel) asked() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.models)
}

func (m *scriptedModel) model(t testing.TB, name string) turns.Model {
	t.Helper()
	p, err := llm.NewOpenAIProvider(llm.OpenAIConfig{BaseURL: m.srv.URL + "/v1", Model: name})
	if err != nil {
		t.Fatal(err)
	}
	return turns.Model{Provider: p, Name: name}
}

// apiWatch records the model-call hooks' payloads, by hook.
type apiWatch struct {
	mu   sync.Mutex
	seen map[string][]hooks.APIRequest
}

func (w *apiWatch) register(bus *hooks.Bus) {
	w.seen = map[string][]hooks.APIRequest{}
	for _, hook := range []string{hooks.PreAPIRequest, hooks.PostAPIRequest, hooks.APIRequestError} {
		if err := bus.Plugin("watch").RegisterSync(hook, func(_ context.Context, raw json.RawMessage) (any, error) {
			var p hooks.APIRequest
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			w.mu.Lock()
			w.seen[hook] = append(w.seen[hook], p)
			w.mu.Unlock()
			return nil, nil
		}); err != nil {
			panic(err)
		}
	}
}

// of is what hook's payloads said, each as fmt renders pick of it.
func (w *apiWatch) of(hook string, pick func(hooks.APIRequest) any) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, p := range w.seen[hook] {
		out = append(out, fmt.Sprint(pick(p)))
	}
	return strings.Join(out, " ")
}

// retryEnv is a loop asking primary, retrying up to retries times and
// turning to fallbacks, whose waits are recorded instead of waited (wait,
// when set, is asked too) and whose statuses are collected.
type retryEnv struct {
	env
	watch    *apiWatch
	mu       sync.Mutex
	waits    []time.Duration
	statuses []string
}

func newRetryEnv(t *testing.T, primary turns.Model, retries int, fallbacks []turns.Fallback, wait func(context.Context, time.Duration) error) *retryEnv {
	t.Helper()
	w := &apiWatch{}
	e := sessionstest.NewWith(t, hooks.Options{Timeout: 2 * time.Second}, w.register)
	c := compaction.DefaultConfig()
	c.Threshold, c.SoftThreshold = 100, 100
	eng := compaction.NewEngine(e.DB, e.Sessions, e.Bus, llm.OfflineSummarizer{}, c)
	r := &retryEnv{watch: w}
	opts := turns.Options{Resolve: func() (turns.Model, error) { return primary, nil },
		MaxRetries: func() int { return retries },
		Fallbacks:  func() []turns.Fallback { return fallbacks },
		Wait: func(ctx context.Context, d time.Duration) error {
			r.mu.Lock()
			r.waits = append(r.waits, d)
			r.mu.Unlock()
			if wait != nil {
				return wait(ctx, d)
			}
			return nil
		}}
	loop, err := turns.New(e.DB, e.Sessions, eng, e.Bus, opts)
	if err != nil {
		t.Fatal(err)
	}
	r.env = env{e, eng, loop}
	return r
}

func (r *retryEnv) sendCtx(ctx context.Context, id, text string) (turns.Turn, error) {
	ctx = turns.WithModelStatus(ctx, func(s turns.ModelStatus) {
		r.mu.Lock()
		r.statuses = append(r.statuses, s.Text())
		r.mu.Unlock()
	})
	return r.loop.Send(ctx, id, text, hooks.LocalContext("cli", id))
}

func (r *retryEnv) told() ([]time.Duration, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.waits), slices.Clone(r.statuses)
}

// A call the provider refused for a reason that may pass is tried again
// after the wait it asked for (Retry-After), else after the jittered
// backoff; each attempt is its own pre_api_request with its retry_count.
func TestModelCallRetried(t *testing.T) {
	t.Parallel()
	m := newScriptedModel(t, reply{status: 429, retryAfter: "7"}, reply{status: 503}, reply{status: 200, content: "at last"})
	r := newRetryEnv(t, m.model(t, "main-model"), 3, nil, nil)
	s := r.MustCreate(t, sessions.CreateParams{Title: "retried"})
	turn, err := r.sendCtx(ctx, s.ID, "hello")
	if err != nil || turn.Reply != "at last" || len(turn.Notes) != 0 {
		t.Fatalf("turn: %+v %v", turn, err)
	}
	waits, statuses := r.told()
	if len(waits) != 2 || waits[0] != 7*time.Second || waits[1] < 4*time.Second || waits[1] > 6*time.Second {
		t.Fatalf("waits: %v", waits)
	}
	if want := []string{"⏱️ Rate limited. Waiting 7.0s (attempt 1/3)...",
		fmt.Sprintf("⏱️ Provider overloaded. Waiting %.1fs (attempt 2/3)...", waits[1].Seconds())}; !slices.Equal(statuses, want) {
		t.Fatalf("statuses: %q", statuses)
	}
	if got := m.asked(); !slices.Equal(got, []string{"main-model", "main-model", "main-model"}) {
		t.Fatalf("requests: %q", got)
	}
	w := r.watch
	attempt := func(p hooks.APIRequest) any {
		return fmt.Sprintf("%d/%d#%d", p.RetryCount, p.MaxRetries, p.APICallCount)
	}
	if got := w.of(hooks.PreAPIRequest, attempt); got != "0/3#1 1/3#1 2/3#1" {
		t.Fatalf("pre_api_request: %s", got)
	}
	if got := w.of(hooks.APIRequestError, func(p hooks.APIRequest) any {
		return fmt.Sprintf("%s/%d/%v/%d", p.Reason, *p.StatusCode, *p.Retryable, p.RetryCount)
	}); got != "rate_limit/429/true/0 overloaded/503/true/1" {
		t.Fatalf("api_request_error: %s", got)
	}
	if got := w.of(hooks.PostAPIRequest, attempt); got != "2/3#1" {
		t.Fatalf("post_api_request: %s", got)
	}
}

// Retries spent, the turn fails saying how many were made; a failure no
// wait mends (a request the provider refused as malformed) is not retried
// nor handed to a fallback.
func TestModelCallRetriesSpentAndNotRetried(t *testing.T) {
	t.Parallel()
	busy := newScriptedModel(t, reply{status: 500})
	r := newRetryEnv(t, busy.model(t, "main-model"), 2, nil, nil)
	s := r.MustCreate(t, sessions.CreateParams{Title: "spent"})
	_, err := r.sendCtx(ctx, s.ID, "hello")
	if err == nil || !strings.HasSuffix(err.Error(), "HTTP 500: failed with 500 (after 2 retries)") {
		t.Fatalf("err: %v", err)
	}
	if waits, _ := r.told(); len(waits) != 2 || len(busy.asked()) != 3 {
		t.Fatalf("waits %v, %d requests", waits, len(busy.asked()))
	}
	if got := r.watch.of(hooks.APIRequestError, func(p hooks.APIRequest) any { return p.RetryCount }); got != "0 1 2" {
		t.Fatalf("api_request_error retry counts: %s", got)
	}

	bad := newScriptedModel(t, reply{status: 400})
	spare := newScriptedModel(t, reply{status: 200, content: "never asked"})
	r = newRetryEnv(t, bad.model(t, "main-model"), 3, []turns.Fallback{{Label: "spare via custom",
		Resolve: func() (turns.Model, error) { return spare.model(t, "spare"), nil }}}, nil)
	s = r.MustCreate(t, sessions.CreateParams{Title: "malformed"})
	if _, err := r.sendCtx(ctx, s.ID, "hello"); err == nil || strings.Contains(err.Error(), "after") {
		t.Fatalf("err: %v", err)
	}
	if waits, statuses := r.told(); len(waits) != 0 || len(statuses) != 0 || len(bad.asked()) != 1 || len(spare.asked()) != 0 {
		t.Fatalf("waits %v, statuses %q, %d and %d requests", waits, statuses, len(bad.asked()), len(spare.asked()))
	}
	if got := r.watch.of(hooks.APIRequestError, func(p hooks.APIRequest) any { return fmt.Sprintf("%s/%v", p.Reason, *p.Retryable) }); got != "format_error/false" {
		t.Fatalf("api_request_error: %s", got)
	}
}

// The fallback chain: a refused key turns to the next model at once, one
// that cannot be built is passed over, one whose retries are spent hands
// on to the next; the turn says so, and the next turn asks its own model
// again.
func TestFallbackChain(t *testing.T) {
	t.Parallel()
	primary := newScriptedModel(t, reply{status: 401}, reply{status: 200, content: "primary again"})
	failing := newScriptedModel(t, reply{status: 502})
	spare := newScriptedModel(t, reply{status: 200, content: "from the spare"})
	chain := []turns.Fallback{
		{Label: "nokey via openrouter", Resolve: func() (turns.Model, error) {
			return turns.Model{}, errors.New("the environment variable OPENROUTER_API_KEY is not set")
		}},
		{Label: "failing via custom", Resolve: func() (turns.Model, error) { return failing.model(t, "failing"), nil }},
		{Label: "spare via custom", Resolve: func() (turns.Model, error) { return spare.model(t, "spare"), nil }},
	}
	r := newRetryEnv(t, primary.model(t, "main-model"), 1, chain, nil)
	s := r.MustCreate(t, sessions.CreateParams{Title: "fallbacks"})
	turn, err := r.sendCtx(ctx, s.ID, "hello")
	if err != nil || turn.Reply != "from the spare" {
		t.Fatalf("turn: %+v %v", turn, err)
	}
	if want := []string{
		"main-model failed (its key was refused); fallback nokey via openrouter passed over: the environment variable OPENROUTER_API_KEY is not set; the turn went on with fallback failing via custom",
		"failing failed (server error, after 1 retry); the turn went on with fallback spare via custom",
	}; !slices.Equal(turn.Notes, want) {
		t.Fatalf("notes:\n%q\nwant\n%q", turn.Notes, want)
	}
	waits, statuses := r.told()
	if len(waits) != 1 {
		t.Fatalf("waits: %v", waits)
	}
	if want := []string{
		"⚠️ Fallback nokey via openrouter passed over: the environment variable OPENROUTER_API_KEY is not set",
		"🔄 main-model failed (its key was refused): switching to fallback failing via custom",
		fmt.Sprintf("⏳ Retrying in %.1fs (attempt 1/1)...", waits[0].Seconds()),
		"🔄 failing failed (server error): switching to fallback spare via custom",
	}; !slices.Equal(statuses, want) {
		t.Fatalf("statuses:\n%q\nwant\n%q", statuses, want)
	}
	if p, f, sp := primary.asked(), failing.asked(), spare.asked(); !slices.Equal(p, []string{"main-model"}) ||
		!slices.Equal(f, []string{"failing", "failing"}) || !slices.Equal(sp, []string{"spare"}) {
		t.Fatalf("requests: %q %q %q", p, f, sp)
	}
	if got := r.watch.of(hooks.PreAPIRequest, func(p hooks.APIRequest) any { return fmt.Sprintf("%s/%d", p.Model, p.RetryCount) }); got != "main-model/0 failing/0 failing/1 spare/0" {
		t.Fatalf("pre_api_request: %s", got)
	}
	if got := r.watch.of(hooks.PostAPIRequest, func(p hooks.APIRequest) any { return p.Model }); got != "spare" {
		t.Fatalf("post_api_request: %s", got)
	}
	if err := r.Bus.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var ends []hooks.PostLLMCallPayload
	for _, ev := range r.Rec.Events(hooks.PostLLMCall) {
		var p hooks.PostLLMCallPayload
		if err := ev.Decode(&p); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, p)
	}
	if len(ends) != 1 || ends[0].Model != "spare" || ends[0].AssistantResponse != "from the spare" {
		t.Fatalf("post_llm_call: %+v", ends)
	}

	// The next turn starts on its own model.
	turn, err = r.sendCtx(ctx, s.ID, "and now?")
	if err != nil || turn.Reply != "primary again" || len(turn.Notes) != 0 || len(primary.asked()) != 2 || len(spare.asked()) != 1 {
		t.Fatalf("next turn: %+v %v; %d, %d requests", turn, err, len(primary.asked()), len(spare.asked()))
	}
}

// Every model of the chain failing, the turn fails with the last one's
// error and names the ones before it.
func TestFallbackChainSpent(t *testing.T) {
	t.Parallel()
	primary := newScriptedModel(t, reply{status: 429, retryAfter: "0"})
	spare := newScriptedModel(t, reply{status: 404})
	r := newRetryEnv(t, primary.model(t, "main-model"), 1, []turns.Fallback{{Label: "spare via custom",
		Resolve: func() (turns.Model, error) { return spare.model(t, "spare"), nil }}}, nil)
	s := r.MustCreate(t, sessions.CreateParams{Title: "all down"})
	_, err := r.sendCtx(ctx, s.ID, "hello")
	if err == nil || !strings.Contains(err.Error(), "HTTP 404: failed with 404 (before it: main-model failed (rate limited, after 1 retry); the turn went on with fallback spare via custom)") {
		t.Fatalf("err: %v", err)
	}
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Fatalf("the provider's error is not in the chain: %#v", err)
	}
	if waits, _ := r.told(); !slices.Equal(waits, []time.Duration{0}) || len(primary.asked()) != 2 || len(spare.asked()) != 1 {
		t.Fatalf("waits %v; %d and %d requests", waits, len(primary.asked()), len(spare.asked()))
	}
}

// Stopping the turn while it waits to retry ends the wait and the turn
// at once; nothing more is asked of any model.
func TestStopWhileWaitingToRetry(t *testing.T) {
	t.Parallel()
	m := newScriptedModel(t, reply{status: 429, retryAfter: "600"})
	spare := newScriptedModel(t, reply{status: 200, content: "never asked"})
	stop, cancel := context.WithCancel(ctx)
	defer cancel()
	r := newRetryEnv(t, m.model(t, "main-model"), 3, []turns.Fallback{{Label: "spare via custom",
		Resolve: func() (turns.Model, error) { return spare.model(t, "spare"), nil }}},
		func(ctx context.Context, d time.Duration) error {
			cancel() // the person stops the turn while it waits
			<-ctx.Done()
			return ctx.Err()
		})
	s := r.MustCreate(t, sessions.CreateParams{Title: "stopped"})
	if _, err := r.sendCtx(stop, s.ID, "hello"); err == nil {
		t.Fatal("the stopped turn did not fail")
	}
	if waits, _ := r.told(); !slices.Equal(waits, []time.Duration{10 * time.Minute}) || len(m.asked()) != 1 || len(spare.asked()) != 0 {
		t.Fatalf("waits %v; %d and %d requests", waits, len(m.asked()), len(spare.asked()))
	}
}

// BenchmarkFallback is a turn of a fresh conversation (made off the clock)
// against loopback models: the main model answering at once; the main
// model refusing the key (401) and the fallback answering, the switch
// building the fallback's provider; the main model rate limited once
// (Retry-After: 0) and answering the retry:
//
//	go test -tags sqlite_fts5 -run '^$' -bench 'BenchmarkFallback' -benchtime=300x -count=5 ./backend/turns/
func BenchmarkFallback(b *testing.B) {
	e, newLoop := benchToolsEnv(b)
	spare := newScriptedModel(b, reply{status: 200, content: "from the spare"})
	chain := []turns.Fallback{{Label: "spare via custom", Resolve: func() (turns.Model, error) { return spare.model(b, "spare"), nil }}}
	loop := func(primary *scriptedModel) *turns.Loop {
		return newLoop(tools.Settings{}, func(o *turns.Options) {
			m := primary.model(b, "main-model")
			o.Provider, o.Model = m.Provider, m.Name
			o.MaxRetries = func() int { return 3 }
			o.Fallbacks = func() []turns.Fallback { return chain }
		})
	}
	direct := newScriptedModel(b, reply{status: 200, content: "at once"})
	refused := newScriptedModel(b, reply{status: 401})
	limited := newScriptedModel(b, reply{status: 429, retryAfter: "0"}, reply{status: 200, content: "on the retry"})
	limited.cycle = true
	run := func(l *turns.Loop, want string) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				id := benchSession(b, e)
				b.StartTimer()
				t, err := l.Send(ctx, id, "hello", hooks.LocalContext("cli", id))
				if err != nil || t.Reply != want {
					b.Fatalf("%+v %v", t, err)
				}
			}
		}
	}
	b.Run("main-answers", run(loop(direct), "at once"))
	b.Run("key-refused-fallback-answers", run(loop(refused), "from the spare"))
	b.Run("rate-limited-once-retried", run(loop(limited), "on the retry"))
}
