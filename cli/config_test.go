package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atrium/cli"
)

// The familiar agent's `hermes config` (show, path, set with its value
// reading) and get/unset: each change touches only its key's lines, a
// value config.yaml refuses changes nothing, and a secret is never written.
func TestTheFamiliarConfigCommand(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	const written = "# my atrium\n\nsessions:\n  trash_days: 30   # a month\n\nplugins:\n  enabled: [memory]\ncolour: blue\n"
	if err := os.WriteFile(path, []byte(written), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ok := func(args ...string) string {
		t.Helper()
		r := atriumExec(t, home, "", nil, append([]string{"config"}, args...)...)
		if r.code != 0 {
			t.Fatalf("config %v: %+v", args, r)
		}
		return r.stdout
	}
	if out := ok("path"); out != path+"\n" {
		t.Fatalf("path: %q", out)
	}
	if out := ok(); !strings.HasPrefix(out, "# "+path+"\n"+written) || !strings.Contains(out, "# warning: ") || !strings.Contains(out, "colour") {
		t.Fatalf("show: %q", out)
	}
	want := written
	set := func(key, value, from, to string) {
		t.Helper()
		if out := ok("set", key, value); !strings.HasPrefix(out, "set "+key+" = ") {
			t.Fatalf("set %s: %q", key, out)
		}
		want = strings.Replace(want, from, to, 1)
		if got := read(); got != want {
			t.Fatalf("set %s %s:\n%s\nwant\n%s", key, value, got, want)
		}
	}
	set("sessions.trash_days", "7", "trash_days: 30   #", "trash_days: 7   #")
	set("plugins.enabled", "[memory, notes]", "[memory]", "[memory, notes]")
	set("maintenance.disabled", "yes", "colour: blue\n", "colour: blue\nmaintenance:\n  disabled: true\n")
	set("plugins.hook_callback_timeout", "2.5", "  enabled: [memory, notes]\n", "  enabled: [memory, notes]\n  hook_callback_timeout: 2.5\n")
	set("storage.synchronous", "FULL", "  disabled: true\n", "  disabled: true\nstorage:\n  synchronous: FULL\n")
	// A word where config.yaml keeps text stays text (hermes would write
	// false for off).
	set("approvals.mode", "off", "  synchronous: FULL\n", "  synchronous: FULL\napprovals:\n  mode: \"off\"\n")
	if out := ok("get", "sessions.trash_days"); out != "7\n" {
		t.Fatalf("get: %q", out)
	}
	if out := ok("get", "plugins"); out != "enabled:\n  - memory\n  - notes\nhook_callback_timeout: 2.5\n" {
		t.Fatalf("get a section: %q", out)
	}
	var got struct {
		Value map[string]any `json:"value"`
	}
	if err := json.Unmarshal([]byte(ok("get", "plugins", "--json")), &got); err != nil || got.Value["hook_callback_timeout"] != 2.5 {
		t.Fatalf("get --json: %+v %v", got, err)
	}
	// Refused: a value config.yaml does not take, a token pasted with
	// smart quotes, a key that is not one, a key that is not set.
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"set", "sessions.trash_days", "soon"}, cli.ExitInvalid, "trash_days"},
		{[]string{"set", "storage.synchronous", "SOMETIMES"}, cli.ExitInvalid, "synchronous"},
		{[]string{"set", "TELEGRAM_BOT_TOKEN", "\u201c123:secret\u201d"}, cli.ExitInvalid, "not ASCII"}, // goes to .env, refused there
		{[]string{"set", "sessions..trash_days", "1"}, cli.ExitInvalid, "not a key"},
		{[]string{"set", "plugins.enabled", "[unclosed"}, cli.ExitInvalid, "not a YAML list"},
		{[]string{"get", "sessions.retention_days"}, cli.ExitNotFound, "its default applies"},
	} {
		r := atriumExec(t, home, "", nil, append([]string{"config"}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.says) || strings.Contains(r.stderr+r.stdout, "secret") {
			t.Errorf("config %v: %+v", c.args, r)
		}
		if got := read(); got != want {
			t.Fatalf("config %v changed the file:\n%s", c.args, got)
		}
	}
	// Unset: the key and the comments right above it; a section left
	// empty goes with its last key; twice is not an error.
	if out := ok("unset", "sessions.trash_days"); out != "unset sessions.trash_days in "+path+"\n" {
		t.Fatalf("unset: %q", out)
	}
	want = strings.Replace(want, "sessions:\n  trash_days: 7   # a month\n\n", "", 1)
	if got := read(); got != want {
		t.Fatalf("unset:\n%s\nwant\n%s", got, want)
	}
	if out := ok("unset", "sessions.trash_days"); !strings.Contains(out, "was not set") {
		t.Fatalf("unset again: %q", out)
	}
	// A profile with no config.yaml yet.
	fresh := t.TempDir()
	r := atriumExec(t, fresh, "", nil, "config")
	if r.code != 0 || !strings.Contains(r.stdout, "no file: every setting has its default") {
		t.Fatalf("show, no file: %+v", r)
	}
	if r := atriumExec(t, fresh, "", nil, "config", "set", "sessions.trash_days", "3"); r.code != 0 {
		t.Fatalf("set, no file: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(fresh, "config.yaml")); string(b) != "sessions:\n  trash_days: 3\n" {
		t.Fatalf("a new file: %q", b)
	}
}

// `config edit` edits a copy in $VISUAL or $EDITOR and writes it back only
// when it loads and nobody changed the file meanwhile; otherwise the file
// is as it was and the edit is kept where it says.
func TestConfigEditWritesBackOnlyWhatLoads(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	const written = "# mine\nsessions:\n  trash_days: 30\n"
	if err := os.WriteFile(path, []byte(written), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	script := func(name, body string) string {
		t.Helper()
		p := filepath.Join(bin, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edit := func(env ...string) run {
		t.Helper()
		// VISUAL is cleared unless a case sets it: the test's own
		// environment must not choose the editor.
		return atriumExec(t, home, "", append([]string{"VISUAL=", "EDITOR="}, env...), "config", "edit")
	}
	read := func() string {
		t.Helper()
		b, _ := os.ReadFile(path)
		return string(b)
	}
	// An editor with arguments, as EDITOR often is.
	appendMode := script("append", `[ "$1" = "--wait" ] || exit 9; printf 'approvals:\n  mode: "off"\n' >> "$2"`+"\n")
	if r := edit("EDITOR=" + appendMode + " --wait"); r.code != 0 || !strings.Contains(r.stdout, "saved "+path) {
		t.Fatalf("edit: %+v", r)
	}
	want := written + "approvals:\n  mode: \"off\"\n"
	if got := read(); got != want {
		t.Fatalf("after the edit: %q", got)
	}
	// VISUAL comes first; a copy left as it was writes nothing.
	if r := edit("VISUAL="+script("same", "exit 0\n"), "EDITOR="+appendMode); r.code != 0 || !strings.Contains(r.stdout, "no change") {
		t.Fatalf("no change: %+v", r)
	}
	// A copy that does not load: refused, kept, the file as it was.
	r := edit("EDITOR=" + script("break", `printf 'sessions:\n  trash_days: soon\n' > "$1"`+"\n"))
	if r.code != cli.ExitInvalid || !strings.Contains(r.stderr, "does not load") || !strings.Contains(r.stderr, "your edit is at ") {
		t.Fatalf("a broken edit: %+v", r)
	}
	kept := keptAt(t, r.stderr)
	if b, err := os.ReadFile(kept); err != nil || !strings.Contains(string(b), "soon") {
		t.Fatalf("the kept edit %s: %q %v", kept, b, err)
	}
	if got := read(); got != want {
		t.Fatalf("a broken edit changed the file: %q", got)
	}
	// Another process writes the file while the editor is open.
	r = edit("EDITOR=" + script("race", `printf 'sessions:\n  trash_days: 1\n' > '`+path+`'; printf 'sessions:\n  trash_days: 2\n' > "$1"`+"\n"))
	if r.code != cli.ExitConflict || !strings.Contains(r.stderr, "changed while you edited it") {
		t.Fatalf("a race: %+v", r)
	}
	if b, err := os.ReadFile(keptAt(t, r.stderr)); err != nil || string(b) != "sessions:\n  trash_days: 2\n" {
		t.Fatalf("the edit that lost the race is not kept: %q %v", b, err)
	}
	if got := read(); got != "sessions:\n  trash_days: 1\n" {
		t.Fatalf("the other process's write was lost: %q", got)
	}
	// An editor that fails changes nothing.
	if r := edit("EDITOR=" + script("fail", "exit 3\n")); r.code != cli.ExitInvalid || !strings.Contains(r.stderr, "unchanged") {
		t.Fatalf("a failing editor: %+v", r)
	}
	if got := read(); got != "sessions:\n  trash_days: 1\n" {
		t.Fatalf("a failing editor changed the file: %q", got)
	}
}

// keptAt is the path an error names after "your edit is at ".
func keptAt(t *testing.T, stderr string) string {
	t.Helper()
	_, rest, ok := strings.Cut(stderr, "your edit is at ")
	if !ok {
		t.Fatalf("no kept path in %q", stderr)
	}
	p := strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0])
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(p)) })
	return p
}

