package stt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atrium/backend/cmdprovider/proctest"
	"atrium/backend/config"
)

// hostile is a file name that would run a command if it were not quoted.
const hostile = `my 'voice' "note" $(touch pwned) ` + "`touch pwned2`" + ` \x.ogg`

// testTranscriber is a Transcriber of cfg whose variables are env, whose
// commands start from this process's PATH and env (nothing else), and which
// finds programs only in bin.
func testTranscriber(t *testing.T, cfg config.STT, env map[string]string, bin string) *Transcriber {
	t.Helper()
	tr := New(cfg, func(k string) string { return env[k] })
	tr.machine = proctest.Machine(t, env, bin)
	return tr
}

// audio writes a small file that stands for a recording.
func audio(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("OggS-fake-audio"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A command provider (a real child process) gets the placeholders, its
// transcript read from {output_path}, else its output; the keys of the
// environment are not its unless env_passthrough names them.
func TestCommandProvider(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := audio(t, dir, hostile)
	args := filepath.Join(dir, "args")
	sh := proctest.Script(t, dir, "transcribe.sh", `for a in "$@"; do printf '%s\n' "$a"; done > "`+args+`"
printf 'hello from %s\n' "$(basename "$1")" > "$2"
`)
	cfg := config.STT{Provider: "mine", Language: "de", Providers: map[string]config.STTCommand{
		"mine": {Command: sh + " {input_path} {output_path} {language} {model} {format}", Model: "tiny"}}}
	tr := testTranscriber(t, cfg, nil, "")
	got, err := tr.Transcribe(context.Background(), in)
	if err != nil || got != "hello from "+hostile {
		t.Fatalf("transcript %q, %v", got, err)
	}
	b, _ := os.ReadFile(args)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 5 || lines[0] != in || !strings.HasSuffix(lines[1], "/transcript.txt") || lines[2] != "de" || lines[3] != "tiny" || lines[4] != "txt" {
		t.Fatalf("the command was given %q", lines)
	}
	if _, err := os.Stat(filepath.Dir(lines[1])); !os.IsNotExist(err) {
		t.Fatalf("the output folder was left behind: %v", err)
	}
	for _, f := range []string{"pwned", "pwned2"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Fatal("the file name ran a command")
		}
	}

	// Printed, not written; the keys left out but the one passed through.
	env := map[string]string{"OPENAI_API_KEY": "sk-secret-openai", "HF_TOKEN": "hf-pass", "MY_SETTING": "kept"}
	cfg.Providers["mine"] = config.STTCommand{Command: `printf '%s|%s|%s\n' "$OPENAI_API_KEY" "$HF_TOKEN" "$MY_SETTING"`, EnvPassthrough: []string{"HF_TOKEN"}}
	got, err = testTranscriber(t, cfg, env, "").Transcribe(context.Background(), in)
	if err != nil || got != "|hf-pass|kept" {
		t.Fatalf("printed transcript %q, %v", got, err)
	}

	// A json format is read as written.
	cfg.Providers["mine"] = config.STTCommand{Command: `printf '{"text": "hi"}' > {output_path}`, Format: "json"}
	if got, err = testTranscriber(t, cfg, nil, "").Transcribe(context.Background(), in); err != nil || got != `{"text": "hi"}` {
		t.Fatalf("json %q, %v", got, err)
	}

	// A failure says its code and what it printed.
	cfg.Providers["mine"] = config.STTCommand{Command: `echo partial; echo "model not found: tiny" >&2; exit 1`}
	_, err = testTranscriber(t, cfg, nil, "").Transcribe(context.Background(), in)
	if err == nil || err.Error() != "STT command provider 'mine' exited with code 1: stderr: model not found: tiny; stdout: partial" {
		t.Fatalf("exit 1: %v", err)
	}

	// Nothing written, nothing printed.
	cfg.Providers["mine"] = config.STTCommand{Command: `true`}
	_, err = testTranscriber(t, cfg, nil, "").Transcribe(context.Background(), in)
	if err == nil || !strings.Contains(err.Error(), "STT command provider 'mine' wrote no output file at ") || !strings.HasSuffix(err.Error(), "transcript.txt and printed nothing") {
		t.Fatalf("no output: %v", err)
	}
	cfg.Providers["mine"] = config.STTCommand{Command: `printf '  \n' > {output_path}; printf ' \n'`}
	if _, err = testTranscriber(t, cfg, nil, "").Transcribe(context.Background(), in); err == nil || !strings.Contains(err.Error(), "printed nothing") {
		t.Fatalf("blank output: %v", err)
	}
}

// A command that goes quiet is killed at its idle timeout with what it
// started; one that keeps printing runs past it.
func TestCommandProviderIdleTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := audio(t, dir, "v.ogg")
	pidFile := filepath.Join(dir, "child")
	cfg := config.STT{Provider: "hang", Providers: map[string]config.STTCommand{
		"hang": {Command: proctest.Hang(pidFile), Timeout: 0.5}}}
	start := time.Now()
	_, err := testTranscriber(t, cfg, nil, "").Transcribe(context.Background(), in)
	if err == nil || err.Error() != "STT command provider 'hang' timed out after 0.5s without output" {
		t.Fatalf("hang: %v", err)
	}
	if time.Since(start) > 15*time.Second {
		t.Fatalf("killed after %s", time.Since(start))
	}
	proctest.WaitKilled(t, pidFile)

	// Output resets the clock: ten lines 0.3 s apart outlive a 2 s idle
	// timeout.
	cfg.Providers["hang"] = config.STTCommand{Command: `i=0; while [ $i -lt 10 ]; do echo tick >&2; sleep 0.3; i=$((i+1)); done; echo done`, Timeout: 2}
	if got, err := testTranscriber(t, cfg, nil, "").Transcribe(context.Background(), in); err != nil || got != "done" {
		t.Fatalf("a slow command that prints: %q %v", got, err)
	}

	// The caller's context ends it too.
	cfg.Providers["hang"] = config.STTCommand{Command: `sleep 300`}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := testTranscriber(t, cfg, nil, "").Transcribe(ctx, in); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the context's end: %v", err)
	}
}

