package app_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf16"

	"atrium/app"
	"atrium/backend/sessions"
)

const token = "test-token-0123456789"

type client struct {
	t   *testing.T
	srv *httptest.Server
}

func newServer(t *testing.T) (env, client) {
	t.Helper()
	return newServerWith(t, nil)
}

// newServerWith serves the UI assets too, and wires the app's live events
// to the SSE hub.
func newServerWith(t *testing.T, assets fs.FS) (env, client) {
	t.Helper()
	hub := app.NewHub()
	e := newEnvWith(t, app.Options{Platform: app.PlatformDashboard, Version: "test", Emitter: hub})
	srv := httptest.NewServer(app.NewHandler(e.app, token, app.Serving{Assets: assets, Hub: hub}))
	t.Cleanup(srv.Close)
	return e, client{t: t, srv: srv}
}

// do sends a request with the bearer token (auth "" sends none) and decodes
// the JSON answer into out when out is not nil.
func (c client) do(method, path, auth string, body any, out any) int {
	c.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, c.srv.URL+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json") // every API write is JSON (origin.go)
	}
	res, err := c.srv.Client().Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	if out != nil {
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			c.t.Fatalf("%s %s: decode: %v", method, path, err)
		}
	}
	return res.StatusCode
}

func TestAPIRefusesEveryPathWithoutTheToken(t *testing.T) {
	t.Parallel()
	_, c := newServer(t)
	routes := []struct{ method, path string }{
		{"GET", "/api/sessions"},
		{"GET", "/api/sessions/search?q=x"},
		{"GET", "/api/sessions/root"},
		{"GET", "/api/sessions/root/transcript"},
		{"POST", "/api/sessions/preview"},
		{"POST", "/api/sessions/delete"},
		{"POST", "/api/sessions/archive"},
		{"POST", "/api/sessions/root/send"},
		{"GET", "/api/plugins"},
		{"POST", "/api/plugins/x/enable"},
		{"DELETE", "/api/plugins/x"},
		{"GET", "/api/events"},
		{"PUT", "/api/settings"},
		{"GET", "/api/no/such/route"},
		{"POST", "/api/"},
		{"GET", "/api"},
		{"GET", "/x/../api/sessions"},
	}
	for _, r := range routes {
		for _, auth := range []string{"", "wrong-token"} {
			var body app.ErrorDTO
			if code := c.do(r.method, r.path, auth, nil, &body); code != http.StatusUnauthorized || body.Code != app.CodeUnauthorized {
				t.Errorf("%s %s (token %q) = %d %+v, want 401 unauthorized", r.method, r.path, auth, code, body)
			}
		}
	}
	if code := c.do("GET", "/api/sessions", token, nil, nil); code != http.StatusOK {
		t.Fatalf("with token = %d", code)
	}
	if code := c.do("GET", "/api/no/such/route", token, nil, nil); code != http.StatusNotFound {
		t.Fatalf("unknown route with token = %d", code)
	}
}

func TestShellLoadsWithoutTokenAndTokenLinkSetsCookie(t *testing.T) {
	t.Parallel()
	_, c := newServer(t)
	res, err := http.Get(c.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET / = %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err = noFollow.Get(c.srv.URL + "/?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("token link = %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == app.TokenCookie {
			cookie = ck
		}
	}
	if cookie == nil || cookie.Value != token || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie = %+v", cookie)
	}

	req, _ := http.NewRequest("GET", c.srv.URL+"/api/sessions", nil)
	req.AddCookie(&http.Cookie{Name: app.TokenCookie, Value: token})
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("with cookie = %d", res.StatusCode)
	}

	res, err = noFollow.Get(c.srv.URL + "/?token=wrong")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || len(res.Cookies()) != 0 {
		t.Fatalf("wrong token link = %d, cookies %v", res.StatusCode, res.Cookies())
	}
}

