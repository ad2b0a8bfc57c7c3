package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"atrium/backend/apperr"
)

func TestCheckServeAddr(t *testing.T) {
	t.Parallel()
	scenarios := []struct {
		addr        string
		allowRemote bool
		remote      bool
		code        apperr.Code
	}{
		{"127.0.0.1:8765", false, false, ""},
		{"[::1]:0", false, false, ""},
		{"localhost:9000", false, false, ""},
		{"0.0.0.0:8765", false, true, apperr.Invalid},
		{":8765", false, true, apperr.Invalid},
		{"192.168.1.5:80", false, true, apperr.Invalid},
		{"example.com:80", false, true, apperr.Invalid},
		{"0.0.0.0:8765", true, true, ""},
		{"no-port", true, false, apperr.Invalid},
	}
	for _, sc := range scenarios {
		t.Run(sc.addr, func(t *testing.T) {
			remote, err := checkServeAddr(sc.addr, sc.allowRemote)
			if apperr.CodeOf(err) != sc.code || (err == nil && remote != sc.remote) {
				t.Fatalf("checkServeAddr(%q, %v) = %v, %v", sc.addr, sc.allowRemote, remote, err)
			}
		})
	}
}

func TestNewTokenIs32RandomBytesHex(t *testing.T) {
	t.Parallel()
	a, err1 := newToken()
	b, err2 := newToken()
	if err1 != nil || err2 != nil || len(a) != 64 || a == b {
		t.Fatalf("tokens %q %q (%v %v)", a, b, err1, err2)
	}
}

// TestServeEndToEnd runs `atrium serve` on a free loopback port, follows the
// printed link, and stops it by cancelling its context.
func TestServeEndToEnd(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	root := NewRoot(Env{Version: "dev", Stdout: pw, Stderr: io.Discard})
	root.SetArgs([]string{"--home", t.TempDir(), "serve", "--addr", "127.0.0.1:0"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx); pw.Close() }()

	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	link := strings.TrimSpace(line[strings.Index(line, "http://"):])
	base, tok, _ := strings.Cut(link, "/?token=")
	req, _ := http.NewRequest("GET", base+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/sessions = %d", res.StatusCode)
	}
	res, err = http.Get(base + "/api/sessions")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without token = %d", res.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not shut down")
	}
}