// The local provider runs a whisper found on this machine with the
// familiar agent's command, converting what is not WAV with ffmpeg, and
// reads the .txt it writes; HERMES_LOCAL_STT_COMMAND goes first.
func TestLocalWhisper(t *testing.T) {
	t.Parallel()
	dir, bin := t.TempDir(), t.TempDir()
	args := filepath.Join(dir, "args")
	proctest.Script(t, bin, "whisper", `for a in "$@"; do printf '%s\n' "$a"; done > "`+args+`"
out=""; prev=""
for a in "$@"; do [ "$prev" = "--output_dir" ] && out="$a"; prev="$a"; done
stem=$(basename "$1"); stem=${stem%.*}
echo "transcribing..."
printf ' local words \n' > "$out/$stem.txt"
`)
	wav := audio(t, dir, "it's a note.wav")
	cfg := config.STT{Provider: "local", Language: "fr", Local: config.STTEngine{Model: "small"}}
	got, err := testTranscriber(t, cfg, nil, bin).Transcribe(context.Background(), wav)
	if err != nil || got != "local words" {
		t.Fatalf("whisper: %q %v", got, err)
	}
	b, _ := os.ReadFile(args)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 9 || lines[0] != wav || lines[1] != "--model" || lines[2] != "small" || lines[3] != "--output_format" || lines[4] != "txt" ||
		lines[5] != "--output_dir" || lines[7] != "--language" || lines[8] != "fr" {
		t.Fatalf("whisper was given %q", lines)
	}

	// Not WAV: without ffmpeg, said; with it, converted first.
	ogg := audio(t, dir, "voice-7.ogg")
	if _, err := testTranscriber(t, cfg, nil, bin).Transcribe(context.Background(), ogg); err == nil ||
		err.Error() != "Local STT fallback requires ffmpeg for non-WAV inputs, but ffmpeg was not found" {
		t.Fatalf("no ffmpeg: %v", err)
	}
	proctest.Script(t, bin, "ffmpeg", `for a in "$@"; do out="$a"; done; cp "$4" "$out"`)
	if got, err := testTranscriber(t, cfg, nil, bin).Transcribe(context.Background(), ogg); err != nil || got != "local words" {
		t.Fatalf("converted: %q %v", got, err)
	}
	b, _ = os.ReadFile(args)
	if first := strings.SplitN(string(b), "\n", 2)[0]; filepath.Base(first) != "voice-7.wav" {
		t.Fatalf("whisper was given %q, want the WAV", first)
	}

	// HERMES_LOCAL_STT_COMMAND, over the whisper found; its failure said.
	env := map[string]string{"HERMES_LOCAL_STT_COMMAND": `printf 'from env %s' {language} > {output_dir}/x.txt`}
	if got, err := testTranscriber(t, cfg, env, bin).Transcribe(context.Background(), wav); err != nil || got != "from env fr" {
		t.Fatalf("HERMES_LOCAL_STT_COMMAND: %q %v", got, err)
	}
	env["HERMES_LOCAL_STT_COMMAND"] = `echo "CUDA out of memory" >&2; exit 3`
	if _, err := testTranscriber(t, cfg, env, bin).Transcribe(context.Background(), wav); err == nil || err.Error() != "local STT failed (exit code 3): CUDA out of memory" {
		t.Fatalf("failing: %v", err)
	}
	env["HERMES_LOCAL_STT_COMMAND"] = `whisper {input_path} --out {outdir}`
	if _, err := testTranscriber(t, cfg, env, bin).Transcribe(context.Background(), wav); err == nil || !strings.Contains(err.Error(), "{outdir} is no placeholder") {
		t.Fatalf("a wrong placeholder: %v", err)
	}
	env["HERMES_LOCAL_STT_COMMAND"] = `echo nothing written`
	if _, err := testTranscriber(t, cfg, env, bin).Transcribe(context.Background(), wav); err == nil || !strings.Contains(err.Error(), "did not produce a .txt transcript") {
		t.Fatalf("no transcript: %v", err)
	}
}
