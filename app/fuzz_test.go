package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"atrium/app"
	"atrium/backend/config"
	"atrium/backend/plugins"
	"atrium/backend/stack"
)

// FuzzAPIBodies: whatever body a client posts to a write route, the answer
// is a JSON error or a result, never a 500 or a panic.
func FuzzAPIBodies(f *testing.F) {
	home, err := config.ResolveHome(f.TempDir(), "default")
	if err != nil {
		f.Fatal(err)
	}
	st, err := stack.Open(context.Background(), home, stack.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = st.Close(context.Background()) })
	loop, err := st.Loop(stack.ModelFlags{})
	if err != nil {
		f.Fatal(err)
	}
	a := app.New(context.Background(), st, loop, plugins.NewManager(plugins.DiscoverOptions{Home: home, Version: "dev"}),
		app.Options{Platform: app.PlatformDashboard, Version: "test"})
	h := app.NewHandler(a, token, app.Serving{})
	routes := []struct{ method, path string }{
		{"POST", "/api/sessions/preview"},
		{"POST", "/api/sessions/delete"},
		{"POST", "/api/sessions/archive"},
		{"POST", "/api/sessions/unarchive"},
		{"POST", "/api/sessions/nope/send"},
		{"PUT", "/api/settings"},
		{"POST", "/api/plugins/reload"},
	}
	f.Add(uint8(0), []byte(`{"ids":["a","b"]}`))
	f.Add(uint8(1), []byte(`{"request_id":"r-1","ids":["x"]}`))
	f.Add(uint8(2), []byte(`{"request_id":"../x","ids":[]}`))
	f.Add(uint8(3), []byte(`{"request_id":"r","ids":["`+string(bytes.Repeat([]byte("x"), 300))+`"]}`))
	f.Add(uint8(4), []byte(`{"text":"/help"}`))
	f.Add(uint8(5), []byte(`{"theme":"dark"}`))
	f.Add(uint8(1), []byte(`{"request_id":"r-2","ids":["x"]}{"more":1}`))
	f.Add(uint8(0), []byte(`[`))
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		r := routes[int(route)%len(routes)]
		req := httptest.NewRequest(r.method, r.path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusInternalServerError {
			t.Fatalf("%s %s %q: 500 %s", r.method, r.path, body, rec.Body.String())
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s: not JSON: %q", r.method, r.path, rec.Body.String())
		}
	})
}
