package gateway_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"atrium/backend/gateway/gatewaytest"
)

// sent lists the posts and the shared files of api, in order, as
// "postMessage CHANNEL THREAD" and "upload CHANNEL THREAD TITLE" (the
// thread statuses left out).
func sent(api *gatewaytest.SlackAPI) []string {
	return slices.DeleteFunc(api.Calls(), func(c string) bool { return strings.HasPrefix(c, "setStatus ") })
}

var (
	pngBytes = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0, 1, 2, 0xfe, 0xff}, 400)...)
	pdfBytes = []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n")
)

// The agent's reply names files with MEDIA: tags: the text goes first,
// without them, then each file by Slack's upload flow (an upload URL for
// its name and length, the bytes, the share), in the channel and the
// thread the conversation is in, its name the title; in a DM, not
// threaded.
func TestSlackSendsTheFilesAReplyNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	chart, report := writeFile(t, dir, "chart.png", pngBytes), writeFile(t, dir, "report.pdf", pdfBytes)
	e, _, _ := filesEnv(t, func(last string) (string, bool) {
		switch {
		case strings.Contains(last, "the chart and the report"):
			return "Here they are.\nMEDIA:" + chart + "\nMEDIA:" + report, true
		case strings.Contains(last, "just the chart"):
			return "The chart: MEDIA:" + chart, true
		}
		return "", false
	})
	api := gatewaytest.NewSlackAPI(t, slackToken)
	url := e.startSlack(t, api)

	const thread = "1700000000.000300"
	ev := gatewaytest.SlackMessage("U1", "C1", "channel", "<@UBOT> send me the chart and the report")
	ev["event"].(map[string]any)["thread_ts"] = thread
	if code := gatewaytest.SlackEvent(t, url, slackSecret, ev, false); code != 200 {
		t.Fatalf("message: %d", code)
	}
	waitFor(t, "both files", func() bool { return len(api.Uploads()) == 2 })
	if got := api.Posted(); len(got) != 1 || got[0]["text"] != "Here they are." || got[0]["channel"] != "C1" || got[0]["thread_ts"] != thread {
		t.Fatalf("the text: %v", got)
	}
	want := []string{"postMessage C1 " + thread, "upload C1 " + thread + " chart.png", "upload C1 " + thread + " report.pdf"}
	if got := sent(api); !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
	ups := api.Uploads()
	for i, w := range []struct {
		name string
		data []byte
	}{{"chart.png", pngBytes}, {"report.pdf", pdfBytes}} {
		u := ups[i]
		if u.Filename != w.name || u.Title != w.name || u.Length != len(w.data) || !bytes.Equal(u.Data, w.data) || u.Channel != "C1" ||
			u.ThreadTS != thread || u.Comment != "" {
			t.Fatalf("file %d: %+v (%d bytes), want %s of %d bytes", i, u, len(u.Data), w.name, len(w.data))
		}
	}
	waitFor(t, "the files' rows sent", func() bool {
		return e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE platform = 'slack' AND file != '' AND state = 'sent' AND message_id IN (?, ?)`,
			ups[0].ID, ups[1].ID) == 2
	})

	// In a DM: not threaded.
	if code := gatewaytest.SlackEvent(t, url, slackSecret, gatewaytest.SlackMessage("U1", "D1", "im", "just the chart please"), false); code != 200 {
		t.Fatalf("message: %d", code)
	}
	waitFor(t, "the chart in the DM", func() bool { return len(api.Uploads()) == 3 })
	if u := api.Uploads()[2]; u.Channel != "D1" || u.ThreadTS != "" || u.Title != "chart.png" || !bytes.Equal(u.Data, pngBytes) {
		t.Fatalf("the chart in the DM: %+v", u)
	}
	if got := api.Posted(); len(got) != 2 || got[1]["text"] != "The chart:" || got[1]["thread_ts"] != "" {
		t.Fatalf("the DM's text: %v", got)
	}
}

// A tag naming a file that is not there is said in the text; nothing is
// uploaded.
func TestSlackSaysAFileIsMissing(t *testing.T) {
	t.Parallel()
	gone := filepath.Join(t.TempDir(), "x.png")
	e, _, _ := filesEnv(t, func(string) (string, bool) { return "Here it is: MEDIA:" + gone, true })
	api := gatewaytest.NewSlackAPI(t, slackToken)
	url := e.startSlack(t, api)
	if code := gatewaytest.SlackEvent(t, url, slackSecret, gatewaytest.SlackMessage("U1", "D1", "im", "the picture?"), false); code != 200 {
		t.Fatalf("message: %d", code)
	}
	waitFor(t, "the reply", func() bool { return len(api.Posted()) == 1 })
	if got := api.Texts()[0]; got != "Here it is:\n\n⚠️ Could not send x.png: no such file" {
		t.Fatalf("the reply: %q", got)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE platform = 'slack'`); n != 1 {
		t.Fatalf("%d outbox rows, want the text alone", n)
	}
	if n := api.UploadURLsAsked(); n != 0 || len(api.Uploads()) != 0 {
		t.Fatalf("an upload for a missing file: %d asked, %v", n, api.Uploads())
	}
}

