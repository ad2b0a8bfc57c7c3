package stack_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"atrium/backend/gateway"
	"atrium/backend/stack"
)

// The gateway's transcription follows config.yaml's stt block as it is at
// each voice message, with the keys the profile's .env holds then; turned
// off since, the voice message is noted without it.
func TestTranscribeFollowsConfigYaml(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home, write := newHome(t)
	write("stt:\n  provider: say\n  providers:\n    say: {command: \"echo first\"}\n")
	st, err := stack.Open(ctx, home, stack.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	voice := filepath.Join(t.TempDir(), "voice-1.ogg")
	if err := os.WriteFile(voice, []byte("OggS"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Transcribe(ctx, voice); err != nil || got != "first" {
		t.Fatalf("first: %q %v", got, err)
	}
	if err := os.WriteFile(home.EnvPath(), []byte("ATRIUM_T_STT_WORD_TOKEN=from-the-env-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write("stt:\n  provider: say\n  providers:\n    say: {command: 'echo \"$ATRIUM_T_STT_WORD_TOKEN\"', env_passthrough: [ATRIUM_T_STT_WORD_TOKEN]}\n")
	if got, err := st.Transcribe(ctx, voice); err != nil || got != "from-the-env-file" {
		t.Fatalf("after the change: %q %v", got, err)
	}
	write("stt:\n  enabled: false\n")
	if _, err := st.Transcribe(ctx, voice); !errors.Is(err, gateway.ErrTranscriptionOff) {
		t.Fatalf("turned off: %v", err)
	}
}
