package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// runSpeech runs text_to_speech with args in dir on platform, its result
// as the model reads it.
func runSpeech(t *testing.T, s Settings, dir, platform string, args map[string]any) map[string]any {
	t.Helper()
	var tool Tool
	for _, x := range All() {
		if x.Name == TextToSpeechTool {
			tool = x
		}
	}
	out := tool.Run(context.Background(), &Call{Args: args, Dir: dir, Settings: s, Platform: platform})
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	return m
}

// The familiar result: the file, the MEDIA: tag the reply hands on (with
// [[audio_as_voice]] for a voice message), the provider, and the parts of
// a long text; the request is the model's arguments, the conversation's
// platform, and the file asked for taken from the conversation's folder.
func TestTextToSpeech(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	var got SpeechRequest
	answer := SpeechResult{Paths: []string{"/audio/tts_1.ogg"}, Provider: "openai", VoiceCompatible: true, Chunks: 1, Platform: "telegram",
		MaxFileBytes: 50 << 20, TargetFileBytes: 44564480}
	s := Settings{Speech: Speech{Speak: func(_ context.Context, req SpeechRequest) (SpeechResult, error) {
		got = req
		return answer, nil
	}}}
	res := runSpeech(t, s, dir, "telegram", map[string]any{"text": "Hello", "output_path": "out/reply.ogg", "speed": "1.5",
		"instructions": "calm", "provider": "openai"})
	want := map[string]any{"success": true, "file_path": "/audio/tts_1.ogg", "file_paths": []any{"/audio/tts_1.ogg"},
		"media_tag": "[[audio_as_voice]]\nMEDIA:/audio/tts_1.ogg", "provider": "openai", "voice_compatible": true, "chunk_count": 1.0,
		"delivery_file_count": 1.0, "combined_chunks": false,
		"delivery_profile": map[string]any{"platform": "telegram", "max_file_bytes": float64(50 << 20), "target_file_bytes": 44564480.0}}
	if !reflect.DeepEqual(res, want) {
		t.Fatalf("result %v\nwant %v", res, want)
	}
	if got.Text != "Hello" || got.OutputPath != filepath.Join(dir, "out", "reply.ogg") || got.Speed != 1.5 || got.Instructions != "calm" ||
		got.Provider != "openai" || got.Platform != "telegram" || got.Check == nil {
		t.Fatalf("request %+v", got)
	}

	// Not a voice message: the tag alone; parts: a tag each.
	answer = SpeechResult{Paths: []string{"/a/x.part01.mp3", "/a/x.part02.mp3"}, Provider: "mine", Chunks: 2}
	res = runSpeech(t, s, dir, "cli", map[string]any{"text": "Long", "speed": 9})
	if res["media_tag"] != "MEDIA:/a/x.part01.mp3\nMEDIA:/a/x.part02.mp3" || res["voice_compatible"] != false || res["delivery_file_count"] != 2.0 ||
		got.Speed != 4 || got.OutputPath != "" || got.Platform != "cli" {
		t.Fatalf("%v %+v", res, got)
	}

	// What fails is said.
	s.Speech.Speak = func(context.Context, SpeechRequest) (SpeechResult, error) {
		return SpeechResult{}, errors.New("TTS generation failed (openai): HTTP 500")
	}
	if res := runSpeech(t, s, dir, "cli", map[string]any{"text": "x"}); res["success"] != false || res["error"] != "TTS generation failed (openai): HTTP 500" {
		t.Fatal(res)
	}
}

// Bad input is refused before a provider is asked: no text, a speed that
// is no number, a path climbing out with .., the profile's own files (a
// link to one too); and with no provider, why.
func TestTextToSpeechRefuses(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	profile := realDir(t)
	cfg, env := filepath.Join(profile, "config.yaml"), filepath.Join(profile, ".env")
	for _, f := range []string{cfg, env} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(cfg, filepath.Join(dir, "voice.mp3")); err != nil {
		t.Fatal(err)
	}
	asked := false
	s := Settings{Protected: []string{cfg, env, filepath.Join(profile, "state.db")}, Secrets: []string{env},
		Speech: Speech{Speak: func(context.Context, SpeechRequest) (SpeechResult, error) { asked = true; return SpeechResult{}, nil }}}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"text": "  "}, "Text is required"},
		{map[string]any{}, "Text is required"},
		{map[string]any{"text": "hi", "speed": "fast"}, "speed must be a number from 0.25 to 4.0, not fast"},
		{map[string]any{"text": "hi", "output_path": "../up.mp3"}, "output_path contains '..' traversal component: ../up.mp3. Use an absolute path or one relative to the current directory without '..'."},
		{map[string]any{"text": "hi", "output_path": cfg}, "output_path targets a protected credential or system path: " + cfg + ". Choose a normal audio output location."},
		{map[string]any{"text": "hi", "output_path": env}, "output_path targets a protected credential or system path"},
		{map[string]any{"text": "hi", "output_path": filepath.Join(profile, "state.db-wal")}, "output_path targets a protected credential or system path"},
		{map[string]any{"text": "hi", "output_path": "voice.mp3"}, "output_path targets a protected credential or system path: " + filepath.Join(dir, "voice.mp3")},
	} {
		res := runSpeech(t, s, dir, "cli", c.args)
		if res["success"] != false || !strings.HasPrefix(res["error"].(string), c.want) {
			t.Errorf("%v: %v, want %q", c.args, res, c.want)
		}
	}
	if asked {
		t.Fatal("a provider was asked")
	}
	// The check handed to the provider refuses the same files (a part's
	// name, an extension changed).
	if err := s.audioWritable(cfg); err == nil {
		t.Fatal("the check lets config.yaml be written")
	}
	if err := s.audioWritable(filepath.Join(dir, "fine.mp3")); err != nil {
		t.Fatal(err)
	}

	s.Speech = Speech{Unavailable: "the TTS provider is edge, which Atrium does not have"}
	if res := runSpeech(t, s, dir, "cli", map[string]any{"text": "hi"}); res["error"] != "the TTS provider is edge, which Atrium does not have" {
		t.Fatal(res)
	}
	if p := (Speech{}).Problem(); !strings.Contains(p, "text_to_speech needs a TTS provider") {
		t.Fatal(p)
	}
}