// A workspace that has not granted files:write (missing_scope, at either
// step) fails the file's row at once, and the chat is told what the app
// needs.
func TestSlackFileRefusedWithoutFilesWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := writeFile(t, dir, "a.png", pngBytes), writeFile(t, dir, "b.pdf", pdfBytes)
	e, _, _ := filesEnv(t, func(last string) (string, bool) {
		switch {
		case strings.Contains(last, "first"):
			return "Sending it.\nMEDIA:" + a, true
		case strings.Contains(last, "second"):
			return "Sending it.\nMEDIA:" + b, true
		}
		return "", false
	})
	api := gatewaytest.NewSlackAPI(t, slackToken)
	url := e.startSlack(t, api)
	for i, c := range []struct{ method, ask, name string }{
		{"files.completeUploadExternal", "the first file", "a.png"},
		{"files.getUploadURLExternal", "the second file", "b.pdf"},
	} {
		api.RefuseFiles("files.completeUploadExternal", "")
		api.RefuseFiles(c.method, "missing_scope")
		if code := gatewaytest.SlackEvent(t, url, slackSecret, gatewaytest.SlackMessage("U1", "D1", "im", c.ask), false); code != 200 {
			t.Fatalf("message: %d", code)
		}
		waitFor(t, "the file's failure told", func() bool { return len(api.Posted()) == 2*(i+1) })
		texts := api.Texts()
		told := texts[2*i+1]
		if texts[2*i] != "Sending it." || !strings.HasPrefix(told, "⚠️ Could not send "+c.name+": ") || !strings.Contains(told, "files:write") {
			t.Fatalf("%s refused: the chat was told %q", c.method, texts[2*i:])
		}
		if n := e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE platform = 'slack' AND file LIKE ? AND state = 'failed' AND attempts = 1
			AND last_error LIKE '%missing_scope%'`, "%"+c.name+"%"); n != 1 {
			t.Fatalf("%s refused: the file's row did not fail at once", c.method)
		}
		if n := api.UploadURLsAsked(); n != i+1 {
			t.Fatalf("%d upload URLs asked after %d files", n, i+1)
		}
	}
	if len(api.Uploads()) != 0 {
		t.Fatalf("shared without files:write: %v", api.Uploads())
	}
}

// A DM of files alone (file_share, no text) is a message: each file is
// fetched with the bot token, saved under the media folder's slack/ with
// its bytes, and the agent is told where (a clip recorded in Slack as a
// voice message, with its length); a file Slack hides (beyond a free
// workspace's storage, deleted) is skipped.
func TestSlackSavesTheFilesAPersonSends(t *testing.T) {
	t.Parallel()
	e, model, media := filesEnv(t, nil)
	api := gatewaytest.NewSlackAPI(t, slackToken)
	url := e.startSlack(t, api)
	clip := []byte("\x00\x00\x00\x20ftypM4A \x00\x00\x00\x00voice")
	voice := api.AddFile("audio_message.m4a", "audio/mp4", clip)
	voice["subtype"], voice["duration_ms"] = "slack_audio", 4200
	hidden := map[string]any{"id": "F0HIDDEN", "mode": "hidden_by_limit"}
	deleted := api.AddFile("gone.txt", "text/plain", []byte("deleted"))
	deleted["mode"] = "tombstone"
	ev := gatewaytest.SlackFileShare("U1", "D1", "im", "", api.AddFile("cat.png", "image/png", pngBytes), voice, hidden, deleted)
	if code := gatewaytest.SlackEvent(t, url, slackSecret, ev, false); code != 200 {
		t.Fatalf("file_share: %d", code)
	}
	waitFor(t, "the reply", func() bool { return len(api.Posted()) == 1 })
	data, paths := savedFiles(t, filepath.Join(media, "slack"))
	if len(data) != 2 || !bytes.Equal(data["cat.png"], pngBytes) || !bytes.Equal(data["audio_message.m4a"], clip) {
		t.Fatalf("saved %d files: %v", len(data), paths)
	}
	asked := model.lastAsked()
	for _, note := range []string{"[The user sent an image: 'cat.png'. It is saved at: " + paths["cat.png"] + ".",
		"[The user sent a voice message: " + paths["audio_message.m4a"] + " (duration: 0:04)]"} {
		if !strings.Contains(asked, note) {
			t.Fatalf("the model was asked %q, without %q", asked, note)
		}
	}
	if strings.Count(asked, "[The user sent") != 2 {
		t.Fatalf("a file Slack hides was told: %q", asked)
	}
	if gets := api.FileGets(); !slices.Equal(gets, []string{slackToken, slackToken}) {
		t.Fatalf("the downloads carried %q", gets)
	}
}

// A token Slack will not hand files to (no files:read: the sign-in page)
// saves nothing; the agent is told the file could not be saved and what
// the app needs, and the message's turn runs.
func TestSlackFileNotReadableWithoutFilesRead(t *testing.T) {
	t.Parallel()
	e, model, media := filesEnv(t, nil)
	api := gatewaytest.NewSlackAPI(t, slackToken)
	url := e.startSlack(t, api)
	api.RefuseFileReads(true)
	ev := gatewaytest.SlackFileShare("U1", "D1", "im", "what is in this?", api.AddFile("doc.pdf", "application/pdf", pdfBytes))
	delete(ev["event"].(map[string]any), "subtype") // files on a plain message, as Slack sends some
	if code := gatewaytest.SlackEvent(t, url, slackSecret, ev, false); code != 200 {
		t.Fatalf("file_share: %d", code)
	}
	waitFor(t, "the reply", func() bool { return len(api.Posted()) == 1 })
	asked := model.lastAsked()
	if !strings.Contains(asked, "[The user sent a file: 'doc.pdf'. It could not be saved: ") || !strings.Contains(asked, "files:read") ||
		!strings.HasSuffix(asked, "what is in this?") {
		t.Fatalf("the model was asked %q", asked)
	}
	if data, _ := savedFiles(t, filepath.Join(media, "slack")); len(data) != 0 {
		t.Fatalf("saved from a sign-in page: %v", data)
	}
	if gets := api.FileGets(); !slices.Equal(gets, []string{slackToken}) {
		t.Fatalf("the download carried %q", gets)
	}
}

// Files of a message the gateway does not take are never fetched: a
// sender not allowed (refused in the channel), a bot's share, an edit.
func TestSlackFilesOfMessagesNotTakenAreNotFetched(t *testing.T) {
	t.Parallel()
	e, model, media := filesEnv(t, nil)
	api := gatewaytest.NewSlackAPI(t, slackToken)
	url := e.startSlack(t, api)
	bot := gatewaytest.SlackFileShare("U1", "C1", "channel", "", api.AddFile("bot.png", "image/png", pngBytes))
	bot["event"].(map[string]any)["bot_id"] = "B2"
	edit := gatewaytest.SlackFileShare("U1", "C1", "channel", "", api.AddFile("edit.png", "image/png", pngBytes))
	edit["event"].(map[string]any)["subtype"] = "message_changed"
	stranger := gatewaytest.SlackFileShare("U9", "C1", "channel", "<@UBOT> look at this", api.AddFile("secret.pdf", "application/pdf", pdfBytes))
	for _, ev := range []map[string]any{bot, edit, stranger} {
		if code := gatewaytest.SlackEvent(t, url, slackSecret, ev, false); code != 200 {
			t.Fatalf("file_share: %d", code)
		}
	}
	waitFor(t, "the refusal", func() bool { return len(api.Posted()) == 1 })
	if got := api.Texts()[0]; !strings.Contains(got, "U9") {
		t.Fatalf("the refusal: %q", got)
	}
	if gets := api.FileGets(); len(gets) != 0 {
		t.Fatalf("%d files fetched of messages not taken", len(gets))
	}
	if data, _ := savedFiles(t, filepath.Join(media, "slack")); len(data) != 0 || model.lastAsked() != "" {
		t.Fatalf("saved %v, the model asked %q", data, model.lastAsked())
	}
}

// Over Socket Mode a file a person sends is saved and told the same way.
func TestSlackSocketModeSavesTheFilesAPersonSends(t *testing.T) {
	t.Parallel()
	e, model, media := filesEnv(t, nil)
	api := gatewaytest.NewSlackAPI(t, slackToken)
	e.startSlackSocket(t, api)
	api.SocketPush("events_api", gatewaytest.SlackFileShare("U1", "D1", "im", "", api.AddFile("cat.png", "image/png", pngBytes)))
	waitFor(t, "the reply", func() bool { return len(api.Posted()) == 1 })
	data, paths := savedFiles(t, filepath.Join(media, "slack"))
	if len(data) != 1 || !bytes.Equal(data["cat.png"], pngBytes) {
		t.Fatalf("saved %v", paths)
	}
	if asked := model.lastAsked(); !strings.Contains(asked, "[The user sent an image: 'cat.png'. It is saved at: "+paths["cat.png"]+".") {
		t.Fatalf("the model was asked %q", asked)
	}
	if gets := api.FileGets(); !slices.Equal(gets, []string{slackToken}) {
		t.Fatalf("the download carried %q", gets)
	}
}

// The bot token goes to Slack's own addresses alone: a file whose URL is
// elsewhere is not fetched, and the agent is told it could not be saved.
func TestSlackBotTokenGoesToSlackAlone(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write(pngBytes)
	}))
	t.Cleanup(elsewhere.Close)
	e, model, media := filesEnv(t, nil)
	api := gatewaytest.NewSlackAPI(t, slackToken)
	url := e.startSlack(t, api)
	f := api.AddFile("cat.png", "image/png", pngBytes)
	f["url_private"], f["url_private_download"] = elsewhere.URL+"/cat.png", elsewhere.URL+"/download/cat.png"
	if code := gatewaytest.SlackEvent(t, url, slackSecret, gatewaytest.SlackFileShare("U1", "D1", "im", "see", f), false); code != 200 {
		t.Fatalf("file_share: %d", code)
	}
	waitFor(t, "the reply", func() bool { return len(api.Posted()) == 1 })
	if asked := model.lastAsked(); !strings.Contains(asked, "[The user sent a file: 'cat.png'. It could not be saved: ") || !strings.Contains(asked, "not Slack's") {
		t.Fatalf("the model was asked %q", asked)
	}
	if data, _ := savedFiles(t, filepath.Join(media, "slack")); len(data) != 0 || hits.Load() != 0 {
		t.Fatalf("fetched from elsewhere: %d requests, saved %v", hits.Load(), data)
	}
}
