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
		default:
			answer = tidyTurn(last.Role, last.Content)
		}
		writeAnswer(w, answer)
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

// The reviewer on an endpoint of its own, as the familiar agent's
// auxiliary.approval names one (base_url, api_key_env): the review goes
// there with its key, the turn's calls to the main model; `approvals mode`
// says where it is asked. Its key unset, the command is left to the person
// (nobody, at a send: blocked), the log saying why.
func TestSmartApprovalsReviewerOfItsOwn(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string // "<path> <model> <key>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := readChat(r)
		path := strings.TrimSuffix(r.URL.Path, "/v1/chat/completions")
		mu.Lock()
		seen = append(seen, path+" "+req.Model+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		last := req.Messages[len(req.Messages)-1]
		answer := map[string]any{"role": "assistant"}
		switch {
		case path == "/guard":
			answer["content"] = "APPROVE"
		default:
			answer = tidyTurn(last.Role, last.Content)
		}
		writeAnswer(w, answer)
	}))
	defer srv.Close()
	home, work := t.TempDir(), t.TempDir()
	cfg := fmt.Sprintf("model:\n  provider: custom\n  base_url: %[1]s/main/v1\n  default: main-model\n"+
		"terminal:\n  cwd: %[2]s\napprovals:\n  mode: smart\n"+
		"auxiliary:\n  approval:\n    base_url: %[1]s/guard/v1\n    model: guard-remote\n    api_key_env: ATRIUM_T_GUARD_KEY\n", srv.URL, work)
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"build", "dist"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	id := create(t, home, "--title", "tidy")
	if r := atriumExec(t, home, "", []string{"ATRIUM_T_GUARD_KEY=sk-guard"}, "send", id, "tidy build"); r.code != 0 ||
		!strings.Contains(r.stdout, `the terminal said: {"output":"","exit_code":0`) {
		t.Fatalf("approved: %+v", r)
	}
	mu.Lock()
	got := strings.Join(seen, "\n")
	mu.Unlock()
	if want := "/main main-model \n/guard guard-remote Bearer sk-guard\n/main main-model "; got != want {
		t.Fatalf("the models were asked\n%s\nnot\n%s", got, want)
	}
	if r := atrium(t, home, "approvals", "mode"); r.code != 0 || !strings.Contains(r.stdout, "first put to guard-remote at "+srv.URL+"/guard/v1, auxiliary.approval.model,") {
		t.Fatalf("approvals mode: %+v", r)
	}
	other := create(t, home, "--title", "no key")
	if r := atriumExec(t, home, "", nil, "send", other, "tidy dist"); r.code != 0 ||
		!strings.Contains(r.stdout, "BLOCKED: a person's approval is required") || !strings.Contains(r.stderr, "the reviewer could not decide") ||
		!strings.Contains(r.stderr, "$ATRIUM_T_GUARD_KEY is not set") {
		t.Fatalf("no key: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(work, "dist")); err != nil {
		t.Fatalf("dist was removed: %v", err)
	}
}

// tidyTurn is the main model of these tests: "tidy DIR" from the person
// asks the terminal to rm -r DIR; the terminal's answer is said back.
func tidyTurn(role, content string) map[string]any {
	if role != "user" {
		return map[string]any{"role": "assistant", "content": "the terminal said: " + content}
	}
	args, _ := json.Marshal(map[string]string{"command": "rm -r " + strings.TrimPrefix(content, "tidy ")})
	return map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "call_1", "type": "function",
		"function": map[string]any{"name": "terminal", "arguments": string(args)}}}}
}

// chatRequest is what the loopback models of these tests read of a chat
// completion request.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

// readChat reads a chat completion request.
func readChat(r *http.Request) chatRequest {
	var req chatRequest
	_ = json.NewDecoder(r.Body).Decode(&req)
	return req
}

// writeAnswer answers a chat completion with message.
func writeAnswer(w http.ResponseWriter, message map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": message}}})
}
