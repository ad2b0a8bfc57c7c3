package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"atrium/backend/gateway"
	"atrium/backend/gateway/gatewaytest"
	"atrium/backend/hooks"
)

// fakeEars is a Transcribe that hears what a test's audio bytes say, and
// keeps the paths it was given.
type fakeEars struct {
	mu    sync.Mutex
	paths []string
}

func (f *fakeEars) transcribe(_ context.Context, path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	f.paths = append(f.paths, path)
	f.mu.Unlock()
	switch string(b) {
	case "OggS-lights":
		return "turn on the lights", nil
	case "OggS-noise":
		return "", errors.New("groq transcription failed: HTTP 503 (the provider failed: try again later): overloaded")
	case "OggS-off":
		return "", fmt.Errorf("stt: %w", gateway.ErrTranscriptionOff)
	}
	return "", fmt.Errorf("unexpected audio %q", b)
}

func (f *fakeEars) heard() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.paths)
}

// userMessages are the user messages of every session, in order.
func (e *env) userMessages(t *testing.T) []string {
	t.Helper()
	var out []string
	if err := e.db.Read.Raw(`SELECT content FROM messages WHERE role = 'user' ORDER BY id`).Scan(&out).Error; err != nil {
		t.Fatal(err)
	}
	return out
}

// A voice message is transcribed before the agent reads it: the agent is
// told what was said in the familiar gateway's words, the chat is sent it
// back before the answer, and the transcript keeps only the person's
// message. A transcription that fails still reaches the agent, told it
// could not be made; speech-to-text turned off since the start leaves the
// note of the file; an audio file (not a voice message) is not
// transcribed, nor a stranger's voice message fetched.
func TestVoiceMessagesAreTranscribed(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "")
	ears := &fakeEars{}
	e.transcribe, e.echo = ears.transcribe, true
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	dir := filepath.Join(e.mediaDir, "telegram")

	f.PushFile(5, "Ada", 5, "private", "please", "voice", map[string]any{"duration": 3, "mime_type": "audio/ogg"}, []byte("OggS-lights"))
	waitFor(t, "the echo and the answer", func() bool { return len(f.SentTexts()) == 2 })
	heard := `[The user sent a voice message~ Here's what they said: "turn on the lights"]` + "\n\nplease"
	if got := model.told(); len(got) != 1 || got[0] != heard {
		t.Fatalf("the agent was told %q, want %q", got, heard)
	}
	sent := f.SentTexts()
	if sent[0] != `🎙️ "turn on the lights"` || strings.Contains(sent[1], "🎙️") {
		t.Fatalf("the chat was sent %q", sent)
	}
	if p := ears.heard(); len(p) != 1 || filepath.Dir(p[0]) != dir || !strings.HasSuffix(p[0], ".ogg") {
		t.Fatalf("transcribed %q, want the saved file in %s", p, dir)
	}
	if got := e.userMessages(t); len(got) != 1 || got[0] != heard {
		t.Fatalf("the transcript's user messages %q", got)
	}
	if n := e.count(t, `SELECT COUNT(*) FROM messages WHERE content LIKE '%🎙️%'`); n != 0 {
		t.Fatal("the echo was stored as the agent's words")
	}

	f.PushFile(5, "Ada", 5, "private", "", "voice", map[string]any{"duration": 2, "mime_type": "audio/ogg"}, []byte("OggS-noise"))
	waitFor(t, "the answer to the voice message not heard", func() bool { return len(f.SentTexts()) == 3 })
	if got := model.lastAsked(); got != "[voice message could not be transcribed]" {
		t.Fatalf("the agent was told %q", got)
	}
	if strings.Contains(f.SentTexts()[2], "🎙️") {
		t.Fatalf("a failure was echoed: %q", f.SentTexts())
	}
	if logs := e.logs.String(); !strings.Contains(logs, "a voice message could not be transcribed") || !strings.Contains(logs, "overloaded") {
		t.Fatalf("the failure's reason is not in the log:\n%s", logs)
	}

	f.PushFile(5, "Ada", 5, "private", "", "voice", map[string]any{"duration": 75, "mime_type": "audio/ogg"}, []byte("OggS-off"))
	f.PushFile(5, "Ada", 5, "private", "", "audio", map[string]any{"file_name": "song.mp3", "mime_type": "audio/mpeg"}, []byte("ID3-song"))
	waitFor(t, "two more answers", func() bool { return len(f.SentTexts()) == 5 })
	told := model.told()
	if !strings.HasPrefix(told[2], "[The user sent a voice message: "+dir+"/") || !strings.HasSuffix(told[2], ".ogg (duration: 1:15)]") {
		t.Fatalf("speech-to-text off: the agent was told %q", told[2])
	}
	if !strings.HasPrefix(told[3], "[The user sent an audio file: 'song.mp3'. It is saved at: "+dir+"/") {
		t.Fatalf("an audio file: the agent was told %q", told[3])
	}
	if n := len(ears.heard()); n != 3 {
		t.Fatalf("%d transcriptions, want 3 (the audio file is not one)", n)
	}

	// A stranger's voice message is neither fetched nor transcribed.
	downloads := f.Downloads()
	f.PushFile(666, "Mallory", 666, "private", "", "voice", map[string]any{"mime_type": "audio/ogg"}, []byte("OggS-lights"))
	waitFor(t, "the refusal", func() bool { return len(f.SentTexts()) == 6 })
	if f.Downloads() != downloads || len(ears.heard()) != 3 {
		t.Fatal("a stranger's voice message was fetched or transcribed")
	}
}

