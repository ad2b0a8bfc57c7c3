package gateway_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
)

// The agent's MEDIA: tags on Telegram: the text first, without the tags,
// with a line for each file that cannot go; then each file by the method
// its kind takes (a photo, a document, a voice message for Ogg with
// [[audio_as_voice]], an audio file for MP3, a video), with its bytes;
// the transcript keeps the reply as the model gave it.
func TestTelegramSendsTheFilesAReplyNames(t *testing.T) {
	t.Parallel()
	p := files(t, map[string]string{"chart.png": "PNG-bytes", "r.pdf": "%PDF-1.7", "note.ogg": "OggS-voice", "song.mp3": "ID3-song",
		"clip.mp4": "mp4-bytes", ".env": "TELEGRAM_BOT_TOKEN=x"})
	reply := "Here you go.\nMEDIA:" + p["chart.png"] + "\nMEDIA:" + p["r.pdf"] + "\n[[audio_as_voice]]\nMEDIA:" + p["note.ogg"] +
		"\nMEDIA:" + p["song.mp3"] + "\nMEDIA:" + p["clip.mp4"] + "\nMEDIA:" + filepath.Join(filepath.Dir(p["r.pdf"]), "missing.png") +
		"\nMEDIA:" + p[".env"]
	e, _ := mediaEnv(t, reply)
	e.media = gateway.MediaPolicy{Denied: []string{p[".env"]}}
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	f.Push(5, "Ada", 5, "private", "the report, please")

	waitFor(t, "five files", func() bool { return len(f.Uploads()) == 5 })
	want := "Here you go.\n\n⚠️ Could not send missing.png: no such file\n⚠️ Could not send .env: it holds the profile's configuration or secrets"
	if got := f.SentTexts(); len(got) != 1 || got[0] != want {
		t.Fatalf("texts %q, want [%q]", got, want)
	}
	for i, w := range []struct{ method, field, name, data string }{
		{"sendPhoto", "photo", "chart.png", "PNG-bytes"}, {"sendDocument", "document", "r.pdf", "%PDF-1.7"},
		{"sendVoice", "voice", "note.ogg", "OggS-voice"}, {"sendAudio", "audio", "song.mp3", "ID3-song"}, {"sendVideo", "video", "clip.mp4", "mp4-bytes"},
	} {
		u := f.Uploads()[i]
		if u.Method != w.method || u.Field != w.field || u.Name != w.name || string(u.Data) != w.data || u.Fields["chat_id"] != "5" || u.Fields["caption"] != "" {
			t.Fatalf("upload %d = %s %s %s %q %v; want %+v", i, u.Method, u.Field, u.Name, u.Data, u.Fields, w)
		}
	}
	waitFor(t, "six rows sent", func() bool { return e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE state = 'sent'`) == 6 })
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE file != ''`); n != 5 {
		t.Fatalf("%d file rows, want 5", n)
	}
	sid := e.route(t, "telegram:dm:5")
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE session_id = ? AND role = 'assistant' AND content = ?`, sid, reply); n != 1 {
		t.Fatal("the transcript does not keep the reply as the model gave it")
	}
}

// A photo Telegram refuses (its dimensions) goes again as a document; a
// file over the 50 MB a bot may send is not uploaded; one the API finds
// too large (413) is given up at once; one gone by the time it is sent
// too. Each file given up is told to the chat.
func TestTelegramFileFailures(t *testing.T) {
	t.Parallel()
	p := files(t, map[string]string{"wide.png": "PNG", "mid.bin": strings.Repeat("x", 4096), "gone.pdf": "%PDF"})
	huge := filepath.Join(filepath.Dir(p["wide.png"]), "huge.zip")
	if err := os.WriteFile(huge, []byte("PK"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 51<<20); err != nil { // sparse: no 51 MB written
		t.Fatal(err)
	}
	e, _ := mediaEnv(t, "Files: MEDIA:"+p["wide.png"]+" MEDIA:"+huge+" MEDIA:"+p["mid.bin"]+" MEDIA:"+p["gone.pdf"])
	f := gatewaytest.NewTelegram(t, tgToken)
	f.Set(func(f *gatewaytest.Telegram) { f.PhotoInvalid, f.MaxUpload, f.Down = true, 2048, true })
	e.start(t, telegram(f, "5"))
	f.Push(5, "Ada", 5, "private", "send them")
	// The text cannot go while Telegram is down: the files wait behind it,
	// and one of them is removed meanwhile.
	waitFor(t, "the rows queued", func() bool { return e.count(t, `SELECT COUNT(*) FROM gateway_outbox`) == 5 })
	if err := os.Remove(p["gone.pdf"]); err != nil {
		t.Fatal(err)
	}
	f.Set(func(f *gatewaytest.Telegram) { f.Down = false })

	waitFor(t, "the text and three notices", func() bool { return len(f.SentTexts()) == 4 })
	got := f.SentTexts()
	if got[0] != "Files:" {
		t.Fatalf("text %q", got[0])
	}
	notices := strings.Join(got[1:], "\n")
	for _, w := range []string{
		"⚠️ Could not send huge.zip: it is 51.0 MB, larger than the 50.0 MB Telegram takes from a bot",
		"⚠️ Could not send mid.bin: telegram sendDocument: HTTP 413: larger than Telegram takes from a bot",
		"⚠️ Could not send gone.pdf: no such file or directory",
	} {
		if !strings.Contains(notices, w) {
			t.Fatalf("notices %q lack %q", notices, w)
		}
	}
	if u := f.Uploads(); len(u) != 1 || u[0].Method != "sendDocument" || u[0].Name != "wide.png" || string(u[0].Data) != "PNG" {
		t.Fatalf("uploads %+v, want the photo as a document", u)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM gateway_outbox WHERE state = 'failed' AND file != '' AND attempts = 1`); n != 3 {
		t.Fatalf("%d files given up after one attempt, want 3", n)
	}
}

