package gateway_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
)

// A reply with MEDIA: tags in a DM: its text first, without the tags (a
// reply to the message), then a message for each file with the file
// attached, its name, type and bytes as they are on disk.
func TestDiscordSendsTheFilesOfAReply(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	chartData := []byte("\x89PNG\r\n\x1a\n\x00\x00chart")
	reportData := []byte("%PDF-1.4\n\x00binary report\n")
	chart, report := writeFile(t, dir, "chart.png", chartData), writeFile(t, dir, "report.pdf", reportData)
	e, _ := mediaEnv(t, "Here are the chart and the report.\nMEDIA:"+chart+"\nMEDIA:"+report)
	const dm, ada = "9001", "4242"
	f, _ := e.discordDM(t, ada)
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("m1", dm, "", ada, "ada", "send me the chart and the report"))
	postedTo(t, f, 3, "the text and the two files")
	posts := f.Posted()
	if p := posts[0]; p.Channel != dm || p.ReplyTo != "m1" || p.Content != "Here are the chart and the report." {
		t.Fatalf("the text: %+v", p)
	}
	ups := f.Uploads()
	if len(posts) != 3 || len(ups) != 2 {
		t.Fatalf("%d posts, %d files: %+v", len(posts), len(ups), ups)
	}
	for i, want := range []gatewaytest.DiscordFile{
		{Message: posts[1].ID, Channel: dm, Name: "chart.png", ContentType: "image/png", Data: chartData},
		{Message: posts[2].ID, Channel: dm, Name: "report.pdf", ContentType: "application/pdf", Data: reportData},
	} {
		got := ups[i]
		if got.Message != want.Message || got.Channel != want.Channel || got.Name != want.Name || got.ContentType != want.ContentType || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("file %d: %+v, want %+v", i, got, want)
		}
		if p := posts[i+1]; p.Channel != dm || p.Content != "" || p.ReplyTo != "" {
			t.Fatalf("the message of file %d: %+v", i, p)
		}
	}
	for _, p := range posts {
		if strings.Contains(p.Content, "MEDIA:") {
			t.Fatalf("a tag reached the chat: %q", p.Content)
		}
	}
	waitFor(t, "every row sent", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE platform = 'discord' AND state = 'sent'`) == 3
	})
}

// A tag naming a file that is not there is said in the text; nothing is
// uploaded.
func TestDiscordSaysAMissingFile(t *testing.T) {
	t.Parallel()
	e, _ := mediaEnv(t, "Here it is.\nMEDIA:"+filepath.Join(t.TempDir(), "x.png"))
	const dm, ada = "9001", "4242"
	f, _ := e.discordDM(t, ada)
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("m1", dm, "", ada, "ada", "the picture, please"))
	if p := postedTo(t, f, 1, "the text"); p.Content != "Here it is.\n\n⚠️ Could not send x.png: no such file" {
		t.Fatalf("the text: %q", p.Content)
	}
	// The reply's rows are written at once: the text is all there is.
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE platform = 'discord'`); n != 1 || len(f.Uploads()) != 0 {
		t.Fatalf("%d outbox rows, %d uploads", n, len(f.Uploads()))
	}
}

// A file larger than max_file_size is not uploaded; one Discord refuses
// as too large (413, code 40005: the channel takes less) is not tried
// again. Each row is given up, and the chat is told why.
func TestDiscordFileTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	huge, mid := writeFile(t, dir, "huge.bin", bytes.Repeat([]byte("h"), 8192)), writeFile(t, dir, "mid.bin", bytes.Repeat([]byte("m"), 2048))
	e, _ := mediaEnv(t, "Two files.\nMEDIA:"+huge+"\nMEDIA:"+mid)
	const dm, ada = "9001", "4242"
	f := gatewaytest.NewDiscord(t, discordToken)
	f.AddChannel(dm, 1, "", "", "")
	f.UploadLimit(1024)
	e.startDiscord(t, f, discordOn(f, func(o *gateway.DiscordOptions) { o.MaxFileSize = 4096 }, ada))
	f.Dispatch("MESSAGE_CREATE", gatewaytest.DiscordMessage("m1", dm, "", ada, "ada", "both files"))
	postedTo(t, f, 3, "the text and what became of the files")
	want := []string{"Two files.",
		"⚠️ Could not send huge.bin: it is 8 KB, larger than the 4 KB Discord takes from a bot",
		"⚠️ Could not send mid.bin: it is 2 KB, larger than Discord takes in this channel (HTTP 413)"}
	var got []string
	for _, p := range f.Posted() {
		got = append(got, p.Content)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the chat was told %q, want %q", got, want)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE platform = 'discord' AND file != '' AND state = 'failed' AND attempts = 1`); n != 2 {
		t.Fatalf("%d file rows given up on their first attempt", n)
	}
	tried := 0
	for _, c := range f.Calls() {
		if c == "too large "+dm {
			tried++
		}
	}
	if len(f.Uploads()) != 0 || tried != 1 {
		t.Fatalf("%d uploads, %d refused: only mid.bin should have been tried", len(f.Uploads()), tried)
	}
}

