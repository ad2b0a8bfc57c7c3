package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"atrium/backend/tools"
)

// newSession is the line a chat starts with.
var newSession = regexp.MustCompile(`\(new session ([0-9a-f-]+)\)`)

// A chat has text spoken with text_to_speech: by a command provider (a
// real script writing an Ogg file, a voice message) and by OpenAI (a
// loopback server standing for its API, MP3 at a terminal); the files
// hold what each made, in the profile's cache/audio, and the media tag
// names them. `atrium tools` says why it is not offered before either
// can speak.
func TestTextToSpeechFromAChat(t *testing.T) {
	t.Parallel()
	home, work := t.TempDir(), t.TempDir()
	noKeys := []string{"OPENAI_API_KEY=", "VOICE_TOOLS_OPENAI_KEY=", "ELEVENLABS_API_KEY="}
	offered := func() string {
		t.Helper()
		var out []struct {
			Name    string `json:"name"`
			Toolset string `json:"toolset"`
			Offered bool   `json:"offered"`
			Why     string `json:"why"`
		}
		mustJSON(t, atriumExec(t, home, "", noKeys, "tools", "--json"), &out)
		for _, s := range out {
			if s.Name == tools.TextToSpeechTool && s.Toolset == "tts" {
				return fmt.Sprintf("%v %s", s.Offered, s.Why)
			}
		}
		t.Fatal("text_to_speech is not listed in toolset tts")
		return ""
	}
	if got := offered(); !strings.HasPrefix(got, "false text_to_speech: no text-to-speech provider is available: the TTS provider is edge, the familiar agent's default") {
		t.Fatalf("the familiar default: %q", got)
	}
	speak := func(env []string, args map[string]any) map[string]any {
		t.Helper()
		raw, _ := json.Marshal(args)
		r := atriumExec(t, home, "use tool text_to_speech: "+string(raw)+"\n", env, "chat")
		id := newSession.FindStringSubmatch(r.stdout)
		if r.code != 0 || id == nil || !strings.Contains(r.stdout, "The tool text_to_speech returned: ") {
			t.Fatalf("the chat: %+v", r)
		}
		// The chat shows the start of the result; the session keeps it
		// whole.
		var msgs []struct {
			Role, Content string
		}
		mustJSON(t, atriumExec(t, home, "", nil, "messages", "list", id[1], "--json"), &msgs)
		var out map[string]any
		for _, m := range msgs {
			if m.Role == "tool" {
				if err := json.Unmarshal([]byte(m.Content), &out); err != nil {
					t.Fatalf("%s: %v", m.Content, err)
				}
			}
		}
		return out
	}

	// A command provider: the text in a file, the audio at
	// {output_path}.
	sh := filepath.Join(work, "speak.sh")
	if err := os.WriteFile(sh, []byte("#!/bin/sh\nprintf 'OggS voice of: ' > \"$2\"\ncat \"$1\" >> \"$2\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "tts:\n  provider: my_voice\n  providers:\n    my_voice:\n      type: command\n      command: " + sh + " {input_path} {output_path}\n      format: ogg\n      voice_compatible: true\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := offered(); got != "true " {
		t.Fatalf("with a command provider: %q", got)
	}
	res := speak(noKeys, map[string]any{"text": "Hello from the chat, it's $(whoami)"})
	path, _ := res["file_path"].(string)
	if filepath.Dir(path) != filepath.Join(home, "cache", "audio") || !strings.HasPrefix(filepath.Base(path), "tts_") || filepath.Ext(path) != ".ogg" {
		t.Fatalf("the file: %v", res)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "OggS voice of: Hello from the chat, it's $(whoami)" {
		t.Fatalf("the file holds %q (%v)", b, err)
	}
	if res["media_tag"] != "[[audio_as_voice]]\nMEDIA:"+path || res["voice_compatible"] != true || res["provider"] != "my_voice" || res["success"] != true {
		t.Fatalf("the result: %v", res)
	}

	// OpenAI, its key in the profile's .env: at a terminal, MP3.
	var mu sync.Mutex
	var asked []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		body["_auth"], body["_path"] = r.Header.Get("Authorization"), r.URL.Path
		mu.Lock()
		asked = append(asked, body)
		mu.Unlock()
		_, _ = w.Write([]byte("ID3 the server's mp3"))
	}))
	defer srv.Close()
	cfg = "tts:\n  provider: openai\n  openai:\n    base_url: " + srv.URL + "/v1\n    voice: echo\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := offered(); !strings.Contains(got, "false text_to_speech: no text-to-speech provider is available: the TTS provider is openai, but neither VOICE_TOOLS_OPENAI_KEY nor OPENAI_API_KEY is set") {
		t.Fatalf("no key: %q", got)
	}
	if err := os.WriteFile(filepath.Join(home, ".env"), []byte("VOICE_TOOLS_OPENAI_KEY=sk-voice-test\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// (The key is the .env's: none exported in its place.)
	res = speak([]string{"OPENAI_API_KEY="}, map[string]any{"text": "Read aloud.", "output_path": filepath.Join(work, "aloud.mp3")})
	if res["file_path"] != filepath.Join(work, "aloud.mp3") || res["media_tag"] != "MEDIA:"+filepath.Join(work, "aloud.mp3") || res["voice_compatible"] != false {
		t.Fatalf("openai: %v", res)
	}
	if b, err := os.ReadFile(filepath.Join(work, "aloud.mp3")); err != nil || string(b) != "ID3 the server's mp3" {
		t.Fatalf("the file holds %q (%v)", b, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0]["_path"] != "/v1/audio/speech" || asked[0]["_auth"] != "Bearer sk-voice-test" || asked[0]["input"] != "Read aloud." ||
		asked[0]["voice"] != "echo" || asked[0]["model"] != "gpt-4o-mini-tts" || asked[0]["response_format"] != "mp3" {
		t.Fatalf("the API was asked %v", asked)
	}
}
