package stack

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"atrium/backend/config"
	"atrium/backend/gateway"
	"atrium/backend/hostlock"
	"atrium/backend/sessions"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// send_message, the familiar agent's tool, on Atrium's gateway: the
// message goes into the profile's outbox as a reply does. When a process
// runs the gateway, it sends it (the tool waits a while to say how that
// went); when none does, the tool takes the gateway's lock for a moment
// and sends it itself, so that a message asked for in a terminal goes at
// once, and never twice.

// sendWait is how long send_message waits for a running gateway to send
// its message before it says the message is queued.
const sendWait = 20 * time.Second

// messaging is send_message's way to the chat platforms cfg configures:
// m (ToolsOf's, which says which) with the sending. The gateway's
// configuration is read again only when the tool is called, not at every
// turn's start.
func (s *Stack) messaging(m tools.Messaging, cfg config.Config) tools.Messaging {
	m.Send = func(ctx context.Context, target, message string) (map[string]any, error) {
		return s.sendMessage(ctx, gatewayOf(cfg), target, message)
	}
	m.Targets = func(ctx context.Context) (map[string]any, error) { return s.messageTargets(ctx, gatewayOf(cfg)) }
	return m
}

// platformsOf are the platforms g configures, by the names their adapters
// report.
func platformsOf(g config.Gateway) []string {
	var out []string
	if g.Telegram != nil {
		out = append(out, "telegram")
	}
	if g.Slack != nil {
		out = append(out, "slack")
	}
	if g.Discord != nil {
		out = append(out, "discord")
	}
	if w := g.Webhook; w != nil {
		name := w.Name
		if name == "" {
			name = "webhook"
		}
		out = append(out, name)
	}
	return out
}

// Explicit chat ids, as the familiar tool reads them: Telegram's and
// Discord's numbers (a topic or a thread after a colon), Slack's
// conversation ids (a thread's ts after a colon).
var (
	numericTarget = regexp.MustCompile(`^(-?\d+)(?::(\d+))?$`)
	slackTarget   = regexp.MustCompile(`^([CGD][A-Z0-9]{8,})(?::(\d+\.\d+))?$`)
)

// parseTarget reads a target's chat and thread after its platform; false
// when ref names no chat this way (a channel's name).
func parseTarget(platform, ref string) (chat, thread string, ok bool) {
	ref = strings.TrimSpace(ref)
	var m []string
	switch platform {
	case "telegram", "discord":
		m = numericTarget.FindStringSubmatch(ref)
	case "slack":
		m = slackTarget.FindStringSubmatch(ref)
	default: // the webhook's bridge names its chats as it likes
		chat, thread, _ = strings.Cut(ref, ":")
		return chat, thread, chat != ""
	}
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// sendMessage puts message in the outbox for target and sends it, or
// waits for the running gateway to.
func (s *Stack) sendMessage(ctx context.Context, g config.Gateway, target, message string) (map[string]any, error) {
	platform, ref, _ := strings.Cut(target, ":")
	platform = strings.ToLower(strings.TrimSpace(platform))
	var a gateway.Adapter
	for _, c := range GatewayAdapters(g) {
		if c.Adapter.Platform() == platform {
			a = c.Adapter
		}
	}
	if a == nil {
		return nil, fmt.Errorf("Platform '%s' is not configured. The profile's gateway has: %s", platform, strings.Join(platformsOf(g), ", "))
	}
	chat, thread, ok := parseTarget(platform, ref)
	if strings.TrimSpace(ref) != "" && !ok {
		if platform == "slack" && strings.HasPrefix(strings.TrimSpace(ref), "U") {
			return nil, fmt.Errorf("'%s' is a Slack user, not a conversation: send to their DM's id (D…), which send_message(action='list') shows once they wrote to the bot", ref)
		}
		return nil, fmt.Errorf("Could not resolve '%s' on %s. Use send_message(action='list') to see available targets, or give the chat's id", ref, platform)
	}
	home := chat == ""
	if home {
		if chat, thread, ok = s.HomeChannel(ctx, platform); !ok {
			return nil, fmt.Errorf("No home channel set for %s to determine where to send the message. Either specify a channel directly with '%s:CHAT_ID', "+
				"or set a home channel: type /sethome in the chat, or set %s_HOME_CHANNEL in the profile's .env", platform, platform, strings.ToUpper(platform))
		}
	}
	msgs := gateway.SplitReply(gateway.Outbound{Platform: platform, ChatID: chat, ThreadID: thread, Text: message, Origin: "send_message", Markdown: true}, s.MediaPolicy(s.log))
	if len(msgs) == 0 {
		return nil, errors.New("there is nothing to send: the message is empty")
	}
	var deadline time.Duration
	if d := g.DeliveryDeadlineMinutes; d != nil {
		deadline = time.Duration(*d * float64(time.Minute))
	}
	store := gateway.NewStore(s.DB)
	ids, err := store.EnqueueAll(ctx, msgs, deadline)
	if err != nil {
		return nil, err
	}
	rows, by, err := s.deliverNow(ctx, store, a, ids)
	if err != nil {
		return nil, err
	}
	out := sendResult(rows, platform, chat, thread, home, by)
	if out["error"] == nil {
		// The chat's own conversation learns what was sent there, as the
		// agent's words (the familiar send_message's mirror); not the
		// conversation that sent it.
		if _, err := store.Mirror(ctx, s.Sessions, platform, chat, thread, turns.SessionOf(ctx),
			sessions.NewMessage{Role: "assistant", Content: message}); err != nil {
			s.log.Warn("send_message: the message was sent, and not mirrored into the chat's conversation", "target", platform+":"+chat, "error", err)
		}
	}
	return out, nil
}

// deliverNow sends the rows ids itself when no process runs the gateway
// (holding its lock meanwhile), else waits up to sendWait for the one
// that does; it returns the rows then, and who sent them.
func (s *Stack) deliverNow(ctx context.Context, store *gateway.Store, a gateway.Adapter, ids []int64) ([]gateway.Delivery, string, error) {
	lock, holder, err := hostlock.Try(GatewayLockPath(s.Home), hostlock.Holder{Process: "send_message"})
	if err == nil {
		defer lock.Release()
		rows, err := store.SendNow(ctx, a, ids)
		return rows, "", err
	}
	if !errors.Is(err, hostlock.ErrHeld) {
		return nil, "", err
	}
	wait := time.NewTimer(sendWait)
	defer wait.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		rows, err := store.Rows(ctx, ids)
		if err != nil || !slices.ContainsFunc(rows, func(d gateway.Delivery) bool { return d.State == gateway.StatePending }) {
			return rows, holder.String(), err
		}
		select {
		case <-ctx.Done():
			return rows, holder.String(), nil
		case <-wait.C:
			return rows, holder.String(), nil
		case <-tick.C:
		}
	}
}

