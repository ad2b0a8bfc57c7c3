package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A chat from the command line runs the machine's tools as the familiar
// agent does: in terminal.cwd, a cd holding for the next command, the
// profile's keys kept out of a command's environment (unless
// terminal.env_passthrough names them), and, with nobody at a terminal to
// ask, a command that could destroy data not run.
func TestChatRunsTheMachinesTools(t *testing.T) {
	t.Parallel()
	home, work := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "sub", "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "terminal:\n  cwd: " + work + "\n  env_passthrough: [GITHUB_TOKEN]\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	stdin := `use tool terminal: {"command": "echo $MY_SETTING ${OPENAI_API_KEY:-no-key} $GITHUB_TOKEN; cd sub && pwd"}` + "\n" +
		`use tool terminal: {"command": "ls"}` + "\n" +
		`use tool terminal: {"command": "rm -r keep"}` + "\n" +
		`use tool read_file: {"path": "nowhere.txt"}` + "\n"
	r := atriumExec(t, home, stdin, []string{"MY_SETTING=visible", "OPENAI_API_KEY=sk-secret", "GITHUB_TOKEN=gh-passed"}, "chat")
	if r.code != 0 {
		t.Fatalf("chat: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		`visible no-key gh-passed\n` + filepath.Join(work, "sub"),
		`"output":"keep"`,
		`BLOCKED: a person's approval is required for this command (recursive delete)`,
		`File not found: ` + filepath.Join(work, "sub", "nowhere.txt"),
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the chat does not say %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "sk-secret") {
		t.Errorf("a command saw the profile's key:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(work, "sub", "keep")); err != nil {
		t.Errorf("the folder was removed with nobody to approve it: %v", err)
	}
}
