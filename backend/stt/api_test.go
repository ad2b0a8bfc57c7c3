package stt

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"atrium/backend/cmdprovider/proctest"
	"atrium/backend/config"
)

// apiCall is what a fake transcription API was sent.
type apiCall struct {
	path, auth string
	fields     map[string]string
	fileName   string
	fileType   string
	file       string
	length     int64 // Content-Length (-1: chunked)
}

// fakeAPI is a loopback transcription API answering with answer.
type fakeAPI struct {
	*httptest.Server
	mu     sync.Mutex
	calls  []apiCall
	answer func(w http.ResponseWriter, c apiCall)
}

func newFakeAPI(t *testing.T, answer func(w http.ResponseWriter, c apiCall)) *fakeAPI {
	t.Helper()
	f := &fakeAPI{answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := apiCall{path: r.URL.Path, auth: r.Header.Get("Authorization"), fields: map[string]string{}, length: r.ContentLength}
		mr, err := r.MultipartReader()
		if err != nil {
			http.Error(w, "not multipart: "+err.Error(), http.StatusBadRequest)
			return
		}
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			b, _ := io.ReadAll(p)
			if p.FormName() == "file" {
				c.fileName, c.fileType, c.file = p.FileName(), p.Header.Get("Content-Type"), string(b)
			} else {
				c.fields[p.FormName()] = string(b)
			}
		}
		f.mu.Lock()
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		f.answer(w, c)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) got() []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiCall(nil), f.calls...)
}

func text(s string) func(http.ResponseWriter, apiCall) {
	return func(w http.ResponseWriter, _ apiCall) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, s)
	}
}

