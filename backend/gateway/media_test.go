package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseMedia(t *testing.T) {
	for _, c := range []struct {
		name, in, cleaned string
		paths             []string
		voice             []bool
		asDoc             bool
	}{
		{"none", "just text", "just text", nil, nil, false},
		{"the familiar TTS tool's", "[[audio_as_voice]]\nMEDIA:/tmp/tts_1.ogg", "", []string{"/tmp/tts_1.ogg"}, []bool{true}, false},
		{"after text", "Here is the chart.\n\nMEDIA:/tmp/chart.png", "Here is the chart.", []string{"/tmp/chart.png"}, []bool{false}, false},
		{"inline with punctuation", "See MEDIA:/tmp/a.png, and MEDIA: /tmp/b.pdf.", "See , and .", []string{"/tmp/a.png", "/tmp/b.pdf"}, []bool{false, false}, false},
		{"quoted", "Saved: \"MEDIA:/tmp/my report.pdf\" there", "Saved:  there", []string{"/tmp/my report.pdf"}, []bool{false}, false},
		{"backticked path", "MEDIA:`/tmp/x y.csv`", "", []string{"/tmp/x y.csv"}, []bool{false}, false},
		{"bare path with a space", "MEDIA:/tmp/my photos/cat.jpg is the cat", "is the cat", []string{"/tmp/my photos/cat.jpg"}, []bool{false}, false},
		{"home", "MEDIA:~/out/a.mp3 [[audio_as_voice]]", "", []string{"~/out/a.mp3"}, []bool{true}, false},
		{"voice only for audio", "[[audio_as_voice]] MEDIA:/tmp/a.png MEDIA:/tmp/b.opus", "", []string{"/tmp/a.png", "/tmp/b.opus"}, []bool{false, true}, false},
		{"as document", "[[as_document]]\nMEDIA:/tmp/big.png", "", []string{"/tmp/big.png"}, []bool{false}, true},
		{"once each", "MEDIA:/tmp/a.png\nMEDIA:/tmp/a.png", "", []string{"/tmp/a.png"}, []bool{false}, false},
		{"in a code block", "Write it as:\n```\nMEDIA:/tmp/a.png\n```", "Write it as:\n```\nMEDIA:/tmp/a.png\n```", nil, nil, false},
		{"empty tag", "MEDIA: \nok", "MEDIA: \nok", nil, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			refs, cleaned, asDoc := ParseMedia(c.in)
			var paths []string
			var voice []bool
			for _, r := range refs {
				paths = append(paths, r.Path)
				voice = append(voice, r.Voice)
			}
			if !reflect.DeepEqual(paths, c.paths) || !reflect.DeepEqual(voice, c.voice) || cleaned != c.cleaned || asDoc != c.asDoc {
				t.Fatalf("ParseMedia(%q) = %q %v %q %v; want %q %v %q %v", c.in, paths, voice, cleaned, asDoc, c.paths, c.voice, c.cleaned, c.asDoc)
			}
		})
	}
}