// Files people send on Telegram: saved under the media folder for a
// sender let in, the agent told where in the familiar words (a photo's
// largest size; a small text document included; a PDF to read with its
// tools; a voice message with its length); one over the gateway's limit
// not fetched; a stranger's never fetched.
func TestTelegramSavesTheFilesPeopleSend(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "seen")
	e.maxInbound = 1024
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	photo := bytes.Repeat([]byte{0xff, 0xd8}, 300)

	f.PushFile(5, "Ada", 5, "private", "what is this?", "photo", map[string]any{"width": 800, "height": 600}, photo)
	waitFor(t, "the photo's turn", func() bool { return len(model.told()) == 1 })
	path, b := saved(t, filepath.Join(e.mediaDir, "telegram"))
	if !strings.HasSuffix(path, ".jpg") || !bytes.Equal(b, photo) {
		t.Fatalf("saved %s: not its largest size's bytes", path)
	}
	if got, want := model.told()[0], "[The user sent an image: '"+filepath.Base(path)[25:]+"'. It is saved at: "+path+
		".]\n\nwhat is this?"; got != want {
		t.Fatalf("the model was given\n%q\nwant\n%q", got, want)
	}

	f.PushFile(5, "Ada", 5, "private", "", "document", map[string]any{"file_name": "notes.txt", "mime_type": "text/plain"}, []byte("line one\nline two\n"))
	f.PushFile(5, "Ada", 5, "private", "summarize", "document", map[string]any{"file_name": "paper.pdf", "mime_type": "application/pdf"}, []byte("%PDF-1.7 ..."))
	f.PushFile(5, "Ada", 5, "private", "", "voice", map[string]any{"duration": 7, "mime_type": "audio/ogg"}, []byte("OggS"))
	f.PushFile(5, "Ada", 5, "private", "", "document", map[string]any{"file_name": "big.iso"}, bytes.Repeat([]byte("z"), 2000))
	waitFor(t, "four more turns", func() bool { return len(model.told()) == 5 })
	dir := filepath.Join(e.mediaDir, "telegram")
	seen := model.told()
	for i, want := range []string{
		"[The user sent a text document: 'notes.txt'. Its content has been included below. The file is also saved at: " + dir + "/",
		"[The user sent a document: 'paper.pdf'. It is saved at: " + dir + "/",
		"[The user sent a voice message: " + dir + "/",
		"[The user sent a file: 'big.iso' (2 KB). It was not saved: the gateway takes files up to 1 KB.]",
	} {
		if !strings.HasPrefix(seen[i+1], want) {
			t.Fatalf("message %d is %q, want it to start %q", i+1, seen[i+1], want)
		}
	}
	if !strings.HasSuffix(seen[1], "notes.txt]\n\nline one\nline two") || !strings.HasSuffix(seen[2], "instead of asking the user to paste the contents.]\n\nsummarize") ||
		!strings.HasSuffix(seen[3], ".ogg (duration: 0:07)]") {
		t.Fatalf("the notes: %q", seen[1:4])
	}
	if _, paths := savedFiles(t, dir); len(paths) != 4 || f.Downloads() != 4 {
		t.Fatalf("%d files saved, %d downloads; want 4 and 4 (not the one over the limit)", len(paths), f.Downloads())
	}

	// A stranger's file is never fetched.
	f.PushFile(666, "Mallory", 666, "private", "", "document", map[string]any{"file_name": "x.pdf"}, []byte("%PDF"))
	waitFor(t, "the refusal", func() bool { return len(f.SentTexts()) == 6 })
	if _, paths := savedFiles(t, dir); f.Downloads() != 4 || len(paths) != 4 {
		t.Fatal("a stranger's file was fetched")
	}
	if strings.Contains(e.logs.String(), tgToken) {
		t.Fatal("the bot token reached the log")
	}
}

