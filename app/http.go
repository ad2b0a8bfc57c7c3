package app

import (
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"

	"atrium/backend/apperr"
)

// TokenCookie carries the access token of `atrium serve` in a browser.
const TokenCookie = "atrium_token"

// CodeUnauthorized is the error code of a request without a valid token.
const CodeUnauthorized = "unauthorized"

const maxBody = 1 << 20

//go:embed shell.html
var missingUI []byte

// handler serves the page shell at / and the JSON API under /api/.
type handler struct {
	a      *App
	token  string
	mux    *http.ServeMux
	assets fs.FS
	files  http.Handler // the frontend's assets; nil without them
	index  []byte
}

// Serving are the optional parts of the dashboard's handler.
type Serving struct {
	Assets fs.FS // the built frontend (index.html at its root); nil or empty: a notice page
	Hub    *Hub  // live events on GET /api/stream; nil: no stream
}

// NewHandler serves a's services as a JSON API under /api/ and the frontend
// at /. Every /api/ request needs token (header "Authorization: Bearer
// TOKEN" or the atrium_token cookie), checked before any routing. GET
// /?token=TOKEN sets the cookie and redirects to /.
func NewHandler(a *App, token string, o Serving) http.Handler {
	if token == "" {
		panic("app.NewHandler: empty token") // wiring bug
	}
	h := &handler{a: a, token: token, mux: http.NewServeMux(), assets: o.Assets, index: missingUI}
	if o.Assets != nil {
		if b, err := fs.ReadFile(o.Assets, "index.html"); err == nil {
			h.index = b
		} else {
			h.assets = nil
		}
	}
	h.mux.HandleFunc("GET /{$}", h.shell)
	if h.assets != nil {
		h.files = http.FileServerFS(h.assets)
	}
	if o.Hub != nil {
		h.mux.HandleFunc("GET /api/stream", o.Hub.serve)
	}
	h.routes()
	h.mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		h.write(w, nil, apperr.New(apperr.NotFound, "no API route %s %s", r.Method, r.URL.Path))
	})
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isAPI(r.URL.Path) && !h.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, ErrorDTO{Code: CodeUnauthorized, Message: "missing or wrong access token: open the link atrium serve printed"})
		return
	}
	if refuseCrossSite(w, r) {
		return
	}
	if !isAPI(r.URL.Path) && r.URL.Path != "/" && h.files != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.files.ServeHTTP(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// isAPI is true for every path under /api, cleaned or not.
func isAPI(p string) bool {
	clean := path.Clean("/" + p)
	return clean == "/api" || strings.HasPrefix(clean, "/api/") || strings.HasPrefix(p, "/api")
}

func (h *handler) authorized(r *http.Request) bool {
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && h.match(auth) {
		return true
	}
	c, err := r.Cookie(TokenCookie)
	return err == nil && h.match(c.Value)
}

func (h *handler) match(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(h.token)) == 1
}

func (h *handler) shell(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'")
	if t := r.URL.Query().Get("token"); t != "" && h.match(t) {
		http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: h.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(h.index)
}

// route registers a JSON endpoint: fn's value is written with 200, its
// error as {code, message} with the code's status.
func (h *handler) route(pattern string, fn func(r *http.Request) (any, error)) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		v, err := fn(r)
		h.write(w, v, err)
	})
}

func (h *handler) write(w http.ResponseWriter, v any, err error) {
	if err != nil {
		writeJSON(w, status(apperr.CodeOf(err)), FormatError(h.a.log, err))
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func status(c apperr.Code) int {
	switch c {
	case apperr.Invalid:
		return http.StatusBadRequest
	case apperr.NotFound:
		return http.StatusNotFound
	case apperr.Conflict:
		return http.StatusConflict
	case apperr.Rejected:
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body into v; unknown fields are refused.
func decode(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var big *http.MaxBytesError
		if errors.As(err, &big) {
			return apperr.New(apperr.Invalid, "request body is over the %d KiB limit", maxBody>>10)
		}
		return invalid(err, "request body")
	}
	if dec.More() {
		return apperr.New(apperr.Invalid, "request body holds more than one JSON value")
	}
	return nil
}

// queryInt reads an optional integer query parameter.
func queryInt(r *http.Request, name string) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, apperr.New(apperr.Invalid, "query parameter %s=%q is not an integer", name, s)
	}
	return n, nil
}

// queryOptBool reads an optional boolean query parameter; absent is nil.
func queryOptBool(r *http.Request, name string) (*bool, error) {
	if r.URL.Query().Get(name) == "" {
		return nil, nil
	}
	b, err := queryBool(r, name)
	return &b, err
}

// queryBool reads an optional boolean query parameter.
func queryBool(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, apperr.New(apperr.Invalid, "query parameter %s=%q is not true or false", name, s)
	}
	return b, nil
}
