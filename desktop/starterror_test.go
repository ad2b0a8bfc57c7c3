package desktop

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"atrium/backend/config"
)

// The page of a profile that could not be opened says why in the error's
// own words (escaped), offers to open config.yaml only when the error is
// the file's, and hands each button to the window; nothing else is served.
func TestTheStartErrorPage(t *testing.T) {
	home := config.Home{Dir: filepath.Join(t.TempDir(), "home"), Profile: "default"}
	var acted []string
	serve := func(p startPage, method, path string) *httptest.ResponseRecorder {
		p.act = func(name string) { acted = append(acted, name) }
		w := httptest.NewRecorder()
		p.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		return w
	}
	broken := startPage{home: home, err: errors.New("config " + home.ConfigPath() + ":2:15: sequence end token ']' not found <script>")}
	w := serve(broken, http.MethodGet, "/")
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(body, "sequence end token &#39;]&#39; not found &lt;script&gt;") ||
		!strings.Contains(body, `data-act="config"`) || !strings.Contains(body, "does not load") || !strings.Contains(body, home.Dir) {
		t.Fatalf("the page of a broken config.yaml (%d):\n%s", w.Code, body)
	}
	other := startPage{home: home, err: errors.New("open the store: disk I/O error")}
	if body := serve(other, http.MethodGet, "/index.html").Body.String(); strings.Contains(body, `data-act="config"`) || !strings.Contains(body, "disk I/O error") {
		t.Fatalf("the page of another error:\n%s", body)
	}
	for _, a := range []string{"retry", "config", "folder", "quit"} {
		if w := serve(broken, http.MethodPost, "/act/"+a); w.Code != http.StatusNoContent {
			t.Fatalf("POST /act/%s: %d", a, w.Code)
		}
	}
	for _, bad := range []struct{ method, path string }{{http.MethodPost, "/act/rm"}, {http.MethodGet, "/act/retry"}, {http.MethodGet, "/../config.yaml"}, {http.MethodPost, "/"}} {
		if w := serve(broken, bad.method, bad.path); w.Code != http.StatusNotFound {
			t.Fatalf("%s %s: %d", bad.method, bad.path, w.Code)
		}
	}
	if strings.Join(acted, ",") != "retry,config,folder,quit" {
		t.Fatalf("acted: %v", acted)
	}
}
