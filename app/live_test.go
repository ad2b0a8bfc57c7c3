package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"atrium/app"
	"atrium/backend/apperr"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
)

// recorder is an Emitter that keeps what it was given.
type recorder struct {
	mu  sync.Mutex
	got []emitted
}

type emitted struct {
	name string
	data any
}

func (r *recorder) Emit(name string, data any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, emitted{name, data})
}

func (r *recorder) named(name string) []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []any
	for _, e := range r.got {
		if e.name == name {
			out = append(out, e.data)
		}
	}
	return out
}

func TestCountIDsAndFacetsFollowTheFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustFixture(t)
	e.mustCreate(t, sessions.CreateParams{ID: "gw", Source: "gateway"})
	s := e.app.Sessions
	n, err := s.Count(app.ListFilter{})
	if err != nil || n.Count != 5 {
		t.Fatalf("count = %+v, %v", n, err)
	}
	if n, _ := s.Count(app.ListFilter{Source: "gateway"}); n.Count != 1 {
		t.Fatalf("count gateway = %+v", n)
	}
	ids, err := s.IDs(app.ListFilter{})
	page, _ := s.List(app.ListFilter{Limit: 100})
	var listed []string
	for _, r := range page.Sessions {
		listed = append(listed, r.ID)
	}
	if err != nil || !reflect.DeepEqual(ids, listed) {
		t.Fatalf("ids = %v, %v; list order %v", ids, err, listed)
	}
	if _, err := s.Archive("a", []string{"other"}); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.IDs(app.ListFilter{Archived: true}); !reflect.DeepEqual(ids, []string{"other"}) {
		t.Fatalf("archived ids = %v", ids)
	}
	if _, err := s.IDs(app.ListFilter{Source: "nowhere"}); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("bad source: %v", err)
	}
	f, err := s.Facets()
	if err != nil || !reflect.DeepEqual(f, app.FacetsDTO{Sources: []string{"cli", "gateway"}, Profiles: []string{"default"}, Platforms: []string{}}) {
		t.Fatalf("facets = %+v, %v", f, err)
	}
	if hits, err := s.Search("unrelated", 10, true); err != nil || len(hits) != 1 || hits[0].Session.ID != "other" {
		t.Fatalf("archived search = %+v, %v", hits, err)
	}
	if hits, _ := s.Search("unrelated", 10, false); len(hits) != 0 {
		t.Fatalf("active search found an archived session: %+v", hits)
	}
}

func TestCompactionsComeFromTheEventLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustCreate(t, sessions.CreateParams{ID: "talk"})
	for i := 0; i < 6; i++ {
		e.mustAppend(t, "talk", []string{"user", "assistant"}[i%2], strings.Repeat("words about herons ", 40))
	}
	if none, err := e.app.Sessions.Compactions("talk"); err != nil || len(none) != 0 {
		t.Fatalf("before = %+v, %v", none, err)
	}
	turn, err := e.app.Sessions.Send("talk", "/compress")
	if err != nil || turn.Command != "compress" {
		t.Fatalf("/compress = %+v, %v", turn, err)
	}
	if err := e.st.Bus.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := e.app.Sessions.Compactions(turn.SessionID)
	if err != nil || len(got) != 1 {
		t.Fatalf("compactions = %+v, %v", got, err)
	}
	c := got[0]
	if c.Kind != "summarize" || c.Reason != "manual" || c.BeforeTokens == nil || c.AfterTokens == nil || *c.AfterTokens >= *c.BeforeTokens || c.EventID == "" {
		t.Fatalf("compaction = %+v", c)
	}
	if _, err := e.app.Sessions.Compactions("missing"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("missing: %v", err)
	}
}