// sendResult is what the model is told of rows, in the familiar tool's
// keys: success and the message's id, or the error; a file that did not
// go, and a message still queued, said in a note.
func sendResult(rows []gateway.Delivery, platform, chat, thread string, home bool, gatewayBy string) map[string]any {
	out := map[string]any{"platform": platform, "chat_id": chat}
	if thread != "" {
		out["thread_id"] = thread
	}
	var notes, sent, waiting []string
	for i, d := range rows {
		name := "the message"
		if d.File != nil {
			name = d.File.Name
		}
		switch d.State {
		case gateway.StateSent:
			if _, ok := out["message_id"]; !ok {
				out["message_id"] = d.MessageID
			}
			if d.File != nil {
				sent = append(sent, d.File.Name)
			}
		case gateway.StateFailed:
			if i == 0 && d.File == nil {
				return map[string]any{"error": fmt.Sprintf("Send failed: %s", d.LastError)}
			}
			notes = append(notes, fmt.Sprintf("%s was not sent: %s", name, d.LastError))
		default:
			waiting = append(waiting, name)
			if d.LastError != "" {
				notes = append(notes, fmt.Sprintf("%s is not sent yet: %s", name, d.LastError))
			}
		}
	}
	out["success"] = true
	if len(sent) > 0 {
		out["files"] = sent
	}
	if home {
		notes = append([]string{fmt.Sprintf("Sent to %s home channel (chat_id: %s)", platform, chat)}, notes...)
	}
	if len(waiting) > 0 {
		out["queued"] = true
		if gatewayBy != "" {
			notes = append(notes, fmt.Sprintf("%s waits in the gateway's outbox: %s sends it, retrying for up to a day", strings.Join(waiting, ", "), gatewayBy))
		} else {
			notes = append(notes, fmt.Sprintf("%s waits in the gateway's outbox: no gateway runs for this profile now; it goes when one does "+
				"(atrium gateway run, or the window or atrium serve with gateway.autostart), for up to a day", strings.Join(waiting, ", ")))
		}
	}
	if len(notes) > 0 {
		out["note"] = strings.Join(notes, "; ")
	}
	return out
}

// messageTargets lists where send_message can send: each platform (its
// home channel), then the conversations the gateway had, the most recent
// first.
func (s *Stack) messageTargets(ctx context.Context, g config.Gateway) (map[string]any, error) {
	platforms := platformsOf(g)
	var targets []map[string]any
	for _, p := range platforms {
		t := map[string]any{"target": p}
		if chat, thread, ok := s.HomeChannel(ctx, p); ok {
			t["name"] = "home channel"
			t["chat_id"] = chat
			if thread != "" {
				t["thread_id"] = thread
			}
		} else {
			t["name"] = "no home channel yet: /sethome in a chat, or " + strings.ToUpper(p) + "_HOME_CHANNEL"
		}
		targets = append(targets, t)
	}
	routes, err := gateway.NewStore(s.DB).Routes(ctx, 200)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, r := range routes {
		if !slices.Contains(platforms, r.Platform) {
			continue
		}
		sess, err := s.Sessions.Get(ctx, r.SessionID)
		if err != nil {
			continue // the conversation's session was deleted
		}
		target, kind, ok := gateway.RouteTarget(r.SessionKey, sess.SenderID)
		if !ok || seen[target] {
			continue
		}
		seen[target] = true
		targets = append(targets, map[string]any{"target": target, "type": kind, "name": sess.Title,
			"last_active": r.UpdatedAt.Format(time.RFC3339)})
		if len(targets) >= 100 {
			break
		}
	}
	return map[string]any{"targets": targets}, nil
}