// A platform that cannot carry files (the generic webhook) is sent a line
// naming each file's path, in the familiar gateway's words.
func TestWebhookIsToldTheFilesPath(t *testing.T) {
	t.Parallel()
	p := files(t, map[string]string{"chart.png": "PNG"})
	e, _ := mediaEnv(t, "The chart:\nMEDIA:"+p["chart.png"])
	recv := newReplyReceiver(t, "hook-secret", 0)
	wh := webhookAdapter(t, "hook-secret", recv.URL)
	e.start(t, gateway.Configured{Adapter: wh, Access: gateway.Access{Chats: []string{"room-1"}}})
	postSigned(t, wh, "hook-secret", map[string]any{"id": "m1", "user_id": "u1", "chat_id": "room-1", "text": "chart?"}, http.StatusAccepted)
	waitFor(t, "two replies", func() bool { return len(recv.replies()) == 2 })
	if r := recv.replies(); r[0].Text != "The chart:" || r[1].Text != "📎 File: "+p["chart.png"] {
		t.Fatalf("replies %+v", r)
	}
}

// An album (three photos sent together, each its own message sharing a
// media_group_id, the caption on one) is one message to the agent: one
// turn, the three photos' notes in order, then the caption; one reply.
func TestTelegramAlbumIsOneMessage(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "three cats")
	f := gatewaytest.NewTelegram(t, tgToken)
	c := telegram(f, "5")
	c.Adapter = gateway.NewTelegram(gateway.TelegramOptions{Token: tgToken, BaseURL: f.URL, PollTimeout: time.Second,
		RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond, AlbumWait: 300 * time.Millisecond})
	e.start(t, c)
	f.PushAlbum(5, "Ada", 5, "private", "album-1", "which is the fluffiest?", 1, []byte("cat-one"), []byte("cat-two"), []byte("cat-three"))
	waitFor(t, "the reply", func() bool { return len(f.SentTexts()) == 1 })
	told := model.told()
	if len(told) != 1 || strings.Count(told[0], "[The user sent an image: ") != 3 || !strings.HasSuffix(told[0], "]\n\nwhich is the fluffiest?") {
		t.Fatalf("the model was told %q", told)
	}
	data, paths := savedFiles(t, filepath.Join(e.mediaDir, "telegram"))
	if len(paths) != 3 {
		t.Fatalf("saved %v", paths)
	}
	var order []string
	for _, p := range strings.Split(told[0], "It is saved at: ")[1:] {
		path := p[:strings.Index(p, ".]")]
		for name, q := range paths {
			if q == path {
				order = append(order, string(data[name]))
			}
		}
	}
	if strings.Join(order, " ") != "cat-one cat-two cat-three" {
		t.Fatalf("the photos in the notes: %q", order)
	}
}
