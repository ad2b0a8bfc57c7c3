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
