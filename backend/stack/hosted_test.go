package stack

import (
	"strings"
	"testing"

	"atrium/backend/config"
	"atrium/backend/gateway"
)

// A Discord block's upload_limit_mb is what the adapter sends at most;
// unset, what a server without boosts takes.
func TestDiscordUploadLimit(t *testing.T) {
	if got := DiscordOptions(config.Discord{}).MaxFileSize; got != 0 && got != gateway.DiscordMaxFileSize {
		t.Fatalf("default %d", got)
	}
	fifty := 50.0
	if got := DiscordOptions(config.Discord{UploadLimitMB: &fifty}).MaxFileSize; got != 50<<20 {
		t.Fatalf("upload_limit_mb 50: %d", got)
	}
}

// The profile's own files are what a reply may never send, and files
// people send are saved in its cache.
func TestProfileFilesKeptFromChats(t *testing.T) {
	h := config.Home{Dir: t.TempDir()}
	p := h.Protected()
	for _, want := range []string{h.ConfigPath(), h.EnvPath(), h.StatePath()} {
		found := false
		for _, q := range p {
			found = found || q == want
		}
		if !found {
			t.Fatalf("%s is not protected: %v", want, p)
		}
	}
	if h.MediaDir() != h.Dir+"/cache/gateway" {
		t.Fatalf("media dir %s", h.MediaDir())
	}
}

// send_message's targets: the chat ids each platform takes, and the
// target of each kind of conversation key (a person's own conversation in
// a group is the group).
func TestMessageTargets(t *testing.T) {
	for _, c := range []struct{ platform, ref, chat, thread string }{
		{"telegram", "-1001234567890:17585", "-1001234567890", "17585"},
		{"telegram", "42", "42", ""},
		{"discord", "999888777:555444333", "999888777", "555444333"},
		{"slack", "C0123456789", "C0123456789", ""},
		{"slack", "C0123456789:1700000000.000100", "C0123456789", "1700000000.000100"},
		{"bridge", "room-1", "room-1", ""},
	} {
		if chat, thread, ok := parseTarget(c.platform, c.ref); !ok || chat != c.chat || thread != c.thread {
			t.Errorf("%s:%s = %q %q %v", c.platform, c.ref, chat, thread, ok)
		}
	}
	for _, bad := range [][2]string{{"telegram", "#general"}, {"slack", "U012AB3CD"}, {"slack", "general"}, {"discord", "bot-home"}} {
		if _, _, ok := parseTarget(bad[0], bad[1]); ok {
			t.Errorf("%s:%s read as a chat", bad[0], bad[1])
		}
	}
	for key, want := range map[string]string{
		"telegram:dm:42":                            "telegram:42",
		"telegram:group:-100200:42":                 "telegram:-100200", // Ada's own conversation in the group
		"telegram:group:-100200:17":                 "telegram:-100200:17",
		"telegram:group:-100200:17:42":              "telegram:-100200:17",
		"discord:thread:555:555":                    "discord:555",
		"slack:channel:C0123456789:1700000000.0001": "slack:C0123456789:1700000000.0001",
	} {
		if got, _, ok := gateway.RouteTarget(key, "42"); !ok || got != want {
			t.Errorf("%s: %q, want %q", key, got, want)
		}
	}
}

// What send_message tells the model of its rows: the first message's id,
// the home channel used, a file that did not go, what still waits and
// where; the text refused for good is an error.
func TestSendResult(t *testing.T) {
	file := &gateway.OutFile{Name: "chart.png"}
	sent := gateway.Delivery{State: gateway.StateSent, MessageID: "5001"}
	got := sendResult([]gateway.Delivery{sent, {State: gateway.StateFailed, File: file, LastError: "larger than Telegram takes"}}, "telegram", "-100", "", true, "")
	if got["success"] != true || got["message_id"] != "5001" || got["queued"] != nil ||
		got["note"] != "Sent to telegram home channel (chat_id: -100); chart.png was not sent: larger than Telegram takes" {
		t.Fatalf("a file refused: %v", got)
	}
	got = sendResult([]gateway.Delivery{{State: gateway.StatePending, LastError: "502 Bad Gateway"}}, "telegram", "42", "", false, "")
	if got["queued"] != true || !strings.Contains(got["note"].(string), "the message is not sent yet: 502 Bad Gateway; the message waits in the gateway's outbox: no gateway runs") {
		t.Fatalf("not sent, no gateway: %v", got)
	}
	got = sendResult([]gateway.Delivery{{State: gateway.StatePending}}, "telegram", "42", "7", false, "atrium gateway run (pid 9)")
	if got["thread_id"] != "7" || !strings.HasSuffix(got["note"].(string), "atrium gateway run (pid 9) sends it, retrying for up to a day") {
		t.Fatalf("waiting for the gateway: %v", got)
	}
	if got := sendResult([]gateway.Delivery{{State: gateway.StateFailed, LastError: "telegram sendMessage: 400 Bad Request: chat not found"}}, "telegram", "1", "", false, ""); got["error"] != "Send failed: telegram sendMessage: 400 Bad Request: chat not found" {
		t.Fatalf("refused: %v", got)
	}
}