// Without stt_echo_transcripts the chat gets the answer alone.
func TestVoiceTranscriptNotEchoed(t *testing.T) {
	t.Parallel()
	e, model := mediaEnv(t, "On it.")
	ears := &fakeEars{}
	e.transcribe = ears.transcribe
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	f.PushFile(5, "Ada", 5, "private", "", "voice", map[string]any{"mime_type": "audio/ogg"}, []byte("OggS-lights"))
	waitFor(t, "the answer", func() bool { return len(f.SentTexts()) == 1 })
	if got := f.SentTexts()[0]; got != "On it." {
		t.Fatalf("the chat was sent %q", got)
	}
	if got := model.lastAsked(); got != `[The user sent a voice message~ Here's what they said: "turn on the lights"]` {
		t.Fatalf("the agent was told %q", got)
	}
}

// A message pre_gateway_dispatch skips is not transcribed: only what is
// let through is.
func TestVoiceMessageSkippedIsNotTranscribed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 8192, 0.9, func(bus *hooks.Bus) {
		if _, err := bus.RegisterSync("guard", hooks.PreGatewayDispatch, func(_ context.Context, raw json.RawMessage) (any, error) {
			var p hooks.GatewayDispatchPayload
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			if strings.Contains(p.Event.Text, "spam") {
				return map[string]any{"action": "skip", "reason": "spam"}, nil
			}
			return map[string]any{"action": "allow"}, nil
		}); err != nil {
			t.Fatal(err)
		}
	})
	e.mediaDir = filepath.Join(t.TempDir(), "media")
	ears := &fakeEars{}
	e.transcribe, e.echo = ears.transcribe, true
	f := gatewaytest.NewTelegram(t, tgToken)
	e.start(t, telegram(f, "5"))
	f.PushFile(5, "Ada", 5, "private", "buy spam", "voice", map[string]any{"mime_type": "audio/ogg"}, []byte("OggS-lights"))
	f.PushFile(5, "Ada", 5, "private", "and this", "voice", map[string]any{"mime_type": "audio/ogg"}, []byte("OggS-lights"))
	waitFor(t, "the echo and answer of the second", func() bool { return len(f.SentTexts()) == 2 })
	if len(ears.heard()) != 1 || f.Downloads() != 1 {
		t.Fatalf("%d transcribed, %d downloads: want the one let through", len(ears.heard()), f.Downloads())
	}
	if got := e.userMessages(t); len(got) != 1 || got[0] != `[The user sent a voice message~ Here's what they said: "turn on the lights"]`+"\n\nand this" {
		t.Fatalf("the transcript's user messages %q", got)
	}
}
