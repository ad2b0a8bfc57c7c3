package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atrium/backend/gateway/gatewaytest"
)

// `atrium gateway run` transcribes a Telegram voice message with a command
// provider of config.yaml's stt block (a shell script, run for real): the
// agent's session holds the familiar note with what was said, and the
// chat got the 🎙️ echo before the answer. config show knows the stt keys.
func TestGatewayRunTranscribesVoiceMessages(t *testing.T) {
	t.Parallel()
	tg := gatewaytest.NewTelegram(t, cliTGToken)
	home, work := t.TempDir(), t.TempDir()
	hear := filepath.Join(work, "hear it.sh")
	if err := os.WriteFile(hear, []byte("#!/bin/sh\nprintf 'lights on in the %s' \"$(cat \"$1\")\" > \"$2\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("stt:\n  provider: hear\n  providers:\n    hear:\n      type: command\n      command: \"'%s' {input_path} {output_path}\"\n      timeout: 60\n"+
		"gateway:\n  stt_echo_transcripts: true\n  telegram:\n    token_env: TG_TEST_TOKEN\n    base_url: %s\n    allowed_users: [42]\n    poll_timeout_seconds: 1\n", hear, tg.URL)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var show struct {
		Warnings []string `json:"warnings"`
	}
	if mustJSON(t, atrium(t, home, "config", "show", "--json"), &show); len(show.Warnings) != 0 {
		t.Fatalf("config show warns of %q", show.Warnings)
	}
	_, logs := gatewayRun(t, home)
	waitFor(t, "the gateway connected", 30*time.Second, func() bool { return strings.Contains(logs.String(), `"state":"connected"`) })

	tg.PushFile(42, "Ada", 42, "private", "", "voice", map[string]any{"duration": 2, "mime_type": "audio/ogg"}, []byte("kitchen"))
	waitFor(t, "the echo and the answer", 30*time.Second, func() bool { return len(tg.SentTexts()) == 2 })
	heard := `[The user sent a voice message~ Here's what they said: "lights on in the kitchen"]`
	if sent := tg.SentTexts(); sent[0] != `🎙️ "lights on in the kitchen"` || sent[1] != "offline reply to: "+heard {
		t.Fatalf("the chat got %q", sent)
	}
	var page struct {
		Sessions []struct {
			ID string `json:"id"`
		} `json:"sessions"`
	}
	mustJSON(t, atrium(t, home, "sessions", "list", "--json"), &page)
	if len(page.Sessions) != 1 {
		t.Fatalf("sessions %+v", page)
	}
	var msgs []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	mustJSON(t, atrium(t, home, "messages", "list", page.Sessions[0].ID, "--json"), &msgs)
	if len(msgs) == 3 && msgs[0].Role == "system" { // the platform's hint
		msgs = msgs[1:]
	}
	if len(msgs) != 2 || msgs[0].Role != "user" || msgs[0].Content != heard || msgs[1].Role != "assistant" || strings.Contains(msgs[1].Content, "🎙️") {
		t.Fatalf("the session's transcript %+v", msgs)
	}
	if strings.Contains(logs.String(), cliTGToken) {
		t.Fatal("the token reached the log")
	}
}
