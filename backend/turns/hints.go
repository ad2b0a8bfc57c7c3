package turns

// platformHints tell the model where its words are read, as the familiar
// agent's system prompt does (its PLATFORM_HINTS), in what is true of
// Atrium's chat platforms and schedule: which Markdown a platform shows
// (the gateway writes a reply's Markdown in Telegram's and Slack's markup),
// how a file is sent (a MEDIA: tag, which only the gateway sends), that
// nobody is there to answer a scheduled run. The window, the dashboard and
// a terminal get none: what renders there is what a model writes by
// default, and a conversation there keeps no system message for it.
var platformHints = map[string]string{
	"telegram": "You are on Telegram. Standard Markdown auto-converts: **bold**, *italic*, ~~strikethrough~~, `code`, ```blocks```, " +
		"[links](url) and > quotes; ## headers show as bold. Prefer bullets or labeled lines for structured data (no tables). " +
		"You can send files natively: write MEDIA:/absolute/path/to/file in your response. Images (.png, .jpg, .webp) send as photos, " +
		"videos (.mp4) play inline, other files arrive as documents. Audio: add [[audio_as_voice]] on its own line to send an Opus " +
		"file (.ogg, .opus) as a voice bubble; .mp3 and .m4a arrive as audio files.",
	"discord": "You are in a Discord server or group chat communicating with your user. Discord renders standard markdown natively " +
		"(bold, italic, code blocks, links); tables are NOT supported — use bullet lists or labeled lines. You can send media files " +
		"natively: include MEDIA:/absolute/path/to/file in your response. Images (.png, .jpg, .webp) are sent as photo attachments, " +
		"audio as file attachments.",
	"slack": "You are in a Slack workspace communicating with your user. Standard markdown is auto-converted to Slack formatting " +
		"(bold, italic, strikethrough, code, links; headers as bold); tables are NOT supported — use bullet lists or labeled lines. " +
		"You can send media files natively: include MEDIA:/absolute/path/to/file in your response. Every file is uploaded as an " +
		"attachment; images show inline.",
	PlatformCron: "You are running as a scheduled cron job. There is no user present — you cannot ask questions, request " +
		"clarification, or wait for follow-up. Execute the task fully and autonomously, making reasonable decisions where needed. " +
		"Your final response is kept as the run's output and delivered to the job's destination when it has one — put the primary " +
		"content directly in your response.",
}