// At a terminal, an edit that does not load is offered again: yes opens the
// editor on the edit, no leaves the file as it was.
func TestConfigEditAtATerminalOffersTheEditAgain(t *testing.T) {
	t.Parallel()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("this test needs script(1) from util-linux: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	if err := os.WriteFile(path, []byte("sessions:\n  trash_days: 30\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The editor breaks the copy the first time and mends it the second.
	editor := filepath.Join(t.TempDir(), "editor")
	body := `#!/bin/sh
if grep -q soon "$1"; then sed -i 's/soon/9/' "$1"; else sed -i 's/30/soon/' "$1"; fi
`
	if err := os.WriteFile(editor, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	session := func(answer string) (string, error) {
		t.Helper()
		cmd := exec.Command(scriptBin, "-qec", fmt.Sprintf("exec '%s' config edit --home '%s'", exe, home), "/dev/null")
		cmd.Env = append(os.Environ(), "ATRIUM_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0", "VISUAL=", "EDITOR="+editor)
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out := &lockedBuf{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the offer", 30*time.Second, func() bool { return strings.Contains(out.String(), "Edit again? [Y/n]") })
		_, _ = io.WriteString(in, answer+"\n")
		err = cmd.Wait()
		return out.String(), err
	}
	out, err := session("n")
	if err == nil || !strings.Contains(out, "does not load") || !strings.Contains(out, "config.yaml is unchanged") {
		t.Fatalf("no: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(keptAt(t, out)); err != nil || !strings.Contains(string(b), "soon") {
		t.Fatalf("the edit declined is not kept: %q %v", b, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "sessions:\n  trash_days: 30\n" {
		t.Fatalf("no changed the file: %q", b)
	}
	out, err = session("")
	if err != nil || !strings.Contains(out, "saved "+path) {
		t.Fatalf("yes: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(path); string(b) != "sessions:\n  trash_days: 9\n" {
		t.Fatalf("the second edit: %q", b)
	}
}

// A config.yaml brought from the familiar agent answers through its model
// block: provider auto at a base_url is that OpenAI-compatible server, the
// model is model.default, the key $OPENAI_API_KEY; a provider Atrium does
// not speak, or none at all, is a clear error, not a silent offline reply.
func TestAFamiliarModelBlockAnswers(t *testing.T) {
	t.Parallel()
	type asked struct{ model, auth string }
	got := make(chan asked, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		got <- asked{req.Model, r.Header.Get("Authorization")}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": "answer from " + req.Model}}},
			"usage": map[string]any{"prompt_tokens": 7, "completion_tokens": 3}})
	}))
	defer srv.Close()
	home := t.TempDir()
	familiar := "model:\n  # Both \"default\" and \"model\" work as the key name here.\n  default: \"local/qwen\"\n  provider: \"auto\"\n  base_url: \"" + srv.URL + "/v1\"\n  context_length: 32768\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(familiar), 0o600); err != nil {
		t.Fatal(err)
	}
	id := create(t, home, "--title", "brought along")
	r := atriumExec(t, home, "", []string{"OPENAI_API_KEY=sk-test-key"}, "send", id, "hello")
	if r.code != 0 || !strings.Contains(r.stdout, "answer from local/qwen") {
		t.Fatalf("send: %+v", r)
	}
	if a := <-got; a.model != "local/qwen" || a.auth != "Bearer sk-test-key" {
		t.Fatalf("the model was asked %+v", a)
	}
	for _, c := range []struct {
		flags []string
		says  string
	}{
		{[]string{"--provider", "anthropic"}, "set model.provider custom"},
		{[]string{"--provider", "bogus"}, "must be offline or openai"},
	} {
		r := atriumExec(t, home, "", nil, append([]string{"send", id, "hello"}, c.flags...)...)
		if r.code != cli.ExitInvalid || !strings.Contains(r.stderr, c.says) {
			t.Errorf("send %v: %+v", c.flags, r)
		}
	}
	// auto with neither a base_url nor OpenRouter's key.
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte("model:\n  provider: auto\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := atriumExec(t, home, "", []string{"OPENROUTER_API_KEY="}, "send", id, "hello"); r.code != cli.ExitInvalid || !strings.Contains(r.stderr, "found no model") {
		t.Fatalf("auto with nothing: %+v", r)
	}
	select {
	case a := <-got:
		t.Fatalf("a refused send reached the model: %+v", a)
	default:
	}
}

// `config set model NAME`, as the familiar agent's users type it: the
// name in the model block, which keeps the rest; without a block, its
// short form, which loads.
func TestConfigSetModelKeepsTheBlock(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	path := filepath.Join(home, "config.yaml")
	const block = "model:\n  default: \"qwen\"   # the model\n  provider: custom\n  base_url: http://127.0.0.1:9/v1\n"
	if err := os.WriteFile(path, []byte(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := atriumExec(t, home, "", nil, "config", "set", "model", "anthropic/claude-opus-4"); r.code != 0 {
		t.Fatalf("set model: %+v", r)
	}
	if b, _ := os.ReadFile(path); string(b) != strings.Replace(block, `"qwen"`, `anthropic/claude-opus-4`, 1) {
		t.Fatalf("the block after set model:\n%s", b)
	}
	fresh := t.TempDir()
	if r := atriumExec(t, fresh, "", nil, "config", "set", "model", "qwen/qwen3-coder"); r.code != 0 {
		t.Fatalf("set model without a block: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(fresh, "config.yaml")); string(b) != "model: qwen/qwen3-coder\n" {
		t.Fatalf("the short form: %q", b)
	}
	if r := atriumExec(t, fresh, "", nil, "config", "get", "model"); r.code != 0 || r.stdout != "qwen/qwen3-coder\n" || r.stderr != "" {
		t.Fatalf("get model: %+v", r)
	}
}
