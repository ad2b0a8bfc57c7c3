package gatewaytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// slackSocket is the fake's Socket Mode (https://api.slack.com/apis/socket-mode):
// apps.connections.open, called with the app-level token, answers the URL
// of a WebSocket on the fake, which says hello, pushes what SocketPush
// queued as envelopes, pings every 50 ms as Slack does, and records the
// envelope ids the client acknowledges.
type slackSocket struct {
	appToken string
	pushes   chan []byte
	mu       sync.Mutex
	acked    []string
	conns    int
	opened   int // apps.connections.open calls
	refuse   string
}

// EnableSocketMode has the fake serve Socket Mode to appToken.
func (f *SlackAPI) EnableSocketMode(appToken string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sock = &slackSocket{appToken: appToken, pushes: make(chan []byte, 64)}
}

// RefuseSocket has apps.connections.open answer {"ok": false, "error": err}
// ("" accepts again).
func (f *SlackAPI) RefuseSocket(err string) {
	f.sock.mu.Lock()
	defer f.sock.mu.Unlock()
	f.sock.refuse = err
}

// SocketPush queues an envelope of type typ (events_api, interactive,
// slash_commands) carrying payload for the connection, and returns its
// envelope id.
func (f *SlackAPI) SocketPush(typ string, payload any) string {
	id := fmt.Sprintf("env-%06d", slackSeq.Add(1))
	raw, _ := json.Marshal(map[string]any{"envelope_id": id, "type": typ, "payload": payload, "accepts_response_payload": typ != "events_api",
		"retry_attempt": 0, "retry_reason": ""})
	f.sock.pushes <- raw
	return id
}

// SocketDisconnect asks the client to connect again, as Slack does before
// it moves a connection ("refresh_requested").
func (f *SlackAPI) SocketDisconnect() {
	f.sock.pushes <- []byte(`{"type":"disconnect","reason":"refresh_requested","debug_info":{"host":"fake"}}`)
}

// Acked are the envelope ids acknowledged so far, in order.
func (f *SlackAPI) Acked() []string {
	return snapshot(&f.sock.mu, &f.sock.acked)
}

// SocketConnections counts the WebSocket connections made, and the
// apps.connections.open calls.
func (f *SlackAPI) SocketConnections() (conns, opened int) {
	f.sock.mu.Lock()
	defer f.sock.mu.Unlock()
	return f.sock.conns, f.sock.opened
}

// open answers apps.connections.open (tok: the token it came with).
func (f *SlackAPI) open(w http.ResponseWriter, tok string) {
	sk := f.sock
	if sk == nil {
		slackJSON(w, map[string]any{"ok": false, "error": "not_allowed_token_type"})
		return
	}
	sk.mu.Lock()
	sk.opened++
	refuse := sk.refuse
	sk.mu.Unlock()
	switch {
	case tok != sk.appToken:
		slackJSON(w, map[string]any{"ok": false, "error": "invalid_auth"})
	case refuse != "":
		slackJSON(w, map[string]any{"ok": false, "error": refuse})
	default:
		slackJSON(w, map[string]any{"ok": true, "url": "ws" + strings.TrimPrefix(f.URL, "http") + "/socket"})
	}
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// serveSocket is one Socket Mode connection.
func (f *SlackAPI) serveSocket(w http.ResponseWriter, r *http.Request) {
	sk := f.sock
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	sk.mu.Lock()
	sk.conns++
	sk.mu.Unlock()
	var wmu sync.Mutex // gorilla: one writer at a time
	write := func(raw []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return conn.WriteMessage(websocket.TextMessage, raw)
	}
	if write([]byte(`{"type":"hello","num_connections":1,"connection_info":{"app_id":"A1"},"debug_info":{"host":"fake"}}`)) != nil {
		return
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		for {
			_, raw, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var ack struct {
				EnvelopeID string `json:"envelope_id"`
			}
			if json.Unmarshal(raw, &ack) == nil && ack.EnvelopeID != "" {
				sk.mu.Lock()
				sk.acked = append(sk.acked, ack.EnvelopeID)
				sk.mu.Unlock()
			}
		}
	}()
	ping := time.NewTicker(50 * time.Millisecond)
	defer ping.Stop()
	for {
		select {
		case <-closed:
			return
		case <-ping.C:
			wmu.Lock()
			err := conn.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second))
			wmu.Unlock()
			if err != nil {
				return
			}
		case raw := <-sk.pushes:
			if write(raw) != nil {
				return
			}
			if strings.Contains(string(raw), `"type":"disconnect"`) {
				// Slack closes the connection once the client has had time to open another.
				time.Sleep(100 * time.Millisecond)
				return
			}
		}
	}
}
