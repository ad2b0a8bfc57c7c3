package tts

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"atrium/backend/apianswer"
	"atrium/backend/config"
)

// apiTimeout bounds one request to a speech API (the caller's context may
// end it sooner).
const apiTimeout = 5 * time.Minute

// maxAudio bounds the audio an API's answer may hold (the familiar
// agent's bound).
const maxAudio = 16 << 20

// viaAPI asks a's API to speak text into path.
func (s *Speaker) viaAPI(ctx context.Context, a config.TTSAPI, text, path, instructions string) error {
	var endpoint string
	var body map[string]any
	header := http.Header{"Content-Type": {"application/json"}}
	switch a.Provider {
	case config.TTSOpenAI:
		// The OpenAI SDK's audio.speech.create, as the familiar agent
		// calls it: the format from the file's extension.
		endpoint = a.BaseURL + "/audio/speech"
		body = map[string]any{"model": a.Model, "voice": a.Voice, "input": text, "response_format": openAIFormat(path)}
		if a.Speed != 1 {
			body["speed"] = a.Speed
		}
		if instructions = strings.TrimSpace(instructions); instructions != "" {
			body["instructions"] = instructions
		}
		header.Set("Authorization", "Bearer "+a.Key)
		header.Set("Accept", "application/octet-stream")
		header.Set("X-Idempotency-Key", idempotencyKey())
	case config.TTSElevenLabs:
		// The ElevenLabs SDK's text_to_speech.convert: Opus for .ogg,
		// else MP3.
		format := "mp3_44100_128"
		if strings.HasSuffix(path, ".ogg") {
			format = "opus_48000_64"
		}
		endpoint = a.BaseURL + "/v1/text-to-speech/" + url.PathEscape(a.Voice) + "?output_format=" + url.QueryEscape(format)
		body = map[string]any{"text": text, "model_id": a.Model}
		header.Set("xi-api-key", a.Key)
		header.Set("Accept", "audio/*")
	default:
		return fmt.Errorf("%s is no speech API", a.Provider)
	}
	raw, _ := json.Marshal(body) // plain values: no error
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("the API address %q is not a URL", a.BaseURL)
	}
	req.Header = header
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach %s: %s", a.BaseURL, apianswer.Scrub(apianswer.Transport(err), a.Key))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return apiError(a, resp.StatusCode, msg)
	}
	if err := saveAudio(path, resp.Body); err != nil {
		return errors.New(apianswer.Scrub(err.Error(), a.Key))
	}
	return nil
}

// openAIFormat is the response_format of a file, by its extension, as the
// familiar agent asks.
func openAIFormat(path string) string {
	switch {
	case strings.HasSuffix(path, ".ogg"):
		return "opus"
	case strings.HasSuffix(path, ".wav"):
		return "wav"
	case strings.HasSuffix(path, ".flac"):
		return "flac"
	}
	return "mp3"
}

// idempotencyKey is a request's own id, as the familiar agent sends one.
func idempotencyKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// saveAudio writes an answer's audio to path whole or not at all: read
// into a file beside it, then put in its place.
func saveAudio(path string, r io.Reader) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.part")
	if err != nil {
		return fmt.Errorf("cannot write the audio: %w", err)
	}
	defer os.Remove(tmp.Name())
	n, err := io.Copy(tmp, io.LimitReader(r, maxAudio+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return fmt.Errorf("the audio was cut off: %w", err)
	case n > maxAudio:
		return fmt.Errorf("the audio is more than %d MB: it was not kept", maxAudio>>20)
	case n == 0:
		return errors.New("the API answered no audio")
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cannot write the audio: %w", err)
	}
	return nil
}

// apiError says why an API refused: its status, and its message.
func apiError(a config.TTSAPI, status int, raw []byte) error {
	msg := apianswer.Scrub(apianswer.Message(raw), a.Key)
	hint := apianswer.Hint(status, a.KeyVar)
	return fmt.Errorf("HTTP %d%s: %s", status, hint, msg)
}
