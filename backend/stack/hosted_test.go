package stack

import (
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
		if got, _, ok := routeTarget(key, "42"); !ok || got != want {
			t.Errorf("%s: %q, want %q", key, got, want)
		}
	}
}
