package cmdprovider_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"atrium/backend/cmdprovider"
	"atrium/backend/cmdprovider/proctest"
)

// hostile is a value that would run a command if it were not quoted.
const hostile = `my 'voice' "note" $(touch pwned) ` + "`touch pwned2`" + ` \x.ogg`

// A placeholder's value is quoted for where it stands, bare, in single
// quotes or in double quotes: the shell hands the command the value
// itself, and nothing in it runs.
func TestRenderQuotesForTheShell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	value := filepath.Join(dir, hostile)
	tmpl := `printf '%s\n' {input_path} '{input_path}' "{input_path}" "x {input_path} y" 'a'{input_path}'b' {{input_path}}`
	cmd, unknown := cmdprovider.Render(tmpl, map[string]string{"input_path": value})
	if len(unknown) != 0 {
		t.Fatalf("unknown %q", unknown)
	}
	c := exec.Command("/bin/sh", "-c", cmd)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	want := strings.Join([]string{value, value, value, "x " + value + " y", "a" + value + "b", value}, "\n") + "\n"
	if string(out) != want {
		t.Fatalf("the shell got\n%q\nwant\n%q\n(command %s)", out, want, cmd)
	}
	for _, f := range []string{"pwned", "pwned2"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Fatalf("the file name ran a command (%s)", f)
		}
	}

	// {{ and }} are braces; ${name} is the shell's; an unknown {name} is
	// left and said.
	cmd, unknown = cmdprovider.Render(`echo {{"a": {model}}} ${model} {nope} {{nope}}`, map[string]string{"model": "tiny"})
	if cmd != `echo {"a": tiny} ${model} {nope} {nope}` || !slices.Equal(unknown, []string{"nope"}) {
		t.Fatalf("%q %q", cmd, unknown)
	}
	if got := cmdprovider.ShellQuote(""); got != "''" {
		t.Fatalf("empty: %s", got)
	}
	if got := cmdprovider.ShellQuote("/tmp/a_b-c.ogg"); got != "/tmp/a_b-c.ogg" {
		t.Fatalf("safe: %s", got)
	}
}

// Run gives the command only the environment it is handed, says its exit
// code and what it printed, kills it with what it started when it goes
// quiet, and lets one that keeps printing run past its idle time.
func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "ONLY=this"}
	res := cmdprovider.Run(context.Background(), `printf '%s|%s' "$ONLY" "$HOME"; echo oops >&2; exit 3`, env, 5*time.Second)
	if res.Err != nil || res.Code != 3 || res.Stdout != "this|" || res.Stderr != "oops" || res.TimedOut {
		t.Fatalf("%+v", res)
	}
	if got := res.Detail(); got != "stderr: oops; stdout: this|" {
		t.Fatalf("detail %q", got)
	}
	if got := (cmdprovider.Result{}).Detail(); got != "" {
		t.Fatalf("nothing printed: %q", got)
	}

	pidFile := filepath.Join(dir, "child")
	res = cmdprovider.Run(context.Background(), proctest.Hang(pidFile), env, 300*time.Millisecond)
	if !res.TimedOut || res.Code != -1 || res.Stdout != "started" {
		t.Fatalf("hang: %+v", res)
	}
	proctest.WaitKilled(t, pidFile)

	res = cmdprovider.Run(context.Background(), `i=0; while [ $i -lt 6 ]; do echo tick >&2; sleep 0.2; i=$((i+1)); done; echo done`, env, time.Second)
	if res.TimedOut || res.Code != 0 || res.Stdout != "done" {
		t.Fatalf("a slow command that prints: %+v", res)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if res = cmdprovider.Run(ctx, `sleep 300`, env, time.Minute); !errors.Is(res.Err, context.DeadlineExceeded) {
		t.Fatalf("the context's end: %+v", res)
	}
}
