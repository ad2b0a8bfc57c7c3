package stt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"atrium/backend/apianswer"
	"atrium/backend/config"
)

// apiTimeout bounds one request to a transcription API (the caller's
// context may end it sooner).
const apiTimeout = 5 * time.Minute

// maxAnswer bounds what is read of an API's answer.
const maxAnswer = 4 << 20

// viaAPI posts path to a's audio/transcriptions endpoint, as the OpenAI
// SDK does for the familiar agent (Groq's and Mistral's take the same
// form): multipart file, model, language when set, response_format.
func (t *Transcriber) viaAPI(ctx context.Context, a config.STTAPI, path string) (string, error) {
	if strings.EqualFold(filepath.Ext(path), ".caf") {
		// The APIs take no CAF (iMessage's voice notes): WAV, as the
		// familiar agent converts it.
		dir, err := os.MkdirTemp("", "atrium-stt-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(dir)
		if path, err = t.toWAV(ctx, path, dir, "CAF audio must be converted to WAV for "+a.Provider); err != nil {
			return "", err
		}
	}
	format := responseFormat(a)
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	body, size, ctype, err := multipartBody(path, a, format)
	if err != nil {
		return "", err
	}
	defer body.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.BaseURL+"/audio/transcriptions", body)
	if err != nil {
		return "", fmt.Errorf("%s transcription: the API address %q is not a URL", a.Provider, a.BaseURL)
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", "Bearer "+a.Key)
	req.Header.Set("Accept", "application/json, text/plain")
	resp, err := t.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s transcription: cannot reach %s: %s", a.Provider, a.BaseURL, apianswer.Scrub(apianswer.Transport(err), a.Key))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return "", fmt.Errorf("%s transcription: the answer was cut off: %s", a.Provider, apianswer.Scrub(err.Error(), a.Key))
	}
	if resp.StatusCode != http.StatusOK {
		return "", apiError(a, resp.StatusCode, raw)
	}
	text, err := transcriptOf(raw, resp.Header.Get("Content-Type"), format)
	if err != nil {
		return "", fmt.Errorf("%s transcription: %s", a.Provider, apianswer.Scrub(err.Error(), a.Key))
	}
	return stripASRPrefix(text), nil
}

// responseFormat is the response_format asked for, as the familiar agent
// asks: text of Groq and of OpenAI's whisper-1, json of OpenAI's newer
// models, none of Mistral (which answers JSON).
func responseFormat(a config.STTAPI) string {
	switch {
	case a.Provider == config.STTGroq, a.Provider == config.STTOpenAI && a.Model == "whisper-1":
		return "text"
	case a.Provider == config.STTOpenAI:
		return "json"
	}
	return ""
}

// multipartBody is the form, read from the file as it is sent, and its
// length (the APIs are sent it as the OpenAI SDK sends it, not chunked):
// the fields, then the file.
func multipartBody(path string, a config.STTAPI, format string) (io.ReadCloser, int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, "", fmt.Errorf("cannot read the audio file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, "", fmt.Errorf("cannot read the audio file: %w", err)
	}
	var head bytes.Buffer
	mw := multipart.NewWriter(&head)
	for _, kv := range [][2]string{{"model", a.Model}, {"language", a.Language}, {"response_format", format}} {
		if kv[1] != "" {
			_ = mw.WriteField(kv[0], kv[1]) // into memory: no error
		}
	}
	_, _ = mw.CreatePart(fileHeader(filepath.Base(path)))
	tail := "\r\n--" + mw.Boundary() + "--\r\n" // what mw.Close would write after the file
	body := struct {
		io.Reader
		io.Closer
	}{io.MultiReader(&head, f, strings.NewReader(tail)), f}
	return body, int64(head.Len()) + fi.Size() + int64(len(tail)), mw.FormDataContentType(), nil
}

// fileHeader is the form part of the audio file: its name and type.
func fileHeader(name string) map[string][]string {
	ctype := mime.TypeByExtension(strings.ToLower(filepath.Ext(name)))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	disposition := mime.FormatMediaType("form-data", map[string]string{"name": "file", "filename": name})
	return map[string][]string{"Content-Disposition": {disposition}, "Content-Type": {ctype}}
}

// transcriptOf reads an answer: the text itself (response_format text),
// or JSON with a text field.
func transcriptOf(raw []byte, ctype, format string) (string, error) {
	mt, _, _ := mime.ParseMediaType(ctype)
	if format == "text" && mt != "application/json" {
		return string(raw), nil
	}
	var v struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		if format == "text" {
			return string(raw), nil // a text answer labelled JSON
		}
		return "", fmt.Errorf("the answer is not JSON (%s)", apianswer.Snippet(raw))
	}
	if v.Text == nil {
		return "", fmt.Errorf("the answer has no text (%s)", apianswer.Snippet(raw))
	}
	return *v.Text, nil
}

// apiError says why an API refused: its status, and its message.
func apiError(a config.STTAPI, status int, raw []byte) error {
	msg := apianswer.Scrub(apianswer.Message(raw), a.Key)
	hint := apianswer.Hint(status, a.KeyVar)
	return fmt.Errorf("%s transcription failed: HTTP %d%s: %s", a.Provider, status, hint, msg)
}

// asrPrefix is the language preamble some models put before the text
// (language en<asr_text>…), which the familiar agent takes off.
var asrPrefix = regexp.MustCompile(`(?is)^\s*language\s+[\w.-]+(?:\s*<audio_language>[^<]*</audio_language>)?\s*<asr_text>\s*(.*)$`)

func stripASRPrefix(text string) string {
	if m := asrPrefix.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return text
}