func TestAPISessionsFlow(t *testing.T) {
	t.Parallel()
	e, c := newServer(t)
	e.mustFixture(t)

	var page app.PageDTO
	if code := c.do("GET", "/api/sessions?limit=10&archived=false", token, nil, &page); code != 200 || len(page.Sessions) != 4 {
		t.Fatalf("list = %d %+v", code, page)
	}
	var hits []app.HitDTO
	if code := c.do("GET", "/api/sessions/search?q=kestrel", token, nil, &hits); code != 200 || len(hits) != 1 || hits[0].Session.ID != "root" {
		t.Fatalf("search = %d %+v", code, hits)
	}
	var sess app.SessionDTO
	if code := c.do("GET", "/api/sessions/tip", token, nil, &sess); code != 200 || sess.ID != "tip" {
		t.Fatalf("get = %d %+v", code, sess)
	}
	var msgs []app.MessageDTO
	if code := c.do("GET", "/api/sessions/tip/transcript", token, nil, &msgs); code != 200 || len(msgs) != 3 || msgs[0].Marker != app.MarkerSummary {
		t.Fatalf("transcript = %d %+v", code, msgs)
	}
	var pre app.PreviewDTO
	if code := c.do("POST", "/api/sessions/preview", token, app.PreviewRequest{IDs: []string{"root"}}, &pre); code != 200 || pre.Count != 3 || pre.Cascaded != 2 {
		t.Fatalf("preview = %d %+v", code, pre)
	}

	del := app.BulkRequest{RequestID: "ui-req-1", IDs: []string{"root"}}
	var first, again app.ReceiptDTO
	if code := c.do("POST", "/api/sessions/delete", token, del, &first); code != 200 || first.Replayed || len(first.AffectedIDs) != 3 {
		t.Fatalf("delete = %d %+v", code, first)
	}
	if code := c.do("POST", "/api/sessions/delete", token, del, &again); code != 200 || !again.Replayed {
		t.Fatalf("retry = %d %+v", code, again)
	}
	if n := e.deleteEvents(t); n != 1 {
		t.Fatalf("on_session_delete events = %d, want 1", n)
	}
	var errBody app.ErrorDTO
	if code := c.do("POST", "/api/sessions/delete", token, app.BulkRequest{RequestID: "ui-req-1", IDs: []string{"other"}}, &errBody); code != http.StatusConflict || errBody.Code != "conflict" {
		t.Fatalf("conflicting reuse = %d %+v", code, errBody)
	}

	var ar app.ReceiptDTO
	if code := c.do("POST", "/api/sessions/archive", token, app.BulkRequest{RequestID: "ui-a", IDs: []string{"other"}}, &ar); code != 200 || !ar.Changed {
		t.Fatalf("archive = %d %+v", code, ar)
	}
	c.do("GET", "/api/sessions?archived=true", token, nil, &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID != "other" {
		t.Fatalf("archived list = %+v", page)
	}
	if code := c.do("POST", "/api/sessions/unarchive", token, app.BulkRequest{RequestID: "ui-u", IDs: []string{"other"}}, &ar); code != 200 || !ar.Changed {
		t.Fatalf("unarchive = %d %+v", code, ar)
	}
	c.do("GET", "/api/sessions?archived=true", token, nil, &page)
	if len(page.Sessions) != 0 {
		t.Fatalf("still archived = %+v", page)
	}

	var evs []app.EventDTO
	if code := c.do("GET", "/api/events?after=0", token, nil, &evs); code != 200 || len(evs) == 0 {
		t.Fatalf("events = %d %+v", code, evs)
	}

	scenarios := []struct {
		name, method, path string
		body               any
		status             int
		code               string
	}{
		{"unknown id", "GET", "/api/sessions/nope", nil, 404, "not_found"},
		{"unknown transcript", "GET", "/api/sessions/nope/transcript", nil, 404, "not_found"},
		{"hostile id", "GET", "/api/sessions/a%3Bdrop", nil, 400, "invalid"},
		{"hostile dotted id", "GET", "/api/sessions/a..b", nil, 400, "invalid"},
		{"hostile delete id", "POST", "/api/sessions/delete", app.BulkRequest{RequestID: "r-9", IDs: []string{"../../etc"}}, 400, "invalid"},
		{"bad request id", "POST", "/api/sessions/archive", app.BulkRequest{RequestID: "", IDs: []string{"other"}}, 400, "invalid"},
		{"unknown field", "POST", "/api/sessions/preview", map[string]any{"idz": []string{"x"}}, 400, "invalid"},
		{"bad limit", "GET", "/api/sessions?limit=lots", nil, 400, "invalid"},
		{"send a turn", "POST", "/api/sessions/other/send", app.SendRequest{Text: "hi"}, 200, ""},
		{"unknown plugin", "POST", "/api/plugins/nope/enable", nil, 404, "not_found"},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			var body app.ErrorDTO
			code := c.do(sc.method, sc.path, token, sc.body, &body)
			if code != sc.status || body.Code != sc.code {
				t.Fatalf("%s %s = %d %+v, want %d %s", sc.method, sc.path, code, body, sc.status, sc.code)
			}
		})
	}
	if _, _, err := e.st.Sessions.End(ctx, "other", "user"); err != nil {
		t.Fatal(err)
	}
	var rej app.ErrorDTO
	if code := c.do("POST", "/api/sessions/other/send", token, app.SendRequest{Text: "hi"}, &rej); code != http.StatusUnprocessableEntity || rej.Code != "rejected" {
		t.Fatalf("send to ended session = %d %+v", code, rej)
	}
}

