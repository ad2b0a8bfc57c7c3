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

// approvals.mode: smart from a terminal, through config.yaml and a
// loopback OpenAI-compatible server: the model asks to remove a folder,
// the reviewing model (auxiliary.approval.model, at temperature 0 and 16
// tokens) approves one and denies another, and `atrium approvals mode`
// says what smart does. Nobody is asked: a send has nobody to ask.
func TestSmartApprovalsFromATerminal(t *testing.T) {
	t.Parallel()
	type review struct {
		Model       string   `json:"model"`
		Temperature *float64 `json:"temperature"`
		MaxTokens   int      `json:"max_tokens"`
		Command     string
	}
	var mu sync.Mutex
	var reviews []review
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			review
			Tools    []any `json:"tools"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		last := req.Messages[len(req.Messages)-1]
		answer := map[string]any{"role": "assistant"}
		switch {
		case len(req.Tools) == 0 && strings.Contains(last.Content, "<command>"):
			rv := req.review
			rv.Command = last.Content[strings.Index(last.Content, "<command>\n")+10 : strings.Index(last.Content, "\n</command>")]
			mu.Lock()
			reviews = append(reviews, rv)
			mu.Unlock()
			answer["content"] = "APPROVE"
			if strings.Contains(rv.Command, "src") {
				answer["content"] = "DENY"
			}
		case last.Role == "user":
			folder := strings.TrimPrefix(last.Content, "tidy ")
			args, _ := json.Marshal(map[string]string{"command": "rm -r " + folder})
			answer["content"] = ""
			answer["tool_calls"] = []any{map[string]any{"id": "call_1", "type": "function",
				"function": map[string]any{"name": "terminal", "arguments": string(args)}}}
		default:
			answer["content"] = "the terminal said: " + last.Content
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": answer}}})
	}))
	defer srv.Close()
	home, work := t.TempDir(), t.TempDir()
	cfg := fmt.Sprintf("model:\n  provider: custom\n  base_url: %s/v1\n  default: main-model\n  api_key_env: ATRIUM_T_SMART_KEY\n"+
		"terminal:\n  cwd: %s\napprovals:\n  mode: smart\n  smart_policy: Approve removing build output.\n"+
		"auxiliary:\n  approval:\n    model: guard-mini\n    timeout: 10\n", srv.URL, work)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"build", "src"} {
		if err := os.MkdirAll(filepath.Join(work, d, "inner"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"ATRIUM_T_SMART_KEY=sk-smart"}
	id := create(t, home, "--title", "tidy")
	if r := atriumExec(t, home, "", env, "send", id, "tidy build"); r.code != 0 || !strings.Contains(r.stdout, `the terminal said: {"output":"","exit_code":0`) {
		t.Fatalf("approved: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(work, "build")); !os.IsNotExist(err) {
		t.Fatalf("build is still there: %v", err)
	}
	other := create(t, home, "--title", "tidy src")
	if r := atriumExec(t, home, "", env, "send", other, "tidy src"); r.code != 0 || !strings.Contains(r.stdout, "BLOCKED by smart approval: recursive delete.") {
		t.Fatalf("denied: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(work, "src", "inner")); err != nil {
		t.Fatalf("src was removed: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reviews) != 2 {
		t.Fatalf("%d reviews: %+v", len(reviews), reviews)
	}
	for i, want := range []string{"rm -r build", "rm -r src"} {
		if rv := reviews[i]; rv.Model != "guard-mini" || rv.Temperature == nil || *rv.Temperature != 0 || rv.MaxTokens != 16 || rv.Command != want {
			t.Fatalf("review %d: %+v", i, rv)
		}
	}
	r := atrium(t, home, "approvals", "mode")
	if r.code != 0 || !strings.Contains(r.stdout, "mode: smart (a terminal command that could destroy data is first put to guard-mini, auxiliary.approval.model,") ||
		!strings.Contains(r.stdout, "smart_policy: Approve removing build output.") {
		t.Fatalf("approvals mode: %+v", r)
	}
}
