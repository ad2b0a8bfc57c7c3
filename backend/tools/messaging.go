package tools

import (
	"context"
	"fmt"
	"strings"
)

// The familiar agent's send_message: the agent sends a message (its
// MEDIA:<path> tags as files) to a chat platform from any conversation (a
// terminal, the window, a scheduled job), or lists where it can send.
// Atrium puts it in the profile's gateway outbox, as a reply: the process
// running the gateway sends it, retried as any reply; when none runs, the
// tool sends it itself.

// SendMessageTool is the tool's name; its toolset is messaging.
const SendMessageTool = "send_message"

// Messaging is how send_message reaches the chat platforms (the stack
// wires it: the outbox, the gateway's adapters).
type Messaging struct {
	// Platforms are the platforms the profile's gateway configures (none:
	// the tool is not offered).
	Platforms []string
	// Send sends message to target (platform[:chat_id[:thread_id]]) and
	// says what happened, as the model reads it.
	Send func(ctx context.Context, target, message string) (map[string]any, error)
	// Targets lists where a message can go.
	Targets func(ctx context.Context) (map[string]any, error)
}

// Problem says why send_message is not offered ("" when it is).
func (m Messaging) Problem() string {
	if len(m.Platforms) == 0 {
		return "send_message needs a chat platform in the profile's gateway (gateway.telegram, gateway.slack, gateway.discord, gateway.webhook, or the familiar .env's tokens)"
	}
	return ""
}

func sendMessageTool() Tool {
	return Tool{Name: SendMessageTool, Toolset: "messaging", run: func(ctx context.Context, c *Call) any { return c.Settings.Messaging.run(ctx, c) },
		Description: "Send a message to a connected messaging platform, or list available targets.\n\n" +
			"IMPORTANT: When the user asks to send to a specific channel or person (not just a bare platform name), " +
			"call send_message(action='list') FIRST to see available targets, then send to the correct one.\n" +
			"If the user just says a platform name like 'send to telegram', send directly to the home channel without listing first.",
		Parameters: `{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["send","list"],"description":"Action to perform. 'send' (default) sends a message. 'list' returns all available channels/contacts across connected platforms."},` +
			`"target":{"type":"string","description":"Delivery target. Format: 'platform' (uses home channel), 'platform:chat_id', or 'platform:chat_id:thread_id' for Telegram topics, Discord threads and Slack threads. Examples: 'telegram', 'telegram:-1001234567890:17585', 'discord:999888777:555444333', 'slack:C0123456789'"},` +
			`"message":{"type":"string","description":"The message text to send. To send an image or file, include MEDIA:<absolute path> — the platform will deliver it as a native media attachment."}` +
			`},"required":[]}`}
}

func (m Messaging) run(ctx context.Context, c *Call) any {
	if p := m.Problem(); p != "" {
		return map[string]any{"error": p}
	}
	if m.Send == nil {
		return map[string]any{"error": "send_message is not available here"}
	}
	action, _ := c.str("action")
	switch strings.ToLower(strings.TrimSpace(action)) {
	case "", "send":
	case "list":
		if m.Targets == nil {
			return map[string]any{"error": "listing targets is not available here"}
		}
		out, err := m.Targets(ctx)
		if err != nil {
			return map[string]any{"error": "Failed to list the targets: " + err.Error()}
		}
		return out
	default:
		return map[string]any{"error": fmt.Sprintf("unknown action %q: it is send or list", action)}
	}
	target, _ := c.str("target")
	message, _ := c.str("message")
	if strings.TrimSpace(target) == "" || strings.TrimSpace(message) == "" {
		return map[string]any{"error": "Both 'target' and 'message' are required when action='send'"}
	}
	out, err := m.Send(ctx, strings.TrimSpace(target), message)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	return out
}
