package gateway_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
)

const slackAppToken = "xapp-1-test-app-token"

// startSlackSocket starts e's gateway with a Slack adapter in Socket Mode
// (the app-level token set, no signing secret, nothing listening) on api,
// U1 allowed, and waits until it says it is connected.
func (e *env) startSlackSocket(t *testing.T, api *gatewaytest.SlackAPI) {
	t.Helper()
	api.EnableSocketMode(slackAppToken)
	sl := gateway.NewSlack(gateway.SlackOptions{Token: slackToken, AppToken: slackAppToken, APIURL: api.URL + "/api",
		RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	e.start(t, gateway.Configured{Adapter: sl, Access: gateway.Access{Users: []string{"U1"}}})
	waitFor(t, "connected over Socket Mode", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_status WHERE platform = 'slack' AND state = 'connected' AND detail LIKE '%over Socket Mode%'`) == 1
	})
	if sl.Addr() != "" {
		t.Fatalf("Socket Mode listens on %s", sl.Addr())
	}
}

// Socket Mode, as the familiar gateway takes Slack's events: a message
// pushed down the WebSocket is acknowledged and answered; the same event
// again is one turn; a slash command the app declares (/whoami) is the
// message that says it; a connection Slack asks to refresh is opened again
// and the conversation goes on.
func TestSlackSocketMode(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2000, 0.5)
	api := gatewaytest.NewSlackAPI(t, slackToken)
	e.startSlackSocket(t, api)

	ev := gatewaytest.SlackMessage("U1", "D1", "im", "hello over the socket")
	first := api.SocketPush("events_api", ev)
	waitFor(t, "the reply", func() bool { return len(api.Texts()) == 1 })
	if got := api.Posted()[0]; got["channel"] != "D1" || got["text"] != "offline reply to: hello over the socket" {
		t.Fatalf("the reply: %v", got)
	}
	again := api.SocketPush("events_api", ev) // Slack sends an event again when its ack was lost
	waitFor(t, "both acknowledged", func() bool { return len(api.Acked()) == 2 })
	if acked := api.Acked(); acked[0] != first || acked[1] != again {
		t.Fatalf("acknowledged %q, pushed %s %s", acked, first, again)
	}

	api.SocketPush("slash_commands", map[string]any{"token": "unused", "team_id": "T1", "channel_id": "D1", "channel_name": "directmessage",
		"user_id": "U1", "user_name": "ada", "command": "/whoami", "text": "", "trigger_id": "trig-1", "api_app_id": "A1"})
	waitFor(t, "the command's answer", func() bool { return len(api.Texts()) == 2 })
	if got := api.Texts()[1]; !strings.Contains(got, "Ada U1 (U1) on slack") || !strings.Contains(got, "key slack:dm:D1") {
		t.Fatalf("/whoami over Socket Mode: %q", got)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE content = 'hello over the socket'`); n != 1 {
		t.Fatalf("%d turns for one event sent twice", n)
	}

	// A refresh: Slack says disconnect, the client opens another connection.
	api.SocketDisconnect()
	waitFor(t, "a second connection", func() bool { conns, _ := api.SocketConnections(); return conns == 2 })
	api.SocketPush("events_api", gatewaytest.SlackMessage("U1", "D1", "im", "still there?"))
	waitFor(t, "the reply after the refresh", func() bool { return len(api.Texts()) == 3 })
	if got := api.Texts()[2]; got != "offline reply to: still there?" {
		t.Fatalf("after the refresh: %q", got)
	}

	// Someone not allowed: refused once, nothing reaches a session.
	api.SocketPush("events_api", gatewaytest.SlackMessage("U9", "D9", "im", "let me in"))
	waitFor(t, "the refusal", func() bool { return len(api.Texts()) == 4 })
	if n := e.count(t, `SELECT COUNT(*) FROM sessions WHERE sender_id = 'U9'`); n != 0 {
		t.Fatal("a refused sender got a session")
	}
}

// A tap on an approval's button comes down the socket too (interactive):
// acknowledged, and the sender's tap answers.
func TestSlackSocketModeButtons(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9, guardEcho(t))
	api := gatewaytest.NewSlackAPI(t, slackToken)
	e.startSlackSocket(t, api)
	api.SocketPush("events_api", gatewaytest.SlackMessage("U1", "D1", "im", "use tool echo: tapped"))
	waitFor(t, "the approval", func() bool { return len(api.Posted()) == 1 })
	card := api.Posted()[0]
	_, rows := slackButtons(t, card)
	tap := api.SocketPush("interactive", gatewaytest.SlackBlockAction("U1", "D1", "1700000000.000001", "", card["text"], rows[0][0][0], rows[0][0][2], api.ResponseURL()))
	waitFor(t, "the reply", func() bool { return len(api.Posted()) == 2 })
	if got := api.Posted()[1]; got["text"] != "The tool echo returned: tapped" {
		t.Fatalf("the reply: %v", got)
	}
	waitFor(t, "the approval updated", func() bool { return len(api.Updated()) == 1 })
	if u := api.Updated()[0]; u["text"] != card["text"]+"\n\n✅ Approved once" {
		t.Fatalf("the approval after the tap: %v", u)
	}
	waitFor(t, "the tap acknowledged", func() bool {
		for _, id := range api.Acked() {
			if id == tap {
				return true
			}
		}
		return false
	})
}

// An app-level token Slack refuses stops the adapter with an error that
// names its variable and what it needs; a missing one is said before any
// connection.
func TestSlackSocketModeRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2000, 0.5)
	api := gatewaytest.NewSlackAPI(t, slackToken)
	api.EnableSocketMode("xapp-the-right-one")
	sl := gateway.NewSlack(gateway.SlackOptions{Token: slackToken, AppToken: "xapp-a-revoked-one", APIURL: api.URL + "/api"})
	e.start(t, gateway.Configured{Adapter: sl, Access: gateway.Access{Users: []string{"U1"}}})
	waitFor(t, "the error", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_status WHERE platform = 'slack' AND state = 'error'`) == 1
	})
	var errText string
	_ = e.db.Read.Raw(`SELECT last_error FROM gateway_status WHERE platform = 'slack'`).Scan(&errText).Error
	if !strings.Contains(errText, "Socket Mode refused the app-level token in $SLACK_APP_TOKEN (invalid_auth)") ||
		!strings.Contains(errText, "connections:write") || strings.Contains(errText, "xapp-a-revoked-one") {
		t.Fatalf("the error: %q", errText)
	}
	if _, opened := api.SocketConnections(); opened != 1 {
		t.Fatalf("apps.connections.open asked %d times for a refused token", opened)
	}

	missing := newEnv(t, 2000, 0.5)
	sl = gateway.NewSlack(gateway.SlackOptions{Token: slackToken, Mode: gateway.SlackSocket, APIURL: api.URL + "/api"})
	missing.start(t, gateway.Configured{Adapter: sl})
	waitFor(t, "the missing token", func() bool {
		return missing.count(t, `SELECT COUNT(*) FROM gateway_status WHERE platform = 'slack' AND state = 'error' AND last_error LIKE '%SLACK_APP_TOKEN%'`) == 1
	})
}

// BenchmarkSlackInbound is one person's message taken in by the Slack
// adapter alone (no turn): from Slack sending it to the adapter handing it
// on, in Socket Mode (pushed down the WebSocket, acknowledged) beside the
// Events API (a signed POST the adapter verifies and answers 200):
//
//	go test -tags sqlite_fts5 -run '^$' -bench 'BenchmarkSlackInbound' -benchtime=2000x ./backend/gateway/
func BenchmarkSlackInbound(b *testing.B) {
	run := func(b *testing.B, socket bool) {
		api := gatewaytest.NewSlackAPI(b, slackToken)
		o := gateway.SlackOptions{Token: slackToken, APIURL: api.URL + "/api", SigningSecret: slackSecret, Mode: gateway.SlackEvents}
		var events string
		if socket {
			api.EnableSocketMode(slackAppToken)
			o.AppToken, o.Mode = slackAppToken, gateway.SlackSocket
		} else {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			o.Listener, events = ln, "http://"+ln.Addr().String()+gateway.SlackEventsPath
		}
		benchInbound(b, gateway.NewSlack(o), func() {}, func() {
			ev := gatewaytest.SlackMessage("U1", "D1", "im", "hello")
			if socket {
				api.SocketPush("events_api", ev)
			} else if code := gatewaytest.SlackEvent(b, events, slackSecret, ev, false); code != 200 {
				b.Fatalf("POST: %d", code)
			}
		})
	}
	b.Run("events-api", func(b *testing.B) { run(b, false) })
	b.Run("socket-mode", func(b *testing.B) { run(b, true) })
}

// benchInbound runs a until it is connected (and ready says so), then
// times push: one event to the platform, until a hands its message on.
func benchInbound(b *testing.B, a gateway.Adapter, ready, push func()) {
	got := make(chan gateway.Inbound, 1)
	connected := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.Run(ctx, func(m gateway.Inbound) { got <- m }, func(state, _ string, _ error) {
			if state == gateway.Connected {
				once.Do(func() { close(connected) })
			}
		})
	}()
	defer func() { cancel(); <-done }()
	<-connected
	ready()
	for b.Loop() {
		push()
		<-got
	}
}
