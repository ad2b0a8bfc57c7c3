package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Hub is the Emitter of `atrium serve`: it fans events out to every
// dashboard connected to GET /api/stream (Server-Sent Events). A client that
// cannot keep up is dropped; its page reconnects and reloads.
type Hub struct {
	mu      sync.Mutex
	clients map[chan frame]struct{}
}

type frame struct {
	name string
	data []byte
}

// clientBuffer is how many events a slow client may lag behind.
const clientBuffer = 256

// NewHub builds an empty hub.
func NewHub() *Hub { return &Hub{clients: map[chan frame]struct{}{}} }

// Emit sends one event to every client, never blocking.
func (h *Hub) Emit(name string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		select {
		case c <- frame{name: name, data: raw}:
		default: // too slow: drop it
			delete(h.clients, c)
			close(c)
		}
	}
}

// Clients is how many dashboards listen now.
func (h *Hub) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

func (h *Hub) add() chan frame {
	c := make(chan frame, clientBuffer)
	h.mu.Lock()
	h.clients[c] = struct{}{}
	h.mu.Unlock()
	return c
}

func (h *Hub) remove(c chan frame) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.clients[c]; ok {
		delete(h.clients, c)
		close(c)
	}
}

// keepAlive is how often an idle stream sends a comment line, so proxies
// and the browser keep it open.
const keepAlive = 15 * time.Second

// serve streams events to one client until it goes or the hub drops it.
func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	c := h.add()
	defer h.remove(c)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	fl.Flush()
	t := time.NewTicker(keepAlive)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case f, ok := <-c:
			if !ok {
				return
			}
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", f.name, f.data)
			fl.Flush()
		case <-t.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		}
	}
}