func TestSplitReply(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	chart, voice, doc, env := write("chart.png", "png"), write("note.ogg", "ogg"), write("r.pdf", "pdf"), write(".env", "SECRET=1")
	if err := os.WriteFile(filepath.Join(dir, "empty.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	base := Outbound{Platform: "telegram", ChatID: "1", ReplyTo: "9", SessionID: "s", Origin: "reply"}

	o := base
	o.Text = "Done.\nMEDIA:" + chart + "\n[[audio_as_voice]]\nMEDIA:" + voice + "\nMEDIA:" + doc + "\nMEDIA:" + filepath.Join(dir, "gone.png") +
		"\nMEDIA:" + dir + "\nMEDIA:" + env + "\nMEDIA:" + filepath.Join(dir, "empty.txt")
	got := SplitReply(o, MediaPolicy{Denied: []string{env}})
	if len(got) != 4 {
		t.Fatalf("got %d messages, want the text and 3 files: %+v", len(got), got)
	}
	want := "Done.\n\n⚠️ Could not send gone.png: no such file\n⚠️ Could not send " + filepath.Base(dir) +
		": it is a folder\n⚠️ Could not send .env: it holds the profile's configuration or secrets\n⚠️ Could not send empty.txt: it is empty"
	if got[0].Text != want || got[0].File != nil {
		t.Fatalf("text = %q, want %q", got[0].Text, want)
	}
	for i, w := range []OutFile{{Path: chart, Name: "chart.png", Kind: KindImage, Size: 3}, {Path: voice, Name: "note.ogg", Kind: KindVoice, Size: 3},
		{Path: doc, Name: "r.pdf", Kind: KindDocument, Size: 3}} {
		f := got[i+1]
		if f.File == nil || *f.File != w || f.Text != "" || f.ChatID != "1" || f.ReplyTo != "9" || f.SessionID != "s" || f.Origin != "reply" {
			t.Fatalf("file %d = %+v %+v, want %+v", i, f, f.File, w)
		}
	}

	o = base
	o.Text = "[[as_document]] MEDIA:" + chart
	got = SplitReply(o, MediaPolicy{})
	if len(got) != 1 || got[0].File == nil || got[0].File.Kind != KindDocument {
		t.Fatalf("an image as a document: %+v", got)
	}

	o = base
	o.Text = "no tags here"
	if got := SplitReply(o, MediaPolicy{}); len(got) != 1 || !reflect.DeepEqual(got[0], o) {
		t.Fatalf("a reply without tags changed: %+v", got)
	}
}

func TestSafeFileName(t *testing.T) {
	for in, want := range map[string]string{
		"report.pdf":                      "report.pdf",
		"../../etc/passwd":                "passwd",
		`C:\Users\x\photo.jpg`:            "photo.jpg",
		"a\x00b:c?.txt":                   "a_b_c_.txt",
		"..":                              "file",
		"":                                "file",
		strings.Repeat("é", 150) + ".png": strings.Repeat("é", 96) + ".png",
	} {
		if got := SafeFileName(in); got != want {
			t.Errorf("SafeFileName(%q) = %q, want %q", in, got, want)
		}
	}
}

// What the agent is told of a file that could not be saved, and that a
// partial file is never left behind; old saved files are pruned.
func TestReceiveFileFailures(t *testing.T) {
	dir := t.TempDir()
	s := &Service{o: Options{MediaDir: dir, MaxInboundFile: 1024}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	body := func(data string) func(context.Context) (io.ReadCloser, error) {
		return func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(data)), nil }
	}
	ctx := context.Background()
	for _, c := range []struct {
		f    InFile
		want string
	}{
		{InFile{Name: "a.pdf", Fetch: func(context.Context) (io.ReadCloser, error) {
			return nil, errors.New("telegram getFile: 400 Bad Request")
		}},
			"[The user sent a file: 'a.pdf'. It could not be saved: telegram getFile: 400 Bad Request.]"},
		{InFile{Name: "b.bin", Fetch: body(strings.Repeat("x", 1025))}, // the platform did not say its size
			"[The user sent a file: 'b.bin' (over 1 KB). It was not saved: the gateway takes files up to 1 KB.]"},
		{InFile{Name: "c.txt", Fetch: body("")}, "[The user sent a file: 'c.txt'. It could not be saved: the platform sent an empty file.]"},
		{InFile{Name: "d.png"}, "[The user sent a file: 'd.png'. It could not be fetched from telegram.]"},
	} {
		if got := s.receiveFile(ctx, "telegram", c.f); got != c.want {
			t.Errorf("%s: %q, want %q", c.f.Name, got, c.want)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "telegram")); len(ents) != 0 {
		t.Fatalf("partial files left: %v", ents)
	}
	none := &Service{o: Options{}, log: s.log}
	if got := none.receiveFile(ctx, "telegram", InFile{Name: "e.png", Fetch: body("x")}); got != "[The user sent a file: 'e.png'. It was not saved: this gateway keeps no files.]" {
		t.Fatalf("without a media folder: %q", got)
	}

	// A binary file that claims to be text is not included.
	got := s.receiveFile(ctx, "telegram", InFile{Name: "f.txt", MIME: "text/plain", Fetch: body("a\x00b")})
	if !strings.HasPrefix(got, "[The user sent a document: 'f.txt'.") {
		t.Fatalf("a NUL in a text file: %q", got)
	}
	old := filepath.Join(dir, "telegram", "old.bin")
	if err := os.WriteFile(old, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-MediaKept - time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	if n, err := pruneMedia(dir, time.Now().Add(-MediaKept)); n != 1 || err != nil {
		t.Fatalf("pruned %d, %v; want the old file only", n, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "telegram")); len(ents) != 1 {
		t.Fatalf("left %v, want the new file", ents)
	}
}

// Which files a reply may send, as the familiar gateway decides it: a
// relative path never; by default anything but a system folder, a
// credentials folder of the home (a symbolic link followed) and the
// profile's own files, unless it is in an allowed folder; in strict mode
// only an allowed folder or a file just made.
func TestMediaPolicy(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	write := func(p, data string) string {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key := write(filepath.Join(home, ".ssh", "id_ed25519"), "KEY")
	cloud := write(filepath.Join(home, ".config", "gcloud", "token.json"), "TOKEN")
	media := write(filepath.Join(home, ".config", "atrium", "cache", "gateway", "telegram", "photo.jpg"), "JPEG")
	report := write(filepath.Join(work, "report.pdf"), "%PDF")
	old := write(filepath.Join(work, "old.csv"), "a,b")
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	env := write(filepath.Join(work, "profile", ".env"), "SECRET=1")
	link := filepath.Join(work, "innocent.txt")
	if err := os.Symlink(key, link); err != nil {
		t.Fatal(err)
	}
	base := MediaPolicy{Home: home, Allowed: []string{filepath.Dir(filepath.Dir(media))}, Denied: []string{filepath.Dir(env)}}
	strict := base
	strict.Strict, strict.Recent = true, 10*time.Minute
	noTrust := strict
	noTrust.Recent = 0
	homeAllowed := MediaPolicy{Home: home, Allowed: []string{"~/.config/atrium"}} // as media_delivery_allow_dirs writes it
	for _, c := range []struct {
		policy MediaPolicy
		path   string
		want   string // "" sent
	}{
		{base, report, ""},
		{base, old, ""},
		{base, "~/.ssh/id_ed25519", "files are never sent from ~/.ssh, where credentials are kept"},
		{base, cloud, "files are never sent from ~/.config, where credentials are kept"},
		{base, link, "files are never sent from ~/.ssh, where credentials are kept"},
		{base, media, ""}, // allowed, though under ~/.config
		{base, env, "it holds the profile's configuration or secrets"},
		{base, "/etc/passwd", "files are never sent from /etc"},
		{base, "notes/report.pdf", "notes/report.pdf is not an absolute path"},
		{strict, report, ""}, // just made
		{strict, old, "gateway.strict sends only files in the profile's media folder or gateway.media_delivery_allow_dirs, or made in the last 10 minutes"},
		{strict, media, ""},
		{strict, key, "files are never sent from ~/.ssh, where credentials are kept"},
		{noTrust, report, "gateway.strict sends only files in the profile's media folder or gateway.media_delivery_allow_dirs"},
		{homeAllowed, media, ""},
		{homeAllowed, cloud, "files are never sent from ~/.config, where credentials are kept"},
	} {
		_, err := c.policy.outFile(mediaRef{Path: c.path}, false)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("strict=%v %s: %q, want %q", c.policy.Strict, c.path, got, c.want)
		}
	}
	if f, err := base.outFile(mediaRef{Path: "file://" + report}, false); err != nil || f.Path != report || f.Name != "report.pdf" {
		t.Fatalf("a file:// path: %+v %v", f, err)
	}
}