func TestTrashOverHTTP(t *testing.T) {
	t.Parallel()
	e, c := newServer(t)
	e.mustFixture(t)
	var rc app.ReceiptDTO
	if code := c.do("POST", "/api/sessions/delete", token, app.BulkRequest{RequestID: "d-1", IDs: []string{"tip"}}, &rc); code != 200 ||
		!rc.Trashed || rc.PurgeAfter == nil || rc.EventID == "" || len(rc.AffectedIDs) != 3 {
		t.Fatalf("delete = %d %+v", code, rc)
	}
	var trash app.TrashDTO
	if code := c.do("GET", "/api/trash", token, nil, &trash); code != 200 || trash.Sessions != 3 || trash.TrashDays != 30 || trash.NextPurgeAt == nil {
		t.Fatalf("trash = %d %+v", code, trash)
	}
	var page app.PageDTO
	if code := c.do("GET", "/api/sessions?scope=trash", token, nil, &page); code != 200 || len(page.Sessions) != 3 || page.Sessions[0].Where != "trash" {
		t.Fatalf("trash list = %d %+v", code, page)
	}
	var hits []app.HitDTO
	if code := c.do("GET", "/api/sessions/search?q=kestrel&scope=trash", token, nil, &hits); code != 200 || len(hits) != 1 || hits[0].Session.Where != "trash" {
		t.Fatalf("search in the trash = %d %+v", code, hits)
	}
	if code := c.do("GET", "/api/sessions/search?q=kestrel&scope=attic", token, nil, nil); code != 400 {
		t.Fatalf("bad scope = %d", code)
	}
	if code := c.do("POST", "/api/sessions/restore", token, app.BulkRequest{RequestID: "r-1", IDs: []string{"child"}}, &rc); code != 200 ||
		rc.Op != "restore" || len(rc.AffectedIDs) != 3 {
		t.Fatalf("restore = %d %+v", code, rc)
	}
	if code := c.do("POST", "/api/sessions/purge", token, app.BulkRequest{RequestID: "p-1", IDs: []string{"other"}}, &rc); code != 200 || rc.Trashed {
		t.Fatalf("purge = %d %+v", code, rc)
	}
	c.do("POST", "/api/sessions/delete", token, app.BulkRequest{RequestID: "d-2", IDs: []string{"root"}}, &rc)
	if code := c.do("POST", "/api/trash/empty", token, app.EmptyTrashRequest{RequestID: "e-1", OlderThan: "1d"}, &rc); code != 200 || rc.Changed {
		t.Fatalf("empty older than a day = %d %+v", code, rc)
	}
	if code := c.do("POST", "/api/trash/empty", token, app.EmptyTrashRequest{RequestID: "e-2"}, &rc); code != 200 || len(rc.AffectedIDs) != 3 {
		t.Fatalf("empty = %d %+v", code, rc)
	}
	if code := c.do("POST", "/api/trash/empty", token, app.EmptyTrashRequest{RequestID: "e-3", OlderThan: "often"}, nil); code != 400 {
		t.Fatalf("bad older_than = %d", code)
	}
	// delete d-1, restore r-1 (one restore), purge p-1, delete d-2: three deletes, one restore.
	if n := e.deleteEvents(t); n != 3 {
		t.Fatalf("on_session_delete events = %d, want 3", n)
	}
}

