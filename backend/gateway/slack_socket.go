package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// runSocket takes Slack's events in Socket Mode: apps.connections.open
// with the app-level token, then a WebSocket Slack pushes each event down
// (a message, a reaction, a tap on a button, a slash command), each
// acknowledged once it is queued, as Slack wants within three seconds. A
// connection Slack drops or asks to refresh is opened again (slack-go's
// client); one that cannot be opened is retried with backoff; a refused
// app-level token stops the adapter, saying which variable holds it.
func (s *Slack) runSocket(ctx context.Context, in Inbox, report Reporter) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	fctx, stop := context.WithCancel(ctx) // a refused token ends forward too
	defer stop()
	wg.Add(1)
	go func() {
		defer wg.Done()
		s.forward(fctx, in)
	}()
	who, ok := s.auth(ctx, report)
	if !ok {
		return nil
	}
	for attempt := 1; ; attempt++ {
		client := socketmode.New(s.api, socketmode.OptionLog(log.New(io.Discard, "", 0)),
			socketmode.OptionPingInterval(s.o.PingInterval))
		err := s.socketSession(ctx, client, report, who)
		if ctx.Err() != nil {
			return nil
		}
		if refused(err) {
			return fmt.Errorf("slack: Socket Mode refused the app-level token in $%s (%v): it needs an xapp- token with the connections:write scope, and Socket Mode on in the app's settings", s.o.AppTokenEnv, err)
		}
		report(Retrying, "Socket Mode stopped", err)
		if !sleep(ctx, backoff(s.o.RetryBase, s.o.RetryMax, attempt)) {
			return nil
		}
	}
}

// refused reports whether err is Slack refusing the app-level token (or
// the app: no Socket Mode), which no retry mends.
func refused(err error) bool {
	if err == nil {
		return false
	}
	switch err.Error() {
	case "invalid_auth", "account_inactive", "not_authed", "token_revoked", "not_allowed_token_type", "missing_scope":
		return true
	}
	var sc slack.StatusCodeError
	return errors.As(err, &sc) && sc.Code == http.StatusNotFound
}

// socketSession runs one socketmode client until it stops (an error its
// own reconnecting did not get past) or ctx ends, handling its events.
func (s *Slack) socketSession(ctx context.Context, client *socketmode.Client, report Reporter, who *slack.AuthTestResponse) error {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- client.RunContext(cctx) }()
	for {
		select {
		case err := <-done:
			return err
		case ev := <-client.Events:
			s.socketEvent(cctx, client, ev, report, who)
		}
	}
}

// socketEvent handles one event of the client: its connection's state is
// reported; what Slack sent is queued, then acknowledged (left
// unacknowledged when the queue is full, so that Slack sends it again).
func (s *Slack) socketEvent(ctx context.Context, client *socketmode.Client, ev socketmode.Event, report Reporter, who *slack.AuthTestResponse) {
	queued := true
	switch ev.Type {
	case socketmode.EventTypeConnected:
		report(Connected, fmt.Sprintf("%s in %s, over Socket Mode", who.User, who.Team), nil)
		return
	case socketmode.EventTypeConnectionError:
		if e, ok := ev.Data.(*slack.ConnectionErrorEvent); ok {
			report(Retrying, "Socket Mode cannot connect", e.ErrorObj)
		}
		return
	case socketmode.EventTypeEventsAPI:
		if e, ok := ev.Data.(slackevents.EventsAPIEvent); ok && e.Type == slackevents.CallbackEvent && ev.Request != nil {
			queued = s.take(e, ev.Request.Payload)
		}
	case socketmode.EventTypeInteractive:
		if cb, ok := ev.Data.(slack.InteractionCallback); ok {
			if m, ok := s.tapOf(cb); ok {
				queued = s.queue(m)
			}
		}
	case socketmode.EventTypeSlashCommand:
		if cmd, ok := ev.Data.(slack.SlashCommand); ok {
			if m, ok := s.commandOf(cmd); ok {
				queued = s.queue(m)
			}
		}
	}
	if ev.Request != nil && ev.Request.EnvelopeID != "" && queued {
		_ = client.AckCtx(ctx, ev.Request.EnvelopeID, nil)
	}
}

// commandOf is a slash command the app declares (the familiar gateway's
// manifest declares /stop, /new, /approve, ...) as the message that says
// it, "/stop" and its text, in the channel it was typed in; Slack shows
// nothing of it in the channel, so the reply is not threaded.
func (s *Slack) commandOf(cmd slack.SlashCommand) (Inbound, bool) {
	if cmd.UserID == "" || cmd.ChannelID == "" || !strings.HasPrefix(cmd.Command, "/") {
		return Inbound{}, false
	}
	text := strings.TrimSpace(cmd.Command + " " + cmd.Text)
	return Inbound{EventID: "command:" + cmd.TriggerID, UserID: cmd.UserID, ChatID: cmd.ChannelID, ChatType: s.chatType(cmd.ChannelID, cmd.ChannelName),
		Text: text, At: time.Now().UTC()}, true
}
