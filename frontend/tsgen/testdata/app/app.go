// Package app is a fixture for tsgen's tests.
package app

import (
	"encoding/json"
	"net/http"
	"time"

	"atrium/ext"
)

// Kind is a named string.
type Kind string

// BaseDTO is embedded.
type BaseDTO struct {
	Version int `json:"version"`
}

// ThingDTO is one thing.
type ThingDTO struct {
	BaseDTO
	ID      string           `json:"id"`
	When    time.Time        `json:"when"`
	EndedAt *time.Time       `json:"ended_at,omitempty"`
	Parent  *ThingDTO        `json:"parent"`
	Tags    []string         `json:"tags"`
	Counts  map[string]int64 `json:"counts"`
	Payload json.RawMessage  `json:"payload"`
	Plain   bool
	Odd     int    `json:"odd-key"`
	Kind    Kind   `json:"kind"`
	Size    int64  `json:"size"` // the size in bytes
	Hidden  string `json:"-"`
	secret  string
}

// PutRequest is a body.
type PutRequest struct {
	RequestID string   `json:"request_id"`
	IDs       []string `json:"ids"`
}

// Names of events.
const (
	EventThing  = "thing"  // ThingDTO
	EventThings = "things" // []ThingDTO: a batch
	EventOther  = "other"  // free text, no type
	// EventLater (ThingDTO): a doc comment naming its type
	EventLater = "later"
)

type base struct{}

// Service is bound.
type Service struct {
	base
	n int
}

// Get reads one.
func (s *Service) Get(id string) (ThingDTO, error) { return ThingDTO{}, nil }

// Put writes.
func (s *Service) Put(requestID string, ids []string) error { return nil }

// Ping does nothing.
func (s *Service) Ping() {}

func (s *Service) helper() {}

// App binds.
type App struct {
	Service *Service
}

// Bindings are bound.
func (a *App) Bindings() []any { return []any{a.Service} }

type handler struct {
	mux *http.ServeMux
	a   *App
}

func (h *handler) route(pattern string, fn func(r *http.Request) (any, error)) {}

func (h *handler) bulk(pattern string) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		var in PutRequest
		_ = decode(w, r, &in)
	})
}

func decode(w http.ResponseWriter, r *http.Request, v any) error { return nil }
func queryInt(r *http.Request, name string) (int64, error)       { return 0, nil }
func queryBool(r *http.Request, name string) (bool, error)       { return false, nil }

func filter(r *http.Request) string {
	_, _ = queryBool(r, "archived")
	q := r.URL.Query()
	_ = q.Get("cursor")
	return r.URL.Query().Get("q")
}

func (h *handler) routes() {
	h.route("GET /api/things", func(r *http.Request) (any, error) {
		_, _ = queryInt(r, "limit")
		return filter(r), nil
	})
	h.route("GET /api/things/{id}", func(r *http.Request) (any, error) { return h.a.Service.Get(r.PathValue("id")) })
	h.mux.HandleFunc("POST /api/things/{id}/put", func(w http.ResponseWriter, r *http.Request) {
		var in PutRequest
		_ = decode(w, r, &in)
	})
	h.bulk("POST /api/bulk")
	withBody(h, "POST /api/with", func(_ *http.Request, in PutRequest) (any, error) { return nil, nil })
	for _, op := range []string{ext.OpA, ext.OpB} {
		withBody(h, "POST /api/op/"+op, func(_ *http.Request, in PutRequest) (any, error) { return nil, nil })
	}
	h.route("GET /api/ext", func(r *http.Request) (any, error) {
		q := r.URL.Query()
		return q.Get(ext.FieldQ), nil
	})
}

func withBody[T any](h *handler, pattern string, fn func(r *http.Request, in T) (any, error)) {}