func TestBulkByRulePreviewAndUndoOverHTTP(t *testing.T) {
	t.Parallel()
	e, c := newServer(t)
	e.mustFixture(t)
	for i := 0; i < 3; i++ {
		e.mustCreate(t, sessions.CreateParams{Title: "cron job", Source: "cron"})
	}
	f := &app.FilterDTO{Source: "cron", Messages: "<3"}
	var pre app.PreviewDTO
	if code := c.do("POST", "/api/sessions/preview", token, app.PreviewRequest{Op: "delete", Filter: f}, &pre); code != 200 || pre.Matched != 3 || pre.Count != 3 {
		t.Fatalf("preview = %d %+v", code, pre)
	}
	if code := c.do("POST", "/api/sessions/preview", token, app.PreviewRequest{IDs: []string{"tip"}}, &pre); code != 200 || pre.Count != 3 || pre.Cascaded != 2 || pre.Matched != 1 {
		t.Fatalf("preview of ids = %d %+v", code, pre)
	}
	var rc app.ReceiptDTO
	if code := c.do("POST", "/api/sessions/delete", token, app.BulkRequest{RequestID: "rule-1", Filter: f}, &rc); code != 200 ||
		rc.Matched != 3 || !rc.Undoable || !rc.Trashed {
		t.Fatalf("delete by rule = %d %+v", code, rc)
	}
	var n app.CountDTO
	c.do("GET", "/api/sessions/count?source=cron", token, nil, &n)
	if n.Count != 0 {
		t.Fatalf("cron sessions left = %d", n.Count)
	}
	var reqs []app.ReceiptDTO
	if code := c.do("GET", "/api/requests", token, nil, &reqs); code != 200 || len(reqs) != 1 || !reqs[0].Undoable {
		t.Fatalf("requests = %d %+v", code, reqs)
	}
	if code := c.do("POST", "/api/requests/rule-1/undo", token, nil, &rc); code != 200 || rc.ResultOp != "restore" || len(rc.AffectedIDs) != 3 {
		t.Fatalf("undo = %d %+v", code, rc)
	}
	c.do("GET", "/api/sessions/count?source=cron", token, nil, &n)
	if n.Count != 3 {
		t.Fatalf("cron sessions after undo = %d", n.Count)
	}
	var bad app.ErrorDTO
	if code := c.do("GET", "/api/sessions?messages=lots", token, nil, &bad); code != 400 || !strings.Contains(bad.Message, "messages") {
		t.Fatalf("bad filter = %d %+v", code, bad)
	}
	if code := c.do("GET", "/api/sessions?sorce=cron", token, nil, &bad); code != 400 || !strings.Contains(bad.Message, "sorce") {
		t.Fatalf("unknown parameter = %d %+v", code, bad)
	}
	if code := c.do("POST", "/api/sessions/delete", token, app.BulkRequest{RequestID: "rule-2", Filter: &app.FilterDTO{}}, &bad); code != 400 {
		t.Fatalf("empty rule = %d %+v", code, bad)
	}
	if code := c.do("POST", "/api/requests/nope/undo", token, nil, &bad); code != 404 {
		t.Fatalf("undo unknown = %d %+v", code, bad)
	}
}

