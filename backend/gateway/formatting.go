package gateway

import "atrium/backend/markup"

// A model's Markdown in the chat platforms' markup (backend/markup).
var (
	TelegramHTML = markup.TelegramHTML
	SlackMrkdwn  = markup.SlackMrkdwn
)
