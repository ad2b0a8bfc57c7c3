package app_test

import (
	"net/http"
	"strings"
	"testing"

	"atrium/app"
	"atrium/backend/sessions"
)

// A page on another origin (another port of 127.0.0.1 gets the SameSite
// cookie) cannot change anything: writes whose Origin, Referer or
// Sec-Fetch-Site is not the server's own are refused, and so is any API
// write that is not application/json. Reads and the token rules stay.
func TestDashboardRefusesCrossSiteWrites(t *testing.T) {
	t.Parallel()
	e, c := newServer(t)
	s := e.mustCreate(t, sessions.CreateParams{Title: "target"})
	own := c.srv.URL
	body := `{"request_id":"x-1","ids":["` + s.ID + `"]}`
	scenarios := []struct {
		name    string
		method  string
		path    string
		ctype   string
		headers map[string]string
		status  int
	}{
		{"other port, text/plain, cookie", "POST", "/api/sessions/archive", "text/plain", map[string]string{"Origin": "http://127.0.0.1:1"}, 403},
		{"other port, JSON", "POST", "/api/sessions/archive", "application/json", map[string]string{"Origin": "http://127.0.0.1:1"}, 403},
		{"null origin", "POST", "/api/sessions/archive", "application/json", map[string]string{"Origin": "null"}, 403},
		{"referer of another origin", "POST", "/api/sessions/archive", "application/json", map[string]string{"Referer": "http://localhost:9/page"}, 403},
		{"Sec-Fetch-Site same-site", "POST", "/api/sessions/archive", "application/json", map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"cross-site plugin enable", "POST", "/api/plugins/hook-audit/enable", "application/json", map[string]string{"Origin": "http://evil.example"}, 403},
		{"cross-site install", "POST", "/api/plugins/install", "application/json", map[string]string{"Origin": "http://127.0.0.1:2"}, 403},
		{"cross-site settings", "PUT", "/api/settings", "application/json", map[string]string{"Origin": "http://127.0.0.1:2"}, 403},
		{"cross-site remove", "DELETE", "/api/plugins/hook-audit", "application/json", map[string]string{"Origin": "http://127.0.0.1:2"}, 403},
		{"a route added later (by method)", "PATCH", "/api/anything-new", "application/json", map[string]string{"Origin": "http://127.0.0.1:2"}, 403},
		{"same origin, text/plain", "POST", "/api/sessions/archive", "text/plain", map[string]string{"Origin": own}, 415},
		{"same origin, form", "POST", "/api/sessions/archive", "application/x-www-form-urlencoded", map[string]string{"Origin": own}, 415},
		{"no content type", "POST", "/api/sessions/archive", "", nil, 415},
	}
	for _, sc := range scenarios {
		req, _ := http.NewRequest(sc.method, own+sc.path, strings.NewReader(body))
		req.AddCookie(&http.Cookie{Name: app.TokenCookie, Value: token})
		if sc.ctype != "" {
			req.Header.Set("Content-Type", sc.ctype)
		}
		for k, v := range sc.headers {
			req.Header.Set(k, v)
		}
		res, err := c.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != sc.status {
			t.Errorf("%s: status %d, want %d", sc.name, res.StatusCode, sc.status)
		}
	}
	if got, _ := e.app.Sessions.Get(s.ID); got.Archived {
		t.Fatal("a refused request archived the session")
	}

	// Without the token it is still 401, first.
	req, _ := http.NewRequest("POST", own+"/api/sessions/archive", strings.NewReader(body))
	req.Header.Set("Origin", "http://127.0.0.1:1")
	if res, err := c.srv.Client().Do(req); err != nil || res.StatusCode != 401 {
		t.Fatalf("no token: %v %v", res.StatusCode, err)
	}
	// Reads from anywhere stay as they are (the token still decides).
	req, _ = http.NewRequest("GET", own+"/api/sessions", nil)
	req.Header.Set("Origin", "http://127.0.0.1:1")
	req.Header.Set("Authorization", "Bearer "+token)
	if res, err := c.srv.Client().Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("cross-origin read: %v %v", res.StatusCode, err)
	}
	// The dashboard's own page (same Origin, JSON) and a script with the
	// token (no Origin) both write.
	for i, h := range []map[string]string{{"Origin": own, "Sec-Fetch-Site": "same-origin"}, {"Authorization": "Bearer " + token}} {
		req, _ := http.NewRequest("POST", own+"/api/sessions/archive", strings.NewReader(`{"request_id":"ok-`+string(rune('a'+i))+`","ids":["`+s.ID+`"]}`))
		req.AddCookie(&http.Cookie{Name: app.TokenCookie, Value: token})
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		res, err := c.srv.Client().Do(req)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("own write %d: %v %v", i, res.StatusCode, err)
		}
	}
	if got, _ := e.app.Sessions.Get(s.ID); !got.Archived {
		t.Fatal("the dashboard's own archive did not archive")
	}
}
