package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The familiar agent's tts block loads as it is, every key Atrium reads
// without a warning; unset, the provider is the familiar default, edge,
// and each API has the familiar defaults.
func TestTTSBlockOfTheFamiliarAgent(t *testing.T) {
	t.Parallel()
	c, w, err := loadText(t, "")
	if err != nil || len(w) != 0 || c.TTS.Chosen("") != TTSEdge {
		t.Fatalf("defaults: %q %v %v", c.TTS.Chosen(""), w, err)
	}
	a, ok := c.TTS.API(TTSOpenAI, 0, envOf(map[string]string{"OPENAI_API_KEY": "sk-main", "VOICE_TOOLS_OPENAI_KEY": " sk-voice "}))
	want := TTSAPI{Provider: "openai", BaseURL: "https://api.openai.com/v1", Model: "gpt-4o-mini-tts", Voice: "alloy", Speed: 1, MaxText: 4096,
		KeyVars: []string{"VOICE_TOOLS_OPENAI_KEY", "OPENAI_API_KEY"}, Key: "sk-voice", KeyVar: "VOICE_TOOLS_OPENAI_KEY"}
	if !ok || !reflect.DeepEqual(a, want) {
		t.Fatalf("openai %+v, want %+v", a, want)
	}
	if a, _ := c.TTS.API(TTSOpenAI, 0, envOf(map[string]string{"OPENAI_API_KEY": "sk-main"})); a.Key != "sk-main" || a.KeyVar != "OPENAI_API_KEY" {
		t.Fatalf("OPENAI_API_KEY: %+v", a)
	}
	e, ok := c.TTS.API(TTSElevenLabs, 0, envOf(nil))
	want = TTSAPI{Provider: "elevenlabs", BaseURL: "https://api.elevenlabs.io", Model: "eleven_multilingual_v2", Voice: "pNInz6obpgDQGcFmaJgB",
		Speed: 1, MaxText: 10000, KeyVars: []string{"ELEVENLABS_API_KEY"}}
	if !ok || !reflect.DeepEqual(e, want) {
		t.Fatalf("elevenlabs %+v, want %+v", e, want)
	}
	if _, ok := c.TTS.API("edge", 0, envOf(nil)); ok {
		t.Fatal("edge is an API")
	}

	c, w, err = loadText(t, `tts:
  provider: Piper_Local
  speed: 1.25
  openai: {model: tts-1-hd, voice: nova, base_url: "http://127.0.0.1:8000/v1/", max_text_length: 2000}
  elevenlabs: {voice_id: v1, model_id: eleven_flash_v2_5, base_url: https://eu.elevenlabs.io}
  providers:
    piper_local:
      type: command
      command: piper -m {model} -f {output_path} < {input_path}
      timeout: 30
      output_format: .WAV
      voice: amy
      model: en_US-amy-medium
      env_passthrough: [HF_TOKEN]
      voice_compatible: "yes"
      max_text_length: 900
`)
	if err != nil || len(w) != 0 {
		t.Fatalf("load: %v %v", w, err)
	}
	if c.TTS.Chosen("") != "piper_local" || c.TTS.Chosen(" OpenAI ") != "openai" {
		t.Fatalf("chosen %q", c.TTS.Chosen(""))
	}
	spec, ok := c.TTS.CommandProvider("PIPER_LOCAL", 0)
	wantSpec := TTSCommandSpec{Name: "piper_local", Command: "piper -m {model} -f {output_path} < {input_path}", IdleTimeout: 30 * time.Second,
		Format: "wav", Passthrough: []string{"HF_TOKEN"}, Voice: "amy", Model: "en_US-amy-medium", Speed: "1.25", VoiceCompatible: true, MaxText: 900}
	if !ok || !reflect.DeepEqual(spec, wantSpec) {
		t.Fatalf("command provider %+v, want %+v", spec, wantSpec)
	}
	if spec, _ := c.TTS.CommandProvider("piper_local", 0.5); spec.Speed != "0.5" {
		t.Fatalf("the call's speed: %q", spec.Speed)
	}
	a, _ = c.TTS.API(TTSOpenAI, 0, envOf(nil))
	if a.BaseURL != "http://127.0.0.1:8000/v1" || a.Model != "tts-1-hd" || a.Voice != "nova" || a.Speed != 1.25 || a.MaxText != 2000 || a.Key != "" {
		t.Fatalf("openai: %+v", a)
	}
	if a, _ = c.TTS.API(TTSOpenAI, 9, envOf(nil)); a.Speed != 4 {
		t.Fatalf("a call's speed is held to 4: %v", a.Speed)
	}
	e, _ = c.TTS.API(TTSElevenLabs, 0, envOf(map[string]string{"ELEVENLABS_API_KEY": "el"}))
	if e.Voice != "v1" || e.Model != "eleven_flash_v2_5" || e.MaxText != 40000 || e.BaseURL != "https://eu.elevenlabs.io" || e.Key != "el" {
		t.Fatalf("elevenlabs: %+v", e)
	}
	if _, ok := c.TTS.CommandProvider("openai", 0); ok {
		t.Fatal("a built-in name is a command provider")
	}

	// The command provider's defaults; timeout_seconds and format as the
	// familiar agent also reads them.
	c, _, err = loadText(t, "tts:\n  provider: a\n  providers:\n    a: {command: x}\n    b: {command: y, timeout_seconds: \"2.5\", format: ogg}\n")
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := c.TTS.CommandProvider("a", 0); a.IdleTimeout != DefaultTTSCommandTimeout || a.Format != "mp3" || a.MaxText != 5000 || a.VoiceCompatible || a.Speed != "" {
		t.Fatalf("a: %+v", a)
	}
	if b, _ := c.TTS.CommandProvider("b", 0); b.IdleTimeout != 2500*time.Millisecond || b.Format != "ogg" {
		t.Fatalf("b: %+v", b)
	}
}

