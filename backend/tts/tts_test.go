package tts

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/cmdprovider/proctest"
	"atrium/backend/config"
)

// testSpeaker is a Speaker of cfg whose variables are env, whose audio
// folder is dir, whose commands start from this process's PATH and env
// (nothing else), and which finds programs only in bin.
func testSpeaker(t *testing.T, cfg config.TTS, env map[string]string, dir, bin string) *Speaker {
	t.Helper()
	s := New(cfg, dir, func(k string) string { return env[k] })
	s.machine = proctest.Machine(t, env, bin)
	return s
}

// speech is one request a fake speech API was sent.
type speech struct {
	path, query string
	header      http.Header
	body        map[string]any
}

// fakeAPI is a loopback server standing for a speech API: it records what
// it is sent and answers status with answer.
type fakeAPI struct {
	*httptest.Server
	mu     sync.Mutex
	got    []speech
	status int
	answer func(n int, body map[string]any) []byte
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{status: http.StatusOK, answer: func(n int, _ map[string]any) []byte { return []byte("OggS fake opus audio #" + strconv.Itoa(n)) }}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.got = append(f.got, speech{path: r.URL.Path, query: r.URL.RawQuery, header: r.Header.Clone(), body: body})
		n, status := len(f.got), f.status
		f.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write(f.answer(n, body))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) requests() []speech {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

// files are the names in dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// OpenAI is asked as the familiar agent asks it (the SDK's
// audio.speech.create): Opus for Telegram, which takes it as a voice
// message, MP3 elsewhere; the file holds the API's bytes.
func TestOpenAI(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	dir := filepath.Join(t.TempDir(), "cache", "audio")
	cfg := config.TTS{Provider: "openai", OpenAI: config.TTSOpenAISection{BaseURL: api.URL + "/v1/", Voice: "nova"}}
	env := map[string]string{"VOICE_TOOLS_OPENAI_KEY": "sk-voice-key", "OPENAI_API_KEY": "sk-other"}
	s := testSpeaker(t, cfg, env, dir, "")
	s.now = func() time.Time { return time.Date(2025, 3, 4, 5, 6, 7, 890000000, time.UTC) }

	res, err := s.Speak(context.Background(), Request{Text: "  Hello\n there. ", Platform: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != filepath.Join(dir, "tts_20250304_050607_890000.ogg") || !res.VoiceCompatible || res.Provider != "openai" || res.Chunks != 1 ||
		!slices.Equal(res.Paths, []string{res.Path}) || res.Delivery != (Delivery{Platform: "telegram", MaxFileBytes: 50 << 20, TargetFileBytes: 50 << 20 * 85 / 100}) {
		t.Fatalf("%+v", res)
	}
	if got := read(t, res.Path); got != "OggS fake opus audio #1" {
		t.Fatalf("the file holds %q", got)
	}
	r := api.requests()[0]
	want := map[string]any{"model": "gpt-4o-mini-tts", "voice": "nova", "input": "Hello there.", "response_format": "opus"}
	if r.path != "/v1/audio/speech" || r.header.Get("Authorization") != "Bearer sk-voice-key" || r.header.Get("Content-Type") != "application/json" ||
		len(r.header.Get("X-Idempotency-Key")) != 32 || !mapsEqual(r.body, want) {
		t.Fatalf("the API was sent %s %v %v", r.path, r.header, r.body)
	}

	// Elsewhere MP3, not a voice message; the call's speed and
	// instructions are sent. A name already taken is not taken again.
	res, err = s.Speak(context.Background(), Request{Text: "again", Platform: "discord", Speed: 1.5, Instructions: "cheerful whisper"})
	if err != nil || res.Path != filepath.Join(dir, "tts_20250304_050607_890000.mp3") || res.VoiceCompatible || res.Delivery.MaxFileBytes != 10<<20 {
		t.Fatalf("%+v %v", res, err)
	}
	r = api.requests()[1]
	if r.body["response_format"] != "mp3" || r.body["speed"] != 1.5 || r.body["instructions"] != "cheerful whisper" {
		t.Fatalf("second request %v", r.body)
	}
	if res, err = s.Speak(context.Background(), Request{Text: "third", Platform: "telegram"}); err != nil || res.Path != filepath.Join(dir, "tts_20250304_050607_890000_2.ogg") {
		t.Fatalf("the same time: %+v %v", res, err)
	}

	// A path asked for is written as asked, its extension the format.
	out := filepath.Join(t.TempDir(), "new", "hi.wav")
	if res, err = s.Speak(context.Background(), Request{Text: "wave", OutputPath: out}); err != nil || res.Path != out || read(t, out) != "OggS fake opus audio #4" {
		t.Fatalf("%+v %v", res, err)
	}
	if f := api.requests()[3].body["response_format"]; f != "wav" {
		t.Fatalf("format %v", f)
	}
}

func mapsEqual(a, b map[string]any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// An API that refuses, one that is down, a key that is missing: each is
// said in words that name what to do, never the key, and no file is left.
func TestOpenAIFailures(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	api.status = http.StatusUnauthorized
	api.answer = func(int, map[string]any) []byte {
		return []byte(`{"error": {"message": "Incorrect API key provided: sk-voice-key.", "type": "invalid_request_error"}}`)
	}
	dir := t.TempDir()
	cfg := config.TTS{Provider: "openai", OpenAI: config.TTSOpenAISection{BaseURL: api.URL + "/v1"}}
	s := testSpeaker(t, cfg, map[string]string{"VOICE_TOOLS_OPENAI_KEY": "sk-voice-key"}, dir, "")
	_, err := s.Speak(context.Background(), Request{Text: "hi", Platform: "telegram"})
	if err == nil || err.Error() != "TTS generation failed (openai): HTTP 401 (the key in VOICE_TOOLS_OPENAI_KEY was refused): Incorrect API key provided: [key]." {
		t.Fatalf("refused: %v", err)
	}
	if f := files(t, dir); len(f) != 0 {
		t.Fatalf("left behind: %v", f)
	}

	// What was at the path asked for is kept when the API fails.
	kept := filepath.Join(t.TempDir(), "old.mp3")
	if err := os.WriteFile(kept, []byte("old audio"), 0o644); err != nil {
		t.Fatal(err)
	}
	api.status = http.StatusInternalServerError
	api.answer = func(int, map[string]any) []byte { return []byte("upstream exploded") }
	_, err = s.Speak(context.Background(), Request{Text: "hi", OutputPath: kept})
	if err == nil || !strings.Contains(err.Error(), "HTTP 500 (the provider failed: try again later): upstream exploded") || read(t, kept) != "old audio" {
		t.Fatalf("500: %v", err)
	}

	// Down.
	api.Close()
	_, err = s.Speak(context.Background(), Request{Text: "hi"})
	if err == nil || !strings.Contains(err.Error(), "TTS generation failed (openai): cannot reach "+api.URL+"/v1: ") || strings.Contains(err.Error(), "sk-voice-key") {
		t.Fatalf("down: %v", err)
	}
	if f := files(t, dir); len(f) != 0 {
		t.Fatalf("left behind: %v", f)
	}

	// No key.
	s = testSpeaker(t, cfg, nil, dir, "")
	_, err = s.Speak(context.Background(), Request{Text: "hi"})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "the TTS provider is openai, but neither VOICE_TOOLS_OPENAI_KEY nor OPENAI_API_KEY is set") {
		t.Fatalf("no key: %v", err)
	}
	if p := s.Problem(""); p != err.Error() {
		t.Fatalf("problem %q", p)
	}

	// Nothing to say.
	if _, err := s.Speak(context.Background(), Request{Text: " \n\t"}); err == nil || err.Error() != "Text is required" {
		t.Fatalf("empty: %v", err)
	}
}

// ElevenLabs is asked as its SDK asks it: the voice in the path, the
// format in the query, the key in xi-api-key.
func TestElevenLabs(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	dir := t.TempDir()
	cfg := config.TTS{Provider: "elevenlabs", ElevenLabs: config.TTSElevenLabsSection{BaseURL: api.URL, VoiceID: "voice 1"}}
	s := testSpeaker(t, cfg, map[string]string{"ELEVENLABS_API_KEY": "el-key"}, dir, "")
	res, err := s.Speak(context.Background(), Request{Text: "Bonjour", Platform: "telegram"})
	if err != nil || !res.VoiceCompatible || filepath.Ext(res.Path) != ".ogg" || read(t, res.Path) != "OggS fake opus audio #1" {
		t.Fatalf("%+v %v", res, err)
	}
	r := api.requests()[0]
	if r.path != "/v1/text-to-speech/voice 1" || r.query != "output_format=opus_48000_64" || r.header.Get("xi-api-key") != "el-key" ||
		r.header.Get("Authorization") != "" || !mapsEqual(r.body, map[string]any{"text": "Bonjour", "model_id": "eleven_multilingual_v2"}) {
		t.Fatalf("sent %+v", r)
	}
	if _, err := s.Speak(context.Background(), Request{Text: "x"}); err != nil || api.requests()[1].query != "output_format=mp3_44100_128" {
		t.Fatalf("mp3: %v %+v", err, api.requests()[1])
	}
	if p := testSpeaker(t, cfg, nil, dir, "").Problem(""); !strings.Contains(p, "the TTS provider is elevenlabs, but ELEVENLABS_API_KEY is not set") {
		t.Fatalf("problem %q", p)
	}
}

// A text longer than the provider takes is spoken in parts, in order,
// none of it dropped, each part a file of its own.
func TestLongTextInParts(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	dir := t.TempDir()
	cfg := config.TTS{Provider: "openai", OpenAI: config.TTSOpenAISection{BaseURL: api.URL, MaxTextLength: 30}}
	s := testSpeaker(t, cfg, map[string]string{"OPENAI_API_KEY": "k-123"}, dir, "")
	text := "First sentence here. Second one, with a clause! And a third sentence that is long."
	res, err := s.Speak(context.Background(), Request{Text: text, Platform: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, r := range api.requests() {
		said = append(said, r.body["input"].(string))
	}
	if strings.Join(said, " ") != text || res.Chunks != len(said) || len(said) < 3 {
		t.Fatalf("said %q", said)
	}
	for _, p := range said {
		if len([]rune(p)) > 30 {
			t.Fatalf("a part over the cap: %q", p)
		}
	}
	if len(res.Paths) != res.Chunks || !res.VoiceCompatible {
		t.Fatalf("%+v", res)
	}
	for i, p := range res.Paths {
		if !strings.HasSuffix(p, ".part0"+strconv.Itoa(i+1)+".ogg") || read(t, p) != "OggS fake opus audio #"+strconv.Itoa(i+1) {
			t.Fatalf("part %d: %s", i, p)
		}
	}
	if f := files(t, dir); len(f) != len(res.Paths) {
		t.Fatalf("files %v", f)
	}

	// A part that fails fails the call, and takes the others with it.
	failing := newFakeAPI(t)
	failing.answer = func(n int, _ map[string]any) []byte {
		if n == 2 {
			return nil
		}
		return []byte("OggS part")
	}
	s.apiBase = map[string]string{"openai": failing.URL}
	other := t.TempDir()
	s.dir = other
	if _, err := s.Speak(context.Background(), Request{Text: text}); err == nil || err.Error() != "TTS chunk 2 failed (openai): the API answered no audio" {
		t.Fatalf("a failing part: %v", err)
	}
	if f := files(t, other); len(f) != 0 {
		t.Fatalf("left behind: %v", f)
	}
}

// Split keeps every word, in order, in parts under the cap.
func TestSplit(t *testing.T) {
	t.Parallel()
	if got := Split("  a  b\n", 10); !slices.Equal(got, []string{"a b"}) {
		t.Fatal(got)
	}
	if got := Split(" ", 10); got != nil {
		t.Fatal(got)
	}
	got := Split("One. Two, three; four: five? "+strings.Repeat("x", 25)+" end", 10)
	want := []string{"One. Two,", "three;", "four:", "five?", "xxxxxxxxxx", "xxxxxxxxxx", "xxxxx end"}
	if !slices.Equal(got, want) {
		t.Fatalf("%q", got)
	}
	if got := Split("ééééé ééééé", 5); !slices.Equal(got, []string{"ééééé", "ééééé"}) {
		t.Fatalf("characters, not bytes: %q", got)
	}
}

// hostile is text that would run a command if it reached a shell.
const hostile = `Say 'it' "loud" $(touch pwned) ` + "`touch pwned2`" + ` \n; touch pwned3`

// A command provider (a real child process) is given the text in a file
// and the placeholders, quoted; its audio is kept under the format's
// extension; the keys of the environment are not its unless named.
func TestCommandProvider(t *testing.T) {
	t.Parallel()
	work, dir := t.TempDir(), t.TempDir()
	args := filepath.Join(work, "args")
	sh := proctest.Script(t, work, "speak.sh", `cd "`+work+`"
for a in "$@"; do printf '%s\n' "$a"; done > "`+args+`"
printf 'OggS:%s:%s:%s' "$(cat "$1")" "$OPENAI_API_KEY" "$HF_TOKEN" > "$2"
`)
	cfg := config.TTS{Provider: "mine", Speed: 1.25, Providers: map[string]config.TTSCommand{
		"mine": {Command: sh + ` {input_path} {output_path} "{voice}" '{model}' {format} {speed} {text_path}`, Format: "ogg", Voice: "amy's", Model: "m $(x)",
			VoiceCompatible: true, EnvPassthrough: []string{"HF_TOKEN"}}}}
	env := map[string]string{"OPENAI_API_KEY": "sk-hidden", "HF_TOKEN": "hf-pass"}
	s := testSpeaker(t, cfg, env, dir, "")
	res, err := s.Speak(context.Background(), Request{Text: hostile, Platform: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.VoiceCompatible || res.Provider != "mine" || filepath.Dir(res.Path) != dir || filepath.Ext(res.Path) != ".ogg" {
		t.Fatalf("%+v", res)
	}
	if got := read(t, res.Path); got != "OggS:"+strings.Join(strings.Fields(hostile), " ")+"::hf-pass" {
		t.Fatalf("the file holds %q", got)
	}
	b, _ := os.ReadFile(args)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 7 || filepath.Base(lines[0]) != "input.txt" || filepath.Dir(lines[1]) != dir || !strings.HasSuffix(lines[1], ".ogg") ||
		lines[2] != "amy's" || lines[3] != "m $(x)" || lines[4] != "ogg" || lines[5] != "1.25" || lines[6] != lines[0] {
		t.Fatalf("the command was given %q", lines)
	}
	if _, err := os.Stat(filepath.Dir(lines[0])); !os.IsNotExist(err) {
		t.Fatal("the text's folder was left behind")
	}
	for _, f := range []string{"pwned", "pwned2", "pwned3"} {
		if _, err := os.Stat(filepath.Join(work, f)); err == nil {
			t.Fatalf("the text ran a command (%s)", f)
		}
	}
	if f := files(t, dir); len(f) != 1 {
		t.Fatalf("files %v", f)
	}

	// A path asked for takes the format's extension; without
	// voice_compatible it is an audio file, not a voice message.
	cfg.Providers["mine"] = config.TTSCommand{Command: `printf 'ID3 mp3 bytes' > {output_path}`}
	out := filepath.Join(t.TempDir(), "reply.ogg")
	res, err = testSpeaker(t, cfg, nil, dir, "").Speak(context.Background(), Request{Text: "x", OutputPath: out, Platform: "telegram"})
	if err != nil || res.Path != strings.TrimSuffix(out, ".ogg")+".mp3" || res.VoiceCompatible || read(t, res.Path) != "ID3 mp3 bytes" {
		t.Fatalf("%+v %v", res, err)
	}
}

// A command that fails says its code and what it printed; one that goes
// quiet is killed at its idle timeout with what it started; one that
// writes nothing is said; and what was at the path asked for is kept.
func TestCommandProviderFailures(t *testing.T) {
	t.Parallel()
	work, dir := t.TempDir(), t.TempDir()
	kept := filepath.Join(work, "keep.mp3")
	if err := os.WriteFile(kept, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.TTS{Provider: "bad", Providers: map[string]config.TTSCommand{
		"bad": {Command: `echo partial; echo "voice not found: amy" >&2; exit 1`}}}
	_, err := testSpeaker(t, cfg, nil, dir, "").Speak(context.Background(), Request{Text: "hi", OutputPath: kept})
	if err == nil || err.Error() != "TTS generation failed (bad): TTS provider 'bad' exited with code 1: stderr: voice not found: amy; stdout: partial" {
		t.Fatalf("exit 1: %v", err)
	}
	if read(t, kept) != "precious" {
		t.Fatal("the file asked for was lost")
	}

	cfg.Providers["bad"] = config.TTSCommand{Command: `true`}
	if _, err := testSpeaker(t, cfg, nil, dir, "").Speak(context.Background(), Request{Text: "hi"}); err == nil ||
		!strings.Contains(err.Error(), "TTS provider 'bad' produced no output at ") {
		t.Fatalf("no output: %v", err)
	}

	pidFile := filepath.Join(work, "child")
	cfg.Providers["bad"] = config.TTSCommand{Command: proctest.Hang(pidFile), Timeout: 0.5}
	start := time.Now()
	_, err = testSpeaker(t, cfg, nil, dir, "").Speak(context.Background(), Request{Text: "hi"})
	if err == nil || err.Error() != "TTS generation failed (bad): TTS provider 'bad' timed out after 0.5s without output" {
		t.Fatalf("hang: %v", err)
	}
	if time.Since(start) > 15*time.Second {
		t.Fatalf("killed after %s", time.Since(start))
	}
	proctest.WaitKilled(t, pidFile)
	if f := files(t, dir); len(f) != 0 {
		t.Fatalf("left behind: %v", f)
	}

	// The caller's context ends it too.
	cfg.Providers["bad"] = config.TTSCommand{Command: `sleep 300`}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := testSpeaker(t, cfg, nil, dir, "").Speak(ctx, Request{Text: "hi"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the context's end: %v", err)
	}

	// A path the caller refuses is not written.
	cfg.Providers["bad"] = config.TTSCommand{Command: `printf x > {output_path}`}
	refuse := func(p string) error { return errors.New("refused " + filepath.Base(p)) }
	if _, err := testSpeaker(t, cfg, nil, dir, "").Speak(context.Background(), Request{Text: "hi", OutputPath: kept, Check: refuse}); err == nil ||
		err.Error() != "refused keep.mp3" || read(t, kept) != "precious" {
		t.Fatalf("refused: %v", err)
	}
}

// A voice-compatible command provider's MP3 becomes Ogg/Opus with ffmpeg;
// without ffmpeg it goes as the audio file it is. MP3 bytes an API wrote
// for Ogg are transcoded, or renamed to what they are.
func TestOpusConversion(t *testing.T) {
	t.Parallel()
	dir, bin := t.TempDir(), t.TempDir()
	cfg := config.TTS{Provider: "mp3er", Providers: map[string]config.TTSCommand{
		"mp3er": {Command: `printf 'ID3 fake mp3' > {output_path}`, VoiceCompatible: true}}}
	res, err := testSpeaker(t, cfg, nil, dir, bin).Speak(context.Background(), Request{Text: "hi", Platform: "telegram"})
	if err != nil || res.VoiceCompatible || filepath.Ext(res.Path) != ".mp3" {
		t.Fatalf("no ffmpeg: %+v %v", res, err)
	}
	// A fake ffmpeg: its output is "OggS" and what it read.
	proctest.Script(t, bin, "ffmpeg", `for a in "$@"; do out="$a"; done
in=""; prev=""
for a in "$@"; do [ "$prev" = "-i" ] && in="$a"; prev="$a"; done
printf 'OggS<' > "$out"; cat "$in" >> "$out"
`)
	res, err = testSpeaker(t, cfg, nil, dir, bin).Speak(context.Background(), Request{Text: "hi", Platform: "telegram"})
	if err != nil || !res.VoiceCompatible || filepath.Ext(res.Path) != ".ogg" || read(t, res.Path) != "OggS<ID3 fake mp3" {
		t.Fatalf("ffmpeg: %+v %v", res, err)
	}
	if _, err := os.Stat(strings.TrimSuffix(res.Path, ".ogg") + ".mp3"); !os.IsNotExist(err) {
		t.Fatal("the MP3 was left beside the Ogg")
	}

	api := newFakeAPI(t)
	api.answer = func(int, map[string]any) []byte { return []byte("ID3 server ignored opus") }
	oa := config.TTS{Provider: "openai", OpenAI: config.TTSOpenAISection{BaseURL: api.URL}}
	env := map[string]string{"OPENAI_API_KEY": "k-1"}
	res, err = testSpeaker(t, oa, env, dir, bin).Speak(context.Background(), Request{Text: "hi", Platform: "telegram"})
	if err != nil || !res.VoiceCompatible || read(t, res.Path) != "OggS<ID3 server ignored opus" {
		t.Fatalf("transcoded: %+v %v", res, err)
	}
	res, err = testSpeaker(t, oa, env, dir, "").Speak(context.Background(), Request{Text: "hi", Platform: "telegram"})
	if err != nil || res.VoiceCompatible || filepath.Ext(res.Path) != ".mp3" || read(t, res.Path) != "ID3 server ignored opus" {
		t.Fatalf("renamed: %+v %v", res, err)
	}
}

// The familiar default, edge, and the familiar's other providers are
// said to be none of Atrium's, naming what to set instead; a name that
// is no provider is said.
func TestProviderChoice(t *testing.T) {
	t.Parallel()
	s := testSpeaker(t, config.TTS{}, map[string]string{"OPENAI_API_KEY": "k"}, t.TempDir(), "")
	p := s.Problem("")
	if !strings.Contains(p, "the TTS provider is edge, the familiar agent's default (Microsoft Edge's online voices, through a Python package), which Atrium does not have: set tts.provider to openai") {
		t.Fatalf("edge: %q", p)
	}
	if _, err := s.Speak(context.Background(), Request{Text: "hi"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("edge: %v", err)
	}
	if p := s.Problem("openai"); p != "" {
		t.Fatalf("the call's provider: %q", p)
	}
	if p := s.Problem("piper"); !strings.Contains(p, "the TTS provider is piper, the familiar agent's, which Atrium does not have") {
		t.Fatalf("piper: %q", p)
	}
	if p := s.Problem("nope"); !strings.Contains(p, `no TTS provider is named "nope"`) {
		t.Fatalf("nope: %q", p)
	}
}

// AudioDir is the familiar agent's: audio_cache when the profile has one.
func TestAudioDir(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if got := AudioDir(home); got != filepath.Join(home, "cache", "audio") {
		t.Fatal(got)
	}
	if err := os.Mkdir(filepath.Join(home, "audio_cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := AudioDir(home); got != filepath.Join(home, "audio_cache") {
		t.Fatal(got)
	}
}
