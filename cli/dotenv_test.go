package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atrium/cli"
)

// The profile's .env, as the familiar agent keeps its ~/.hermes/.env:
// `config set` of a key's variable writes it there (private, the value never
// printed), every Atrium process reads it at start, the environment goes
// first, and what the file says wrong is a warning, never a failure.
func TestTheProfilesDotEnv(t *testing.T) {
	t.Parallel()
	auth := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth <- r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": "hi"}}}, "usage": map[string]any{"prompt_tokens": 1, "completion_tokens": 1}})
	}))
	defer srv.Close()
	home := t.TempDir()
	envPath := filepath.Join(home, ".env")
	const secret = "sk test#1" // a space and a '#': written in quotes
	cfg := "model:\n  provider: openai\n  base_url: " + srv.URL + "/v1\n  name: m\n  api_key_env: ATRIUM_T_API_KEY\ncompaction:\n  summarizer: model\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	noSecret := func(what string, r run) {
		t.Helper()
		if strings.Contains(r.stdout+r.stderr, "sk test") || strings.Contains(r.stdout+r.stderr, "from-env-value") {
			t.Fatalf("%s printed the secret: %+v", what, r)
		}
	}
	ok := func(env []string, args ...string) run {
		t.Helper()
		r := atriumExec(t, home, "", env, args...)
		if r.code != 0 {
			t.Fatalf("%v: %+v", args, r)
		}
		noSecret(strings.Join(args, " "), r)
		return r
	}
	if r := ok(nil, "config", "env-path"); r.stdout != envPath+"\n" {
		t.Fatalf("env-path: %q", r.stdout)
	}
	if r := ok(nil, "config"); !strings.Contains(r.stdout, "# "+envPath+": none") {
		t.Fatalf("show without a .env: %q", r.stdout)
	}
	// Without the key the model is not asked, and the error says where
	// the key may go.
	id := create(t, home)
	if r := atriumExec(t, home, "", nil, "send", id, "hello"); r.code != cli.ExitInvalid || !strings.Contains(r.stderr, "atrium config set ATRIUM_T_API_KEY") {
		t.Fatalf("send without a key: %+v", r)
	}
	var ms []json.RawMessage
	if mustJSON(t, ok(nil, "messages", "list", id, "--json"), &ms); len(ms) != 0 {
		t.Fatalf("a send without a key stored %d messages", len(ms))
	}
	// What needs no model works without its key: listing (the summarizer
	// is the model's, and only a summary asks it), the scheduler's jobs,
	// a slash command.
	ok(nil, "sessions", "list")
	ok(nil, "cron", "list")
	if r := ok(nil, "send", id, "/help"); !strings.Contains(r.stdout, "/new") {
		t.Fatalf("/help without a key: %q", r.stdout)
	}
	// A chat says so before it starts a session.
	if r := atriumExec(t, home, "hello\n", nil, "chat"); r.code != cli.ExitInvalid || !strings.Contains(r.stderr, "$ATRIUM_T_API_KEY is not set") ||
		strings.Contains(r.stdout, "new session") {
		t.Fatalf("chat without a key: %+v", r)
	}
	var listed struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	if mustJSON(t, ok(nil, "sessions", "list", "--json"), &listed); len(listed.Sessions) != 1 {
		t.Fatalf("%d sessions after the chat that could not start", len(listed.Sessions))
	}
	// Set, as hermes config set: any case, written upper-case.
	if r := ok(nil, "config", "set", "atrium_t_api_key", secret); !strings.HasPrefix(r.stdout, "set ATRIUM_T_API_KEY in "+envPath+"\n") {
		t.Fatalf("set: %q", r.stdout)
	}
	if b, _ := os.ReadFile(envPath); string(b) != "ATRIUM_T_API_KEY='"+secret+"'\n" {
		t.Fatalf(".env: %q", b)
	}
	if fi, _ := os.Stat(envPath); fi.Mode().Perm() != 0o600 {
		t.Fatalf(".env mode %v", fi.Mode().Perm())
	}
	if r := ok(nil, "config", "get", "ATRIUM_T_API_KEY"); r.stdout != "ATRIUM_T_API_KEY is set in "+envPath+" (the value is not shown)\n" {
		t.Fatalf("get: %q", r.stdout)
	}
	if r := ok(nil, "config"); !strings.Contains(r.stdout, "# "+envPath+" sets (values not shown): ATRIUM_T_API_KEY\n") {
		t.Fatalf("show: %q", r.stdout)
	}
	// A turn reaches the model with the key from .env; the environment's
	// value goes first.
	ok(nil, "send", id, "hello")
	if a := <-auth; a != "Bearer "+secret {
		t.Fatalf("the model was asked with %q", a)
	}
	ok([]string{"ATRIUM_T_API_KEY=from-env-value"}, "send", id, "hello")
	if a := <-auth; a != "Bearer from-env-value" {
		t.Fatalf("with the variable exported, the model was asked with %q", a)
	}
	if r := ok([]string{"ATRIUM_T_API_KEY=from-env-value"}, "config", "get", "ATRIUM_T_API_KEY"); !strings.Contains(r.stdout, "set in the environment, which goes first, and in "+envPath) {
		t.Fatalf("get with both: %q", r.stdout)
	}
	if r := ok([]string{"ATRIUM_T_API_KEY=from-env-value"}, "config", "set", "ATRIUM_T_API_KEY", secret+"2"); !strings.Contains(r.stdout, "which goes first") {
		t.Fatalf("set under an exported value: %q", r.stdout)
	}
	// Refused, the file unchanged, the value never echoed: a line break,
	// a look-alike character pasted from a page, a name that is none.
	before, _ := os.ReadFile(envPath)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"set", "ATRIUM_T_TOKEN", "sk test\nmore"}, "spans lines"},
		{[]string{"set", "ATRIUM_T_TOKEN", "sk test\u2013dash"}, "not ASCII (U+2013"},
		{[]string{"set", "ATRIUM_T_TOKEN", "sk test${HOME}"}, "always expands"},
	} {
		r := atriumExec(t, home, "", nil, append([]string{"config"}, c.args...)...)
		if r.code != cli.ExitInvalid || !strings.Contains(r.stderr, c.says) {
			t.Errorf("config %v: %+v", c.args[:2], r)
		}
		noSecret("a refused set", r)
		if b, _ := os.ReadFile(envPath); string(b) != string(before) {
			t.Fatalf("a refused set changed .env: %q", b)
		}
	}
	// A .env written by hand, readable by others, with a line that does
	// not parse: every command warns (by line, never a value) and works;
	// the rest of the file is read.
	hand := "# from ~/.hermes/.env\nexport ATRIUM_T_API_KEY=\"" + secret + "\"\nthis line is not a statement\nATRIUM_T_OTHER=${ATRIUM_T_API_KEY}\n"
	if err := os.WriteFile(envPath, []byte(hand), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(envPath, 0o644); err != nil {
		t.Fatal(err)
	}
	r := ok(nil, "send", id, "hello")
	if a := <-auth; a != "Bearer "+secret {
		t.Fatalf("from a hand-written .env, the model was asked with %q", a)
	}
	if !strings.Contains(r.stderr, "line 3 does not parse") || !strings.Contains(r.stderr, "mode 0644") {
		t.Fatalf("warnings: %q", r.stderr)
	}
	// Unset removes only its statement.
	if r := ok(nil, "config", "unset", "ATRIUM_T_API_KEY"); r.stdout != "unset ATRIUM_T_API_KEY in "+envPath+"\n" {
		t.Fatalf("unset: %q", r.stdout)
	}
	if b, _ := os.ReadFile(envPath); string(b) != "# from ~/.hermes/.env\nthis line is not a statement\nATRIUM_T_OTHER=${ATRIUM_T_API_KEY}\n" {
		t.Fatalf("after unset: %q", b)
	}
	if r := atriumExec(t, home, "", nil, "config", "get", "ATRIUM_T_API_KEY"); r.code != cli.ExitNotFound {
		t.Fatalf("get after unset: %+v", r)
	}
	// A .env that is not text is said not to be read; commands still run.
	if err := os.WriteFile(envPath, []byte("K=\xff\xfe\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := ok(nil, "sessions", "list"); !strings.Contains(r.stderr, "is not read: ") || !strings.Contains(r.stderr, "not UTF-8") {
		t.Fatalf("a broken .env: %+v", r)
	}
	select {
	case a := <-auth:
		t.Fatalf("an unexpected model call with %q", a)
	default:
	}
}

// A plugin that requires a variable gets it from the profile's .env, as
// from the environment.
func TestAPluginGetsItsVariableFromDotEnv(t *testing.T) {
	needPython(t)
	t.Parallel()
	home := withPlugin(t, "pyenvkey", "[]\nrequires_env: [ATRIUM_T_PLUGIN_TOKEN]\ncommands: [envkey]", `
import os
def register(ctx):
    def envkey(raw_args, **kwargs):
        v = os.environ.get("ATRIUM_T_PLUGIN_TOKEN")
        return "token of %d characters" % len(v) if v else "no token"
    ctx.register_command("envkey", handler=envkey, description="says whether it has its token")
`)
	id := create(t, home)
	if r := atriumExec(t, home, "", nil, "config", "set", "ATRIUM_T_PLUGIN_TOKEN", "tok-123456"); r.code != 0 {
		t.Fatalf("set: %+v", r)
	}
	// The host may have started before the token was set: a new one
	// reads the .env when it starts.
	if r := atriumExec(t, home, "", nil, "plugins", "host", "stop"); r.code != 0 {
		t.Fatalf("host stop: %+v", r)
	}
	if r := atriumExec(t, home, "", nil, "send", id, "/envkey"); r.code != 0 || !strings.Contains(r.stdout, "token of 10 characters") {
		t.Fatalf("/envkey: %+v", r)
	}
}

// A plugin's requires_env, as the familiar agent's `plugins install` asks
// for it: at a terminal each missing variable is asked for (a secret typed
// unseen) and kept in .env, Enter skips; elsewhere a line says how to set
// what is missing, and `plugins list --json` names it.
func TestPluginInstallAsksForWhatItRequires(t *testing.T) {
	needPython(t)
	t.Parallel()
	// LD_PRELOAD: a manifest naming a variable that runs code in every
	// program gets no prompt for it, at a terminal or not.
	const manifest = "[]\nrequires_env:\n  - ATRIUM_T_NEED_A\n  - LD_PRELOAD\n  - name: ATRIUM_T_NEED_B\n    description: the B service's key\n    url: https://example.invalid/keys\n    secret: true\n  - ATRIUM_T_NEED_C"
	src := t.TempDir()
	writePlugin(t, src, "pyneeds", manifest, "def register(ctx):\n    pass\n")
	// Not at a terminal: said, not asked.
	home := t.TempDir()
	r := atriumExec(t, home, "", nil, "plugins", "install", filepath.Join(src, "pyneeds"))
	if r.code != 0 {
		t.Fatalf("install: %+v", r)
	}
	for _, n := range []string{"ATRIUM_T_NEED_A", "ATRIUM_T_NEED_B", "ATRIUM_T_NEED_C"} {
		if !strings.Contains(r.stderr, "requires "+n+", which is not set: `atrium config set "+n+" VALUE`") {
			t.Fatalf("install does not say %s is missing: %q", n, r.stderr)
		}
	}
	const refused = "requires LD_PRELOAD, which changes how every program starts: Atrium does not ask for it"
	if !strings.Contains(r.stderr, refused) || strings.Contains(r.stderr, "config set LD_PRELOAD") {
		t.Fatalf("install and LD_PRELOAD: %q", r.stderr)
	}
	if r := atriumExec(t, home, "", nil, "config", "set", "ATRIUM_T_NEED_A", "a1"); r.code != 0 {
		t.Fatalf("config set: %+v", r)
	}
	var rows []struct {
		Name       string   `json:"name"`
		MissingEnv []string `json:"missing_env"`
	}
	mustJSON(t, atriumExec(t, home, "", nil, "plugins", "list", "--json"), &rows)
	for _, p := range rows {
		if p.Name == "pyneeds" && strings.Join(p.MissingEnv, ",") != "LD_PRELOAD,ATRIUM_T_NEED_B,ATRIUM_T_NEED_C" {
			t.Fatalf("missing_env after setting A: %v", p.MissingEnv)
		}
	}
	// At a terminal: asked, B unseen, C skipped.
	home = t.TempDir()
	cmd, in, out := onATerminal(t, home, "plugins", "install", filepath.Join(src, "pyneeds"))
	for _, step := range []struct{ prompt, answer string }{
		{"ATRIUM_T_NEED_A (Enter skips): ", "alpha"},
		{"pyneeds needs ATRIUM_T_NEED_B: the B service's key (https://example.invalid/keys)\r\nATRIUM_T_NEED_B (Enter skips): ", "beta-unseen"},
		{"ATRIUM_T_NEED_C (Enter skips): ", ""},
	} {
		waitFor(t, step.prompt, 30*time.Second, func() bool { return strings.Contains(out.String(), step.prompt) })
		_, _ = io.WriteString(in, step.answer+"\n")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("install at a terminal: %v\n%s", err, out)
	}
	text := out.String()
	if strings.Contains(text, "beta-unseen") || !strings.Contains(text, "saved ATRIUM_T_NEED_B in ") ||
		!strings.Contains(text, "requires ATRIUM_T_NEED_C, which is not set") || strings.Contains(text, "requires ATRIUM_T_NEED_A") ||
		!strings.Contains(text, refused) || strings.Contains(text, "LD_PRELOAD (Enter skips)") {
		t.Fatalf("the session:\n%s", text)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".env")); string(b) != "ATRIUM_T_NEED_A=alpha\nATRIUM_T_NEED_B=beta-unseen\n" {
		t.Fatalf(".env: %q", b)
	}
}