// What of the block Atrium does not do is said: the familiar's other
// providers, and keys it does not read.
func TestTTSWarnings(t *testing.T) {
	t.Parallel()
	_, w, err := loadText(t, "tts:\n  provider: edge\n  edge: {voice: en-US-AriaNeural}\n  openai: {speed_mode: local}\n")
	if err != nil || len(w) != 2 {
		t.Fatalf("%v %v", w, err)
	}
	if !strings.Contains(w[0], "not Atrium's, ignored: tts.edge, tts.openai.speed_mode") {
		t.Fatalf("unknown keys: %q", w[0])
	}
	if !strings.Contains(w[1], "tts.provider edge is the familiar agent's and not one Atrium speaks: text_to_speech is not offered until it is openai, elevenlabs or a command provider") {
		t.Fatalf("edge: %q", w[1])
	}
	for _, p := range []string{"nous", "Piper", "gemini"} {
		if _, w, err := loadText(t, "tts:\n  provider: "+p+"\n"); err != nil || len(w) != 1 {
			t.Fatalf("%s: %v %v", p, w, err)
		}
	}
}

// A block Atrium cannot follow is refused, saying what to change.
func TestTTSBlockRefused(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"tts:\n  provider: mine\n":                                                 `tts.provider "mine" is neither a built-in provider (openai, elevenlabs) nor a command provider declared under tts.providers.mine`,
		"tts:\n  providers:\n    mine: {type: command}\n":                          "tts.providers.mine.command is missing",
		"tts:\n  providers:\n    mine: {type: http, command: x}\n":                 `tts.providers.mine.type must be command, not "http"`,
		"tts:\n  providers:\n    mine: {command: x, timeout: 0}\n":                 "tts.providers.mine.timeout must be more than 0 and at most 86400 seconds, not 0",
		"tts:\n  providers:\n    mine: {command: x, timeout: soon}\n":              `tts.providers.mine.timeout "soon" is not a number of seconds`,
		"tts:\n  providers:\n    mine: {command: x, format: txt}\n":                `tts.providers.mine.format must be one of mp3, wav, ogg, flac, m4a, aac, amr, opus, not "txt"`,
		"tts:\n  providers:\n    mine: {command: x, voice_compatible: maybe}\n":    "tts.providers.mine.voice_compatible must be true or false, not maybe",
		"tts:\n  providers:\n    mine: {command: x, max_text_length: -5}\n":        "tts.providers.mine.max_text_length must be a whole number of characters above 0, not -5",
		"tts:\n  providers:\n    mine: {command: x, env_passthrough: [\"A B\"]}\n": `tts.providers.mine.env_passthrough: "A B" is not the name of an environment variable`,
		"tts:\n  providers:\n    openai: {command: x}\n":                           "tts.providers.openai: openai is a built-in provider's name",
		"tts:\n  providers:\n    Edge: {command: x}\n":                             "tts.providers.Edge: edge is a built-in provider's name",
		"tts:\n  providers:\n    \"a b\": {command: x}\n":                          `tts.providers: "a b" is no name for a provider`,
		"tts:\n  speed: 9\n":                            "tts.speed must be a number from 0.25 to 4 (1 is normal), not 9",
		"tts:\n  openai: {speed: fast}\n":               "tts.openai.speed must be a number from 0.25 to 4",
		"tts:\n  openai: {max_text_length: 1.5}\n":      "tts.openai.max_text_length must be a whole number of characters above 0, not 1.5",
		"tts:\n  openai: {base_url: api.example}\n":     "tts.openai.base_url",
		"tts:\n  elevenlabs: {base_url: \"ftp://x\"}\n": "tts.elevenlabs.base_url",
	} {
		if _, _, err := loadText(t, text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}