// A DM of an image alone (no text) is answered: the image is saved under
// the media folder's discord folder, its bytes exact, and the agent is
// told where.
func TestDiscordReceivesAnImage(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "")
	const dm, ada = "9001", "4242"
	f, _ := e.discordDM(t, ada)
	data := []byte("\x89PNG\r\n\x1a\n\x00cat")
	msg := gatewaytest.DiscordMessage("m1", dm, "", ada, "ada", "")
	msg["attachments"] = []any{f.Attach("cat.png", "image/png", data)}
	f.Dispatch("MESSAGE_CREATE", msg)
	postedTo(t, f, 1, "the answer")
	path, got := saved(t, filepath.Join(e.mediaDir, "discord"))
	if !bytes.Equal(got, data) || !strings.HasSuffix(path, "-cat.png") || f.Fetched() != 1 {
		t.Fatalf("saved %s (%q), fetched %d times", path, got, f.Fetched())
	}
	note := "[The user sent an image: 'cat.png'. It is saved at: " + path + ".]"
	if told := model.told(); len(told) != 1 || !strings.Contains(told[0], note) {
		t.Fatalf("the agent was told %q, want %q", told, note)
	}
}

// In a server channel where mentions are required, a message with an
// attachment and no mention is left alone: nothing is downloaded, no turn
// runs. An @mention with an image alone opens a thread as a mention with
// text does (named after the sender), and its image is saved.
func TestDiscordServerAttachmentsFollowTheRules(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "")
	f := gatewaytest.NewDiscord(t, discordToken)
	const guild, general, ada = "500", "600", "4242"
	f.AddChannel(general, 0, guild, "", "")
	e.startDiscord(t, f, discordOn(f, nil, ada))
	ignored := gatewaytest.DiscordMessage("g1", general, guild, ada, "ada", "")
	ignored["attachments"] = []any{f.Attach("ignored.png", "image/png", []byte("not for the bot"))}
	f.Dispatch("MESSAGE_CREATE", ignored)
	mentioned := gatewaytest.DiscordMessage("g2", general, guild, ada, "ada", "<@"+f.BotID+">", f.BotID)
	mentioned["attachments"] = []any{f.Attach("mentioned.png", "image/png", []byte("for the bot"))}
	f.Dispatch("MESSAGE_CREATE", mentioned)
	p := postedTo(t, f, 1, "the answer in a thread")
	if calls := f.Calls(); len(calls) == 0 || calls[0] != "thread "+general+" g2 Conversation with Ada" || p.Channel == general {
		t.Fatalf("calls %q, the answer %+v", calls, p)
	}
	// Events are handled in order: g1 was left alone before g2 came.
	path, got := saved(t, filepath.Join(e.mediaDir, "discord"))
	if f.Fetched() != 1 || string(got) != "for the bot" {
		t.Fatalf("fetched %d times, saved %s", f.Fetched(), path)
	}
	if told := model.told(); len(told) != 1 || strings.Contains(told[0], "ignored.png") || !strings.Contains(told[0], path) {
		t.Fatalf("the agent was told %q", told)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_inbound WHERE platform = 'discord' AND event_id = 'message:g1'`); n != 0 {
		t.Fatal("the message without a mention reached the gateway")
	}
}

// A file larger than the gateway takes (max_file_mb) is not downloaded,
// and one Discord's CDN will not give is not saved: the agent is told of
// each, and of the message's text.
func TestDiscordInboundFileNotSaved(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "")
	e.maxInbound = 1024
	const dm, ada = "9001", "4242"
	f, _ := e.discordDM(t, ada)
	gone := f.Attach("gone.png", "image/png", []byte("x"))
	gone["url"] = f.URL + "/attachments/0/gone.png"
	msg := gatewaytest.DiscordMessage("m1", dm, "", ada, "ada", "what is in these?")
	msg["attachments"] = []any{f.Attach("big.zip", "application/zip", bytes.Repeat([]byte("z"), 2048)), gone}
	f.Dispatch("MESSAGE_CREATE", msg)
	postedTo(t, f, 1, "the answer")
	want := "[The user sent a file: 'big.zip' (2 KB). It was not saved: the gateway takes files up to 1 KB.]\n\n" +
		"[The user sent a file: 'gone.png'. It could not be saved: fetching it from Discord's CDN answered 404 Not Found.]\n\n" +
		"what is in these?"
	if told := model.told(); len(told) != 1 || !strings.Contains(told[0], want) {
		t.Fatalf("the agent was told %q, want %q", told, want)
	}
	if f.Fetched() != 1 {
		t.Fatalf("fetched %d times: only gone.png should have been asked for", f.Fetched())
	}
	if entries, _ := os.ReadDir(filepath.Join(e.mediaDir, "discord")); len(entries) != 0 {
		t.Fatalf("saved: %v", entries)
	}
}

// A voice message (flag IS_VOICE_MESSAGE, its length in duration_secs)
// is saved and told as one, with its length.
func TestDiscordReceivesAVoiceMessage(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "")
	const dm, ada = "9001", "4242"
	f, _ := e.discordDM(t, ada)
	voice := f.Attach("voice-message.ogg", "audio/ogg", []byte("OggS voice"))
	voice["duration_secs"], voice["waveform"] = 7.2, "AAAA"
	msg := gatewaytest.DiscordMessage("m1", dm, "", ada, "ada", "")
	msg["flags"], msg["attachments"] = 1<<13, []any{voice}
	f.Dispatch("MESSAGE_CREATE", msg)
	postedTo(t, f, 1, "the answer")
	path, got := saved(t, filepath.Join(e.mediaDir, "discord"))
	if string(got) != "OggS voice" {
		t.Fatalf("saved %q", got)
	}
	note := "[The user sent a voice message: " + path + " (duration: 0:07)]"
	if told := model.told(); len(told) != 1 || !strings.Contains(told[0], note) {
		t.Fatalf("the agent was told %q, want %q", told, note)
	}
}
