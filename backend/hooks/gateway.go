package hooks

import (
	"strings"
)

// GatewayEvent is an incoming gateway message as pre_gateway_dispatch sees
// it: the `event` argument of the familiar plugin API (text, message_id,
// source, ...; the Python runner hands it to callbacks as an object with
// these attributes, so `event.text` and `event.source.user_id` work).
type GatewayEvent struct {
	Text             string   `json:"text"`
	MessageType      string   `json:"message_type"` // "text" or "command"
	MessageID        string   `json:"message_id"`
	ReplyToMessageID *string  `json:"reply_to_message_id"`
	Timestamp        float64  `json:"timestamp"` // Unix seconds
	Platform         string   `json:"platform"`
	UserID           string   `json:"user_id"`
	UserName         string   `json:"user_name"`
	ChatID           string   `json:"chat_id"`
	ChatType         string   `json:"chat_type"`
	ThreadID         string   `json:"thread_id"`
	Source           Source   `json:"source"`
	MediaURLs        []string `json:"media_urls"`
}

// GatewayInfo describes the gateway that received the message (the
// `gateway` argument).
type GatewayInfo struct {
	Platform  string   `json:"platform"`
	Platforms []string `json:"platforms"` // every adapter that runs
	Profile   string   `json:"profile"`
}

// GatewayDispatchPayload is the payload of pre_gateway_dispatch, called in
// line before an incoming message is routed to its conversation (after the
// access check: an unknown sender never reaches plugins). session_store is
// always null: Atrium's store is not handed to plugins.
type GatewayDispatchPayload struct {
	Event        GatewayEvent `json:"event"`
	Gateway      GatewayInfo  `json:"gateway"`
	SessionStore any          `json:"session_store"`
	Platform     string       `json:"platform"`
	SessionKey   string       `json:"session_key"`
	SessionID    *string      `json:"session_id"` // the conversation's current session, null for a new one
	UserID       string       `json:"user_id"`
	ChatID       string       `json:"chat_id"`
	Text         string       `json:"text"`
}

// DispatchDecision is what pre_gateway_dispatch decided for one message.
type DispatchDecision struct {
	// Action is "skip" (drop it: nothing runs, nothing is stored),
	// "rewrite" (route Text instead of the message) or "" (route it as is).
	Action string
	Text   string
	Reason string
	Plugin string
}

// DecideDispatch reads pre_gateway_dispatch's answers in plugin order: the
// first {"action": "skip"} drops the message; {"action": "rewrite", "text":
// ...} replaces its text (a later rewrite replaces an earlier one);
// {"action": "allow"} and anything else route it. The hook fails open: a
// callback that raised or timed out is logged by the bus and counts as no
// answer.
func DecideDispatch(results []SyncResult, text string) DispatchDecision {
	d := DispatchDecision{Text: text}
	for _, r := range results {
		if r.Err != nil {
			continue
		}
		for _, m := range r.actions() {
			switch action, _ := m["action"].(string); strings.ToLower(action) {
			case "skip":
				reason, _ := m["reason"].(string)
				return DispatchDecision{Action: "skip", Text: d.Text, Reason: reason, Plugin: r.Plugin}
			case "rewrite":
				if t, ok := m["text"].(string); ok && strings.TrimSpace(t) != "" {
					d.Action, d.Text, d.Plugin = "rewrite", t, r.Plugin
				}
			}
		}
	}
	return d
}