func jsonAnswer(status int, body string) func(http.ResponseWriter, apiCall) {
	return func(w http.ResponseWriter, _ apiCall) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// OpenAI's and Groq's endpoints are asked as the familiar agent asks them:
// the file, the model, the language, response_format, the bearer key.
func TestOpenAIAndGroq(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := audio(t, dir, "voice-12.ogg")

	api := newFakeAPI(t, text("Hallo, wie geht's?\n"))
	env := map[string]string{"VOICE_TOOLS_OPENAI_KEY": "sk-voice-123", "OPENAI_API_KEY": "sk-main", "STT_OPENAI_BASE_URL": api.URL + "/v1/"}
	got, err := testTranscriber(t, config.STT{Provider: "openai", Language: "de"}, env, "").Transcribe(context.Background(), in)
	if err != nil || got != "Hallo, wie geht's?" {
		t.Fatalf("openai: %q %v", got, err)
	}
	c := api.got()[0]
	if c.path != "/v1/audio/transcriptions" || c.auth != "Bearer sk-voice-123" || c.fields["model"] != "whisper-1" || c.fields["language"] != "de" ||
		c.fields["response_format"] != "text" || c.fileName != "voice-12.ogg" || c.fileType != "audio/ogg" || c.file != "OggS-fake-audio" || len(c.fields) != 3 || c.length <= 0 {
		t.Fatalf("openai was sent %+v", c)
	}

	// A newer model answers JSON; without a language none is sent.
	api = newFakeAPI(t, jsonAnswer(200, `{"text": "  language en<asr_text>Hi there. "}`))
	env = map[string]string{"OPENAI_API_KEY": "sk-main", "STT_OPENAI_BASE_URL": api.URL + "/v1"}
	got, err = testTranscriber(t, config.STT{Provider: "openai", OpenAI: config.STTEngine{Model: "gpt-4o-mini-transcribe"}}, env, "").Transcribe(context.Background(), in)
	if err != nil || got != "Hi there." {
		t.Fatalf("openai json: %q %v", got, err)
	}
	if c := api.got()[0]; c.auth != "Bearer sk-main" || c.fields["model"] != "gpt-4o-mini-transcribe" || c.fields["response_format"] != "json" || c.fields["language"] != "" {
		t.Fatalf("openai json was sent %+v", c)
	}

	// Groq, chosen by its key when stt.provider is unset.
	api = newFakeAPI(t, text("groq heard this"))
	env = map[string]string{"GROQ_API_KEY": "gsk-1", "GROQ_BASE_URL": api.URL + "/openai/v1", "HERMES_LOCAL_STT_LANGUAGE": "en"}
	got, err = testTranscriber(t, config.STT{}, env, "").Transcribe(context.Background(), in)
	if err != nil || got != "groq heard this" {
		t.Fatalf("groq: %q %v", got, err)
	}
	if c := api.got()[0]; c.path != "/openai/v1/audio/transcriptions" || c.auth != "Bearer gsk-1" || c.fields["model"] != "whisper-large-v3-turbo" ||
		c.fields["response_format"] != "text" || c.fields["language"] != "en" {
		t.Fatalf("groq was sent %+v", c)
	}
}

// CAF (iMessage's voice notes), which the APIs do not take, is sent as
// WAV, converted with ffmpeg; without ffmpeg that is said.
func TestCAFIsSentAsWAV(t *testing.T) {
	t.Parallel()
	dir, bin := t.TempDir(), t.TempDir()
	in := audio(t, dir, "memo.caf")
	api := newFakeAPI(t, text("from a caf"))
	env := map[string]string{"GROQ_API_KEY": "g", "GROQ_BASE_URL": api.URL}
	if _, err := testTranscriber(t, config.STT{Provider: "groq"}, env, bin).Transcribe(context.Background(), in); err == nil ||
		err.Error() != "CAF audio must be converted to WAV for groq, but ffmpeg was not found" {
		t.Fatalf("no ffmpeg: %v", err)
	}
	proctest.Script(t, bin, "ffmpeg", `for a in "$@"; do out="$a"; done; cp "$4" "$out"`)
	got, err := testTranscriber(t, config.STT{Provider: "groq"}, env, bin).Transcribe(context.Background(), in)
	if err != nil || got != "from a caf" {
		t.Fatalf("caf: %q %v", got, err)
	}
	if c := api.got(); len(c) != 1 || c[0].fileName != "memo.wav" || c[0].file != "OggS-fake-audio" {
		t.Fatalf("sent %+v", c)
	}
}

// Mistral's endpoint takes the file, the model and the language, and
// answers JSON.
func TestMistral(t *testing.T) {
	t.Parallel()
	in := audio(t, t.TempDir(), "clip.m4a")
	api := newFakeAPI(t, jsonAnswer(200, `{"model": "voxtral-mini-latest", "text": "bonjour", "language": "fr"}`))
	tr := testTranscriber(t, config.STT{Provider: "mistral", Mistral: config.STTEngine{Language: "fr"}}, map[string]string{"MISTRAL_API_KEY": "mk"}, "")
	tr.apiBase = map[string]string{"mistral": api.URL + "/v1"}
	got, err := tr.Transcribe(context.Background(), in)
	if err != nil || got != "bonjour" {
		t.Fatalf("mistral: %q %v", got, err)
	}
	if c := api.got()[0]; c.path != "/v1/audio/transcriptions" || c.auth != "Bearer mk" || c.fields["model"] != "voxtral-mini-latest" ||
		c.fields["language"] != "fr" || len(c.fields) != 2 || c.fileName != "clip.m4a" {
		t.Fatalf("mistral was sent %+v", c)
	}
}

// What an API refuses is said with its status and message, the key never
// in it; an answer that is not a transcript is said; a file too large is
// refused before it is sent.
func TestAPIErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := audio(t, dir, "v.ogg")
	const key = "sk-very-secret-key-42"
	for _, c := range []struct {
		name   string
		model  string
		answer func(http.ResponseWriter, apiCall)
		want   string
	}{
		{"401", "", jsonAnswer(401, `{"error": {"message": "Incorrect API key provided: `+key+`", "type": "invalid_request_error"}}`),
			"openai transcription failed: HTTP 401 (the key in VOICE_TOOLS_OPENAI_KEY was refused): Incorrect API key provided: [key]"},
		{"429", "", jsonAnswer(429, `{"error": {"message": "You exceeded your current quota"}}`),
			"openai transcription failed: HTTP 429 (rate-limited or out of quota: try again later): You exceeded your current quota"},
		{"500 in plain text", "", func(w http.ResponseWriter, _ apiCall) { http.Error(w, "upstream\nfailure", 502) },
			"openai transcription failed: HTTP 502 (the provider failed: try again later): upstream failure"},
		{"not JSON", "gpt-4o-transcribe", func(w http.ResponseWriter, _ apiCall) { _, _ = io.WriteString(w, "<html>proxy login</html>") },
			"openai transcription: the answer is not JSON (<html>proxy login</html>)"},
		{"no text", "gpt-4o-transcribe", jsonAnswer(200, `{"segments": []}`), `openai transcription: the answer has no text ({"segments": []})`},
		{"a detail", "", jsonAnswer(400, `{"detail": "file is corrupted"}`), "openai transcription failed: HTTP 400: file is corrupted"},
	} {
		api := newFakeAPI(t, c.answer)
		env := map[string]string{"VOICE_TOOLS_OPENAI_KEY": key, "STT_OPENAI_BASE_URL": api.URL}
		_, err := testTranscriber(t, config.STT{Provider: "openai", OpenAI: config.STTEngine{Model: c.model}}, env, "").Transcribe(context.Background(), in)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v\nwant %s", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), key) {
			t.Errorf("%s: the key is in the error", c.name)
		}
	}

	// An empty transcript is no speech.
	api := newFakeAPI(t, text(" \n"))
	env := map[string]string{"GROQ_API_KEY": key, "GROQ_BASE_URL": api.URL}
	if _, err := testTranscriber(t, config.STT{Provider: "groq"}, env, "").Transcribe(context.Background(), in); !errors.Is(err, ErrNoSpeech) {
		t.Fatalf("empty: %v", err)
	}

	// Too large for an upload: refused before it is sent.
	big := filepath.Join(dir, "long.ogg")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxUploadBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	calls := len(api.got())
	_, err = testTranscriber(t, config.STT{Provider: "groq"}, env, "").Transcribe(context.Background(), big)
	if err == nil || err.Error() != "the audio file is 25.0 MB; groq takes at most 25 MB: it was not sent" || len(api.got()) != calls {
		t.Fatalf("too large: %v (%d calls)", err, len(api.got())-calls)
	}

	// A provider that cannot be reached.
	api.Close()
	_, err = testTranscriber(t, config.STT{Provider: "groq"}, env, "").Transcribe(context.Background(), in)
	if err == nil || !strings.HasPrefix(err.Error(), "groq transcription: cannot reach "+api.URL+": ") || strings.Contains(err.Error(), key) {
		t.Fatalf("unreachable: %v", err)
	}
}

