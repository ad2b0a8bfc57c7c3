package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/shellhooks"
	"atrium/backend/webhooks"
)

func outbound(t *testing.T, src string) any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(src), &m); err != nil {
		t.Fatal(err)
	}
	return m["outbound"]
}

func TestParse(t *testing.T) {
	env := map[string]string{"HOOK_SECRET": "s3cret"}
	targets, warns := webhooks.Parse(outbound(t, `
outbound:
  - url: https://ci.example.invalid/atrium
    name: ci
    events: [on_session_delete, post_compaction, pre_tool_call, no_such_hook, on_session_delete]
    secret_env: HOOK_SECRET
    timeout: 90
    deadline_hours: 2
  - url: http://plain.example.invalid/
    events: [post_tool_call]
    matcher: "write_.*"
    secret_env: UNSET_SECRET
  - url: ftp://x
    events: [on_session_end]
  - url: https://only-inline.example.invalid/
    events: [pre_llm_call]
  - url: https://ci.example.invalid/other
    name: ci
    events: [on_session_end]
  - "a string"
`), func(k string) string { return env[k] })
	if len(targets) != 2 {
		t.Fatalf("targets %+v", targets)
	}
	ci, plain := targets[0], targets[1]
	if ci.Subscriber() != "webhook:ci" || strings.Join(ci.Events, ",") != "on_session_delete,post_compaction" || !ci.Signed ||
		ci.Timeout != 60*time.Second || ci.Deadline != 2*time.Hour {
		t.Fatalf("ci: %+v", ci)
	}
	if plain.Subscriber() != "webhook:http://plain.example.invalid/" || plain.Signed || plain.Matcher != "write_.*" ||
		plain.Timeout != 10*time.Second || plain.Deadline != 24*time.Hour {
		t.Fatalf("plain: %+v", plain)
	}
	joined := strings.Join(warns, "\n")
	for _, w := range []string{
		`hooks.outbound[0]: pre_tool_call is called in line and not kept in the event log`,
		`hooks.outbound[0]: unknown event "no_such_hook" ignored`,
		`hooks.outbound[1].url uses plain http://`,
		`hooks.outbound[1].secret_env UNSET_SECRET is not set: deliveries to http://plain.example.invalid/ go UNSIGNED`,
		`hooks.outbound[2].url must be http(s), got "ftp://x": skipped`,
		`hooks.outbound[3] has no event Atrium can post: skipped`,
		`hooks.outbound[4]: a second target named ci: skipped`,
		`hooks.outbound[5] must be a mapping`,
	} {
		if !strings.Contains(joined, w) {
			t.Errorf("no warning %q in:\n%s", w, joined)
		}
	}
}

