package cli_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// agent.api_max_retries and fallback_providers from a terminal, through
// config.yaml and a loopback OpenAI-compatible server: a rate limit is
// waited out (Retry-After) and said on stderr; a refused key turns the
// turn to the first fallback that can be built, saying so; the next turn
// asks the main model again.
func TestFallbackProvidersFromATerminal(t *testing.T) {
	t.Parallel()
	type asked struct{ path, model, key, text string }
	var mu sync.Mutex
	var seen []asked
	tries := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := readChat(r)
		text := req.Messages[len(req.Messages)-1].Content
		path := strings.TrimSuffix(r.URL.Path, "/v1/chat/completions")
		mu.Lock()
		seen = append(seen, asked{path, req.Model, r.Header.Get("Authorization"), text})
		tries[path+text]++
		n := tries[path+text]
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case path == "/main" && text == "busy twice" && n <= 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = fmt.Fprint(w, `{"error":{"message":"slow down"}}`)
			return
		case path == "/main" && text == "key refused":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = fmt.Fprint(w, `{"error":{"message":"invalid key"}}`)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": strings.TrimPrefix(path, "/") + " answers: " + text}}}})
	}))
	defer srv.Close()
	home := t.TempDir()
	cfg := fmt.Sprintf(`model:
  provider: custom
  base_url: %[1]s/main/v1
  default: main-model
  api_key_env: ATRIUM_T_FB_MAIN
fallback_providers:
  - provider: custom
    model: unkeyed-model
    base_url: %[1]s/unkeyed/v1
    key_env: ATRIUM_T_FB_UNSET
  - provider: custom
    model: spare-model
    base_url: %[1]s/spare/v1
    key_env: ATRIUM_T_FB_SPARE
fallback_model:
  provider: anthropic
  model: claude-sonnet-4-6
`, srv.URL)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"ATRIUM_T_FB_MAIN=sk-main", "ATRIUM_T_FB_SPARE=sk-spare"}
	id := create(t, home, "--title", "fallbacks")

	r := atriumExec(t, home, "", env, "send", id, "busy twice")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "main answers: busy twice" ||
		!strings.Contains(r.stderr, "atrium: ⏱️ Rate limited. Waiting 0.0s (attempt 1/3)...\natrium: ⏱️ Rate limited. Waiting 0.0s (attempt 2/3)...\n") ||
		!strings.Contains(r.stderr, "fallback_model: provider anthropic is the familiar agent's and not an API Atrium speaks") {
		t.Fatalf("rate limited: %+v", r)
	}

	r = atriumExec(t, home, "", env, "send", id, "key refused")
	note := "(main-model failed (its key was refused); fallback unkeyed-model via custom passed over: the model's API key $ATRIUM_T_FB_UNSET is not set" +
		" (or empty); export it or keep it in the profile's .env (the window's Settings, Model; or `atrium config set ATRIUM_T_FB_UNSET ...`);" +
		" the turn went on with fallback spare-model via custom)"
	if r.code != 0 || !strings.Contains(r.stdout, "spare answers: key refused\n"+note+"\n") ||
		!strings.Contains(r.stderr, "atrium: 🔄 main-model failed (its key was refused): switching to fallback spare-model via custom") {
		t.Fatalf("key refused: %+v", r)
	}

	r = atriumExec(t, home, "", env, "send", id, "the next turn")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "main answers: the next turn" {
		t.Fatalf("next turn: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	var got []string
	for _, a := range seen {
		got = append(got, fmt.Sprintf("%s %s %s %s", a.path, a.model, a.key, a.text))
	}
	want := []string{
		"/main main-model Bearer sk-main busy twice", "/main main-model Bearer sk-main busy twice", "/main main-model Bearer sk-main busy twice",
		"/main main-model Bearer sk-main key refused", "/spare spare-model Bearer sk-spare key refused",
		"/main main-model Bearer sk-main the next turn",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the model was asked\n%s\nnot\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// /status and /title from a terminal: the session said with the model a
// turn asks now; the title set, then said.
func TestStatusAndTitleFromATerminal(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	id := create(t, home, "--title", "draft")
	if r := atrium(t, home, "send", id, "/title Quarterly plan"); r.code != 0 || strings.TrimSpace(r.stdout) != "Title set: Quarterly plan" {
		t.Fatalf("/title: %+v", r)
	}
	r := atrium(t, home, "send", id, "/status")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Session "+id+": Quarterly plan\nStarted ") || !strings.Contains(r.stdout, "\n0 messages, about 0 tokens of context\nModel: offline\n") {
		t.Fatalf("/status: %+v", r)
	}
}

// /undo and /retry from a terminal, a memory provider of the familiar API
// running: the exchange is taken back, and the provider is told the
// transcript was cut (on_session_switch with the same session, rewound).
func TestUndoAndRetryTellTheMemoryProvider(t *testing.T) {
	t.Parallel()
	home := hermesHome(t, "memory:\n  provider: recall\n", "hermes-recall")
	id := create(t, home, "--title", "undo")
	if r := atriumExec(t, home, "", nil, "send", id, "the deploy window is Friday"); r.code != 0 {
		t.Fatalf("send: %+v", r)
	}
	if r := atriumExec(t, home, "", nil, "send", id, "/retry"); r.code != 0 || !strings.Contains(r.stdout, "offline reply to: the deploy window is Friday") {
		t.Fatalf("/retry: %+v", r)
	}
	if r := atriumExec(t, home, "", nil, "send", id, "/undo"); r.code != 0 || !strings.HasPrefix(r.stdout, "Took back your last message and what answered (2 messages;") {
		t.Fatalf("/undo: %+v", r)
	}
	if r := atriumExec(t, home, "", nil, "plugins", "host", "stop"); r.code != 0 {
		t.Fatalf("host stop: %+v", r)
	}
	switches := byKey(records(t, home, "hermes-recall", "recall.jsonl"), "method", "on_session_switch")
	if len(switches) != 2 {
		t.Fatalf("on_session_switch: %v", switches)
	}
	for _, s := range switches {
		if s["new_session_id"] != id || s["rewound"] != true || s["reset"] != false {
			t.Fatalf("on_session_switch after /retry and /undo: %v", switches)
		}
	}
}
