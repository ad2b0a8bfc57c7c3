package tools

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The familiar agent's text_to_speech: the model has text spoken into an
// audio file, and hands the reply the MEDIA: tag that sends it (with
// [[audio_as_voice]], on Telegram as a voice message). The person chooses
// the provider and the voice in config.yaml's tts block; the model sends
// the text. Its description is the familiar one but for a sentence that is
// not Atrium's (the familiar CLI saves to ~/voice-memos/; Atrium keeps the
// audio in the profile's audio folder everywhere).

// TextToSpeechTool is the tool's name; its toolset is tts.
const TextToSpeechTool = "text_to_speech"

// Speech is how text_to_speech reaches a provider that speaks (the stack
// wires it from config.yaml's tts block).
type Speech struct {
	// Unavailable says why no provider can speak here (the one chosen is
	// not Atrium's, or its key is not set).
	Unavailable string
	// Speak speaks a request into audio files.
	Speak func(ctx context.Context, req SpeechRequest) (SpeechResult, error)
}

// SpeechRequest is what to speak, and how.
type SpeechRequest struct {
	Text string
	// OutputPath is the file asked for (absolute; "": the profile's audio
	// folder).
	OutputPath   string
	Provider     string  // the provider the model names ("": tts.provider)
	Speed        float64 // 0: as config.yaml says
	Instructions string
	// Platform is the conversation's (telegram takes Ogg/Opus voice
	// messages).
	Platform string
	// Check refuses a file the audio may not be written to.
	Check func(path string) error
}

// SpeechResult is the audio spoken: its files (more than one for a long
// text spoken in parts), whether they may go as a voice message, and the
// most the platform takes of a file.
type SpeechResult struct {
	Paths           []string
	Provider        string
	VoiceCompatible bool
	Chunks          int
	Platform        string
	MaxFileBytes    int64
	TargetFileBytes int64
}

// Problem says why text_to_speech is not offered ("" when it is).
func (s Speech) Problem() string {
	switch {
	case s.Unavailable != "":
		return s.Unavailable
	case s.Speak == nil:
		return "text_to_speech needs a TTS provider: tts.provider openai or elevenlabs with its key, or a command provider of tts.providers"
	}
	return ""
}

func textToSpeechTool() Tool {
	return Tool{Name: TextToSpeechTool, Toolset: "tts", run: func(ctx context.Context, c *Call) any { return c.textToSpeech(ctx) },
		Description: "Convert text to speech audio. Returns a MEDIA: path that the platform delivers as native audio. Compatible providers render as a voice bubble on Telegram; " +
			"otherwise audio is sent as a regular attachment. Voice and provider are user-configured (built-in providers like edge/openai " +
			"or custom command providers under tts.providers.<name>), not model-selected.",
		Parameters: `{"type":"object","properties":{` +
			`"text":{"type":"string","description":"The text to convert to speech. Provider-specific per-request character caps apply automatically (OpenAI 4096, xAI 15000, MiniMax 10000, ElevenLabs 5k-40k depending on model); longer input is split into ordered chunks without silent truncation."},` +
			`"output_path":{"type":"string","description":"Optional custom file path to save the audio. Defaults to the profile HERMES_HOME/audio_cache/<timestamp>.mp3"},` +
			`"speed":{"type":"number","description":"Playback speed multiplier. 1.0 = normal, 0.5 = very slow (language learning), 2.0 = fast. Range: 0.25-4.0. Overrides the speed configured in config.yaml."},` +
			`"instructions":{"type":"string","description":"Optional voice-design guidance: tone, emotion, pacing, accent, whispering, impressions (e.g. 'Speak in a cheerful, excited whisper'). Forwarded to the OpenAI backend (gpt-4o-mini-tts and OpenAI-compatible voice-design servers). Silently ignored by backends that don't support it."},` +
			`"provider":{"type":"string","description":"Optional TTS provider override. Accepts built-in names (edge, openai, elevenlabs, minimax, xai, mistral, gemini, neutts, kittentts, piper), user-declared command provider names from tts.providers.<name>, or plugin-registered names. When omitted, the configured tts.provider from config.yaml is used."}` +
			`},"required":["text"]}`}
}

func (c *Call) textToSpeech(ctx context.Context) any {
	fail := func(msg string) any { return map[string]any{"success": false, "error": msg} }
	sp := c.Settings.Speech
	words, _ := c.str("text")
	if strings.TrimSpace(words) == "" {
		return fail("Text is required")
	}
	if p := sp.Problem(); p != "" {
		return fail(p)
	}
	req := SpeechRequest{Text: words, Platform: c.Platform, Check: c.Settings.audioWritable}
	req.Provider, _ = c.str("provider")
	req.Instructions, _ = c.str("instructions")
	if raw, ok := c.Args["speed"]; ok && raw != nil {
		speed, err := strconv.ParseFloat(strings.TrimSpace(text(raw)), 64)
		if err != nil || math.IsNaN(speed) || math.IsInf(speed, 0) {
			return fail(fmt.Sprintf("speed must be a number from 0.25 to 4.0, not %s", text(raw)))
		}
		req.Speed = max(0.25, min(4, speed))
	}
	if out, _ := c.str("output_path"); strings.TrimSpace(out) != "" {
		if slices.Contains(strings.Split(filepath.ToSlash(strings.TrimSpace(out)), "/"), "..") {
			return fail(fmt.Sprintf("output_path contains '..' traversal component: %s. Use an absolute path or one relative to the current directory without '..'.", out))
		}
		req.OutputPath = c.resolve(out)
		if err := req.Check(req.OutputPath); err != nil {
			return fail(err.Error())
		}
	}
	res, err := sp.Speak(ctx, req)
	if err != nil {
		return fail(err.Error())
	}
	if len(res.Paths) == 0 {
		return fail("TTS generation produced no output (provider: " + res.Provider + ")")
	}
	var tag strings.Builder
	if res.VoiceCompatible {
		tag.WriteString("[[audio_as_voice]]\n")
	}
	for i, p := range res.Paths {
		if i > 0 {
			tag.WriteByte('\n')
		}
		tag.WriteString("MEDIA:" + p)
	}
	return map[string]any{"success": true, "file_path": res.Paths[0], "file_paths": res.Paths, "media_tag": tag.String(),
		"provider": res.Provider, "voice_compatible": res.VoiceCompatible, "chunk_count": res.Chunks,
		"delivery_file_count": len(res.Paths), "combined_chunks": false,
		"delivery_profile": map[string]any{"platform": res.Platform, "max_file_bytes": res.MaxFileBytes, "target_file_bytes": res.TargetFileBytes}}
}

// audioWritable refuses a file text_to_speech may not write: the
// profile's own (config.yaml, .env, the store), as the familiar agent
// refuses a credential's.
func (s Settings) audioWritable(path string) error {
	_, own := listed(path, s.Protected, true)
	if _, secret := listed(path, s.Secrets, true); own || secret {
		return fmt.Errorf("output_path targets a protected credential or system path: %s. Choose a normal audio output location.", path)
	}
	return nil
}