func TestBulkDeleteReportsProgressAndLiveActivityIsPushed(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	e := newEnvWith(t, app.Options{Platform: app.PlatformDesktop, Emitter: rec})
	e.mustFixture(t)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); e.app.Run(runCtx) }()
	defer func() { stop(); <-done }()
	time.Sleep(50 * time.Millisecond) // let Run note the newest seq

	if _, err := e.app.Sessions.Delete("req-p", []string{"tip"}); err != nil {
		t.Fatal(err)
	}
	prog := rec.named(app.EventProgress)
	if len(prog) < 2 {
		t.Fatalf("progress events = %+v", prog)
	}
	first, last := prog[0].(app.ProgressDTO), prog[len(prog)-1].(app.ProgressDTO)
	if first != (app.ProgressDTO{RequestID: "req-p", Op: "delete", Done: 0, Total: 1}) ||
		last != (app.ProgressDTO{RequestID: "req-p", Op: "delete", Done: 3, Total: 3}) {
		t.Fatalf("progress first %+v last %+v", first, last)
	}
	var ev app.EventDTO
	deadline := time.Now().Add(5 * time.Second)
	for ev.Hook == "" && time.Now().Before(deadline) {
		for _, b := range rec.named(app.EventActivity) {
			for _, x := range b.([]app.EventDTO) {
				if x.Hook == hooks.OnSessionDelete {
					ev = x
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	var payload struct {
		DeletedIDs []string `json:"deleted_ids"`
	}
	if err := json.Unmarshal(ev.Payload, &payload); err != nil || len(payload.DeletedIDs) != 3 {
		t.Fatalf("pushed on_session_delete = %+v (%v)", ev, err)
	}
	e.app.OpenSession("other")
	if got := rec.named(app.EventOpenSession); len(got) != 1 || got[0].(app.OpenSessionDTO).ID != "other" {
		t.Fatalf("open-session = %+v", got)
	}
}

func TestPluginFolderAndDialogsDependOnTheSurface(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.app.Plugins.Browse(true); apperr.CodeOf(err) != apperr.Rejected {
		t.Fatalf("browse without a window: %v", err)
	}
	if _, err := e.app.Plugins.Open("no-such"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("open unknown: %v", err)
	}
	info := e.app.Settings.Info()
	if info.Platform != app.PlatformDashboard || info.Profile != "default" || info.Version != "test" || info.Home != e.st.Home.Dir {
		t.Fatalf("info = %+v", info)
	}
}

func TestStreamPushesEventsOverLoopback(t *testing.T) {
	t.Parallel()
	e, c := newServer(t)
	e.mustFixture(t)
	req, _ := http.NewRequest("GET", c.srv.URL+"/api/stream", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := c.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream = %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	<-lines // retry:
	go func() {
		// Archive through the API: its progress reaches this stream.
		c.do("POST", "/api/sessions/archive", token, app.BulkRequest{RequestID: "s-1", IDs: []string{"other"}}, nil)
	}()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("stream closed")
			}
			if l == "event: progress" {
				data := <-lines
				var p app.ProgressDTO
				if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &p); err != nil || p.RequestID != "s-1" || p.Op != "archive" {
					t.Fatalf("progress frame %q: %v", data, err)
				}
				return
			}
		case <-timeout:
			t.Fatal("no progress event on the stream")
		}
	}
}

func TestFrontendAssetsAreServedWithoutTokenButAPIIsNot(t *testing.T) {
	t.Parallel()
	assets := fstest.MapFS{
		"index.html":    {Data: []byte("<!doctype html><title>Atrium UI</title>")},
		"assets/app.js": {Data: []byte("console.log('atrium')")},
	}
	_, c := newServerWith(t, assets)
	get := func(path string) (int, string, string) {
		res, err := c.srv.Client().Get(c.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Content-Type"), string(b)
	}
	if code, _, body := get("/"); code != 200 || !strings.Contains(body, "Atrium UI") {
		t.Fatalf("/ = %d %q", code, body)
	}
	if code, typ, body := get("/assets/app.js"); code != 200 || !strings.Contains(typ, "javascript") || !strings.Contains(body, "atrium") {
		t.Fatalf("asset = %d %s %q", code, typ, body)
	}
	if code, _, _ := get("/assets/missing.js"); code != 404 {
		t.Fatalf("missing asset = %d", code)
	}
	if code, _, _ := get("/api/sessions"); code != 401 {
		t.Fatalf("api without token = %d", code)
	}
}