// receiver is a loopback webhook receiver answering with the statuses it
// is given in turn (then 200).
type receiver struct {
	mu       sync.Mutex
	statuses []int
	got      []*http.Request
	bodies   [][]byte
	srv      *httptest.Server
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	rc := &receiver{statuses: statuses}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got, rc.bodies = append(rc.got, r), append(rc.bodies, b)
		code := 200
		if len(rc.statuses) > 0 {
			code, rc.statuses = rc.statuses[0], rc.statuses[1:]
		}
		rc.mu.Unlock()
		if code == 302 {
			w.Header().Set("Location", "https://elsewhere.example.invalid/")
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

type world struct {
	d   *db.DB
	bus *hooks.Bus
	dir string
}

func newWorld(t *testing.T, src string) (world, *webhooks.Registry) {
	t.Helper()
	return openWorld(t, t.TempDir(), src)
}

// openWorld is newWorld on the store in dir (a process started again).
func openWorld(t *testing.T, dir, src string) (world, *webhooks.Registry) {
	t.Helper()
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(dir, "state.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	bus := hooks.NewBus(d, hooks.Options{Timeout: 10 * time.Second})
	targets, warns := webhooks.Parse(outbound(t, src), func(string) string { return "s3cret" })
	if len(warns) != 0 && !strings.Contains(strings.Join(warns, ""), "plain http") {
		t.Fatalf("warnings: %v", warns)
	}
	reg := webhooks.NewRegistry(webhooks.Options{Bus: bus, Env: shellhooks.Env{Dir: dir, Profile: "default"}})
	if _, err := reg.Apply(targets); err != nil {
		t.Fatal(err)
	}
	if err := bus.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bus.Close(context.Background()) })
	return world{d, bus, dir}, reg
}

func (w world) enqueue(t *testing.T, hook string, payload any) hooks.Event {
	t.Helper()
	var ev hooks.Event
	if err := w.d.InTx(context.Background(), func(tx *db.Tx) error {
		var err error
		ev, err = w.bus.EnqueueTx(context.Background(), tx, hook, payload)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return ev
}

func (w world) deliveries(t *testing.T, seq int64) []hooks.Delivery {
	t.Helper()
	evs, err := hooks.ListEvents(context.Background(), w.d, hooks.LogFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Seq == seq {
			return e.Deliveries
		}
	}
	return nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A receiver that answers 500 twice: the event waits in the log, is
// posted again with backoff and the same delivery_id, signed each time,
// each attempt on record, and nobody waits for it meanwhile; a later event
// comes after it, in order.
func TestRetriedUntilTakenInOrder(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, 500, 503)
	w, _ := newWorld(t, "outbound:\n  - {url: "+rc.srv.URL+"/hook, events: [on_session_delete], secret_env: S}\n")
	ev := w.enqueue(t, hooks.OnSessionDelete, hooks.SessionDelete{SessionID: "a", Reason: "delete", DeletedIDs: []string{"a", "b"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := w.bus.WaitDelivered(ctx, ev.Seq); err != nil {
		t.Fatalf("a command waited for a webhook receiver: %v", err)
	}
	waitFor(t, "the first attempt on record", func() bool {
		d := w.deliveries(t, ev.Seq)
		return len(d) == 1 && d[0].Status == "retrying" && strings.HasPrefix(d[0].Error, "attempt 1: HTTP 500; next at ")
	})
	ev2 := w.enqueue(t, hooks.OnSessionDelete, hooks.SessionDelete{SessionID: "c", Reason: "archive", DeletedIDs: []string{"c"}})
	waitFor(t, "both delivered", func() bool {
		d := w.deliveries(t, ev2.Seq)
		return len(d) == 1 && d[0].Status == "ok"
	})
	if d := w.deliveries(t, ev.Seq); len(d) != 1 || d[0].Status != "ok" || d[0].Attempts != 3 {
		t.Fatalf("first event: %+v", d)
	}
	if d := w.deliveries(t, ev2.Seq); d[0].Attempts != 0 {
		t.Fatalf("taken at once: %+v", d)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) != 4 {
		t.Fatalf("%d posts, want 4 (3 attempts, then the next event)", len(rc.got))
	}
	for i, r := range rc.got {
		wantID, attempt := ev.ID, i+1
		if i == 3 {
			wantID, attempt = ev2.ID, 1
		}
		var body struct {
			Event      string         `json:"hook_event_name"`
			SessionID  string         `json:"session_id"`
			Profile    string         `json:"profile"`
			Extra      map[string]any `json:"extra"`
			DeliveryID string         `json:"delivery_id"`
			Timestamp  string         `json:"timestamp"`
		}
		if err := json.Unmarshal(rc.bodies[i], &body); err != nil {
			t.Fatal(err)
		}
		if r.Method != "POST" || r.URL.Path != "/hook" || r.Header.Get("X-Hermes-Delivery") != wantID || body.DeliveryID != wantID ||
			r.Header.Get("X-Hermes-Event") != "on_session_delete" || r.Header.Get("X-Atrium-Attempt") != itoa(attempt) ||
			r.Header.Get("Content-Type") != "application/json" || body.Event != "on_session_delete" || body.Profile != "default" ||
			!strings.HasSuffix(body.Timestamp, "Z") {
			t.Fatalf("post %d: %s %s %v\n%s", i, r.Method, r.URL, r.Header, rc.bodies[i])
		}
		if sig := webhooks.Sign("s3cret", rc.bodies[i]); r.Header.Get("X-Hermes-Signature-256") != sig || r.Header.Get("X-Atrium-Signature-256") != sig {
			t.Fatalf("post %d: signature %q, want %q", i, r.Header.Get("X-Hermes-Signature-256"), sig)
		}
		if i == 0 && (body.SessionID != "a" || body.Extra["reason"] != "delete" || len(body.Extra["deleted_ids"].([]any)) != 2) {
			t.Fatalf("body: %s", rc.bodies[0])
		}
	}
	// Backoff: the second retry came at least two seconds after the first.
	if gap := rcGap(rc.bodies[1], rc.bodies[2]); gap < 1900*time.Millisecond {
		t.Fatalf("retries %s apart, want the backoff's 2 s", gap)
	}
}

// A process that stops while a receiver is down leaves its attempts on
// record: the next one goes on from them, the attempt's number counting on
// (X-Atrium-Attempt) and its backoff kept (not posted again at once), and
// the final outcome says how many attempts it took.
func TestAttemptsGoOnAfterARestart(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, 500, 500, 200)
	dir := t.TempDir()
	src := "outbound:\n  - {url: " + rc.srv.URL + "/hook, events: [on_session_delete], secret_env: S}\n"
	w, _ := openWorld(t, dir, src)
	ev := w.enqueue(t, hooks.OnSessionDelete, hooks.SessionDelete{SessionID: "a", Reason: "delete", DeletedIDs: []string{"a"}})
	waitFor(t, "the second attempt on record", func() bool {
		d := w.deliveries(t, ev.Seq)
		return len(d) == 1 && d[0].Status == "retrying" && d[0].Attempts == 2 && strings.HasPrefix(d[0].Error, "attempt 2: HTTP 500; next at ")
	})
	if err := w.bus.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = w.d.Close()
	stopped := time.Now()
	w2, _ := openWorld(t, dir, src)
	waitFor(t, "taken", func() bool {
		d := w2.deliveries(t, ev.Seq)
		return len(d) == 1 && d[0].Status == "ok"
	})
	if d := w2.deliveries(t, ev.Seq); d[0].Attempts != 3 {
		t.Fatalf("the outcome: %+v", d[0])
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.got) != 3 || rc.got[2].Header.Get("X-Atrium-Attempt") != "3" || rc.got[2].Header.Get("X-Hermes-Delivery") != ev.ID {
		t.Fatalf("%d posts; the last: %v", len(rc.got), rc.got[len(rc.got)-1].Header)
	}
	// The second attempt's backoff (2 s) held across the restart.
	if gap := rcGap(rc.bodies[1], rc.bodies[2]); gap < 1900*time.Millisecond {
		t.Fatalf("the third attempt came %s after the second (%s after the restart), want the backoff's 2 s", gap, time.Since(stopped))
	}
}

func rcGap(a, b []byte) time.Duration {
	var x, y struct {
		Timestamp string `json:"timestamp"`
	}
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	ta, _ := time.Parse(time.RFC3339Nano, x.Timestamp)
	tb, _ := time.Parse(time.RFC3339Nano, y.Timestamp)
	return tb.Sub(ta)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// A receiver that refuses the request (4xx) or redirects is not retried;
// one down past the target's deadline is given up; a matcher leaves other
// tools out. Each ends "failed" (or nothing posted) and the next event
// goes out.
func TestRefusedRedirectedAndGivenUp(t *testing.T) {
	t.Parallel()
	refuse, redirect, down := newReceiver(t, 400), newReceiver(t, 302), newReceiver(t, 500, 500, 500, 500, 500)
	w, _ := newWorld(t, `outbound:
  - {name: refuse, url: `+refuse.srv.URL+`, events: [on_session_end]}
  - {name: redirect, url: `+redirect.srv.URL+`, events: [on_session_end]}
  - {name: down, url: `+down.srv.URL+`, events: [on_session_end, post_tool_call], deadline_hours: 0.0002, matcher: "write_.*"}
`)
	w.enqueue(t, hooks.PostToolCall, hooks.ToolResultPayload{ToolName: "read_file", SessionID: "s"})
	ev := w.enqueue(t, hooks.OnSessionEnd, hooks.SessionEnd{SessionID: "s"})
	waitFor(t, "three outcomes", func() bool {
		n := 0
		for _, d := range w.deliveries(t, ev.Seq) {
			if d.Status == "failed" {
				n++
			}
		}
		return n == 3
	})
	byName := map[string]string{}
	for _, d := range w.deliveries(t, ev.Seq) {
		byName[d.Subscriber] = d.Error
	}
	if e := byName["webhook:refuse"]; !strings.Contains(e, "attempt 1: HTTP 400: not retried") {
		t.Errorf("refused: %q", e)
	}
	if e := byName["webhook:redirect"]; !strings.Contains(e, "HTTP 302: redirects are not followed (to https://elsewhere.example.invalid/)") {
		t.Errorf("redirected: %q", e)
	}
	if e := byName["webhook:down"]; !strings.Contains(e, "HTTP 500: given up") {
		t.Errorf("down: %q", e)
	}
	if refuse.count() != 1 || redirect.count() != 1 || down.count() != 2 {
		t.Fatalf("posts: refuse %d, redirect %d, down %d (read_file left out by the matcher)", refuse.count(), redirect.count(), down.count())
	}
}

// Plain http:// to this machine is no exposure: no warning.
func TestLoopbackHTTPIsQuiet(t *testing.T) {
	targets, warns := webhooks.Parse(outbound(t, `outbound:
  - {url: "http://localhost:8080/x", events: [on_session_end]}
  - {url: "http://127.0.0.1:9/y", events: [on_session_end]}
  - {url: "http://[::1]:9/z", events: [on_session_end]}
`), nil)
	if len(targets) != 3 || len(warns) != 0 {
		t.Fatalf("%d targets, warnings %v", len(targets), warns)
	}
}