func TestConversationsOverHTTP(t *testing.T) {
	t.Parallel()
	e, c := newServer(t)
	e.mustFixture(t) // root -> tip (compression), child (delegate of tip), other
	e.mustAppend(t, "root", "user", "Le café où l'on parle de pélicans")
	var page app.ConversationPageDTO
	if code := c.do("GET", "/api/conversations", token, nil, &page); code != 200 || len(page.Rows) != 2 {
		t.Fatalf("conversations = %d %+v", code, page)
	}
	var chainRow app.ConversationDTO
	for _, r := range page.Rows {
		if r.Session.ID == "tip" {
			chainRow = r
		}
	}
	if chainRow.Parts != 2 || chainRow.Subagents != 1 || chainRow.TotalMessages != 4 || strings.Join(chainRow.ChainIDs, ",") != "root,tip" {
		t.Fatalf("chain row = %+v", chainRow)
	}
	if code := c.do("GET", "/api/conversations?subagents=true", token, nil, &page); code != 200 || len(page.Rows) != 3 {
		t.Fatalf("with subagents = %d %d rows", code, len(page.Rows))
	}
	var n app.CountDTO
	if c.do("GET", "/api/conversations/count?match=pelican", token, nil, &n); n.Count != 1 {
		t.Fatalf("count matching = %+v", n)
	}
	var subs []app.ConversationDTO
	if code := c.do("GET", "/api/sessions/root/subagents", token, nil, &subs); code != 200 || len(subs) != 1 || subs[0].Session.ID != "child" {
		t.Fatalf("subagents = %d %+v", code, subs)
	}
	var ch app.ChainDTO
	if code := c.do("GET", "/api/sessions/root/conversation?highlight=pelicans", token, nil, &ch); code != 200 || ch.ID != "tip" ||
		len(ch.Parts) != 2 || ch.Items[1].Kind != "divider" || ch.Items[1].Divider.Text != "Part 2 of 2" {
		t.Fatalf("conversation = %d %+v", code, ch)
	}
	var marked []string
	for _, it := range ch.Items {
		if it.Kind == "message" {
			u := utf16.Encode([]rune(it.Message.Content))
			for _, h := range it.Highlights {
				marked = append(marked, string(utf16.Decode(u[h.Start:h.End])))
			}
		}
	}
	if strings.Join(marked, "|") != "pélicans|pelicans|pelicans" {
		t.Fatalf("highlighted = %q", marked)
	}
	var hits []app.HitDTO
	if code := c.do("GET", "/api/sessions/search?q=caf%C3%A9&scope=all", token, nil, &hits); code != 200 || len(hits) != 1 ||
		hits[0].ConversationID != "tip" || hits[0].Where != "active" || len(hits[0].SnippetHighlights) != 1 {
		t.Fatalf("search = %d %+v", code, hits)
	}
	var s app.SessionDTO
	if code := c.do("POST", "/api/sessions", token, app.CreateRequest{Title: "Fresh start"}, &s); code != 200 || s.Source != "dashboard" || s.Title != "Fresh start" {
		t.Fatalf("create = %d %+v", code, s)
	}
	if code := c.do("POST", "/api/sessions/"+s.ID+"/rename", token, app.RenameRequest{Title: "Renamed"}, &s); code != 200 || s.Title != "Renamed" {
		t.Fatalf("rename = %d %+v", code, s)
	}
	if code := c.do("POST", "/api/sessions/"+s.ID+"/pin", token, app.PinRequest{Pinned: true}, &s); code != 200 || !s.Pinned {
		t.Fatalf("pin = %d %+v", code, s)
	}
	var ex app.ExportDTO
	if code := c.do("GET", "/api/sessions/tip/export?format=markdown", token, nil, &ex); code != 200 || !strings.Contains(ex.Content, "## Part 2 of 2") {
		t.Fatalf("export = %d %+v", code, ex)
	}
	if code := c.do("GET", "/api/sessions/tip/export?format=docx", token, nil, nil); code != 400 {
		t.Fatalf("bad export format = %d", code)
	}
	if code := c.do("POST", "/api/sessions/"+s.ID+"/rename", token, app.RenameRequest{Title: "a\nb"}, nil); code != 400 {
		t.Fatalf("bad title = %d", code)
	}
}

func TestStorageOverHTTP(t *testing.T) {
	t.Parallel()
	e, c := newServer(t)
	e.mustFixture(t)
	var st app.StorageDTO
	if code := c.do("GET", "/api/storage", token, nil, &st); code != 200 || st.Sessions != 4 || st.Messages != 3 || len(st.ByAge) != 6 ||
		st.DBBytes == 0 || st.Retention.Days != 90 || st.Retention.AutoPrune || st.Retention.NeedsConfirmation {
		t.Fatalf("storage = %d %+v", code, st)
	}
	var v app.VacuumDTO
	if code := c.do("POST", "/api/storage/vacuum", token, nil, &v); code != 200 || v.Mode != "incremental_vacuum" || v.BeforeBytes == 0 { // a new store is auto_vacuum=INCREMENTAL
		t.Fatalf("vacuum = %d %+v", code, v)
	}
	if code := c.do("POST", "/api/storage/retention/confirm", token, nil, &st); code != 200 || st.Retention.ConfirmedAt == nil {
		t.Fatalf("confirm = %d %+v", code, st)
	}
}