// The provider is chosen as the familiar agent chooses: the one
// stt.provider names, nothing else in its place; unset, a local whisper,
// then Groq, OpenAI, Mistral by their keys. What is missing is named.
func TestChoosingTheProvider(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	proctest.Script(t, bin, "whisper", "exit 0\n")
	for _, c := range []struct {
		name string
		cfg  config.STT
		env  map[string]string
		bin  string
		want string // the provider, or the error's words
	}{
		{"auto: a whisper here first", config.STT{}, map[string]string{"GROQ_API_KEY": "g"}, bin, "local_command"},
		{"auto: HERMES_LOCAL_STT_COMMAND", config.STT{}, map[string]string{"HERMES_LOCAL_STT_COMMAND": "x", "GROQ_API_KEY": "g"}, "", "local_command"},
		{"auto: groq before openai", config.STT{}, map[string]string{"OPENAI_API_KEY": "o", "GROQ_API_KEY": "g"}, "", "groq"},
		{"auto: openai", config.STT{}, map[string]string{"OPENAI_API_KEY": "o", "MISTRAL_API_KEY": "m"}, "", "openai"},
		{"auto: mistral", config.STT{}, map[string]string{"MISTRAL_API_KEY": "m"}, "", "mistral"},
		{"auto: nothing", config.STT{}, nil, "", "no speech-to-text provider is available: set HERMES_LOCAL_STT_COMMAND or install the whisper command"},
		{"local: no fallback to a key", config.STT{Provider: "local"}, map[string]string{"GROQ_API_KEY": "g"}, "",
			"stt.provider is local, but HERMES_LOCAL_STT_COMMAND is not set and no whisper command was found"},
		{"local_command", config.STT{Provider: "LOCAL_COMMAND"}, nil, bin, "local_command"},
		{"groq without its key", config.STT{Provider: "groq"}, map[string]string{"OPENAI_API_KEY": "o"}, bin,
			"stt.provider is groq, but GROQ_API_KEY is not set (in the environment or the profile's .env)"},
		{"openai without its keys", config.STT{Provider: "openai"}, nil, "",
			"stt.provider is openai, but neither VOICE_TOOLS_OPENAI_KEY nor OPENAI_API_KEY is set"},
		{"mistral without its key", config.STT{Provider: "mistral"}, nil, "", "MISTRAL_API_KEY is not set"},
		{"the familiar agent's xai", config.STT{Provider: "xai"}, nil, "", "stt.provider xai is the familiar agent's, and not one Atrium speaks"},
		{"a command provider", config.STT{Provider: "Mine", Providers: map[string]config.STTCommand{"mine": {Command: "x"}}}, nil, "", "mine"},
		{"an undeclared name", config.STT{Provider: "theirs"}, nil, "", `stt.provider "theirs" is set, but no built-in or command provider has that name`},
	} {
		p, err := testTranscriber(t, c.cfg, c.env, c.bin).choose()
		switch {
		case err == nil && p.name != c.want:
			t.Errorf("%s: chose %s, want %s", c.name, p.name, c.want)
		case err != nil && (!strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrUnavailable)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// A file that is no audio a provider may be given is refused first.
func TestTheAudioFileIsChecked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tr := testTranscriber(t, config.STT{Provider: "mine", Providers: map[string]config.STTCommand{"mine": {Command: "echo no"}}}, nil, "")
	in := audio(t, dir, "v.ogg")
	link := filepath.Join(dir, "link.ogg")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d.ogg"), 0o700); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		filepath.Join(dir, "none.ogg"): "audio file not found: " + filepath.Join(dir, "none.ogg"),
		link:                           "the audio file " + link + " is a symbolic link: refused",
		filepath.Join(dir, "d.ogg"):    filepath.Join(dir, "d.ogg") + " is not a file",
		audio(t, dir, "notes.txt"):     `unsupported audio format ".txt"; supported: .aac, .caf, .flac`,
	} {
		if _, err := tr.Transcribe(context.Background(), path); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}
