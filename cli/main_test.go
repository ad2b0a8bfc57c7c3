package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"atrium/backend/plugins/proc"
	"atrium/cli"
)

// TestMain doubles as the atrium binary when the test binary is re-executed
// with ATRIUM_TEST_MAIN=1: end-to-end tests run the real command line as a
// real process, with its own plugin children and its own exit.
func TestMain(m *testing.M) {
	// As in main.go: the binary is its plugins' guard, in the tests too.
	if len(os.Args) > 1 && os.Args[1] == proc.GuardCommand {
		os.Exit(proc.Guard(os.Args[2:]))
	}
	if exe, err := os.Executable(); err == nil {
		proc.UseGuard(exe)
	}
	if os.Getenv("ATRIUM_TEST_MAIN") == "1" {
		proc.AtriumVersion = "v9.9.9-test"
		os.Exit(cli.Main(os.Args[1:], cli.Env{Version: "v9.9.9-test", Stdout: os.Stdout, Stderr: os.Stderr}))
	}
	// A command run in this process that starts a background plugin host
	// starts this binary: as atrium, never as the tests again.
	os.Setenv("ATRIUM_TEST_MAIN", "1")
	os.Setenv("GORACE", "atexit_sleep_ms=0")
	os.Exit(m.Run())
}

// stopHosts registers, once per home, a cleanup that stops the home's
// plugin host and waits until it is gone: no test leaves one behind.
var stopHosts sync.Map

func stopHostAtCleanup(t *testing.T, home string) {
	t.Helper()
	if _, loaded := stopHosts.LoadOrStore(home, true); loaded {
		return
	}
	t.Cleanup(func() {
		var out, errb bytes.Buffer
		if code := cli.Main([]string{"plugins", "host", "stop", "--home", home}, cli.Env{Version: "v9.9.9-test", Stdout: &out, Stderr: &errb}); code != 0 {
			t.Errorf("stop the plugin host of %s: exit %d: %s", home, code, errb.String())
		}
	})
}

// atriumExec runs `atrium args... --home home` as a child process with
// stdin and extra environment (KEY=VALUE).
func atriumExec(t *testing.T, home, stdin string, env []string, args ...string) run {
	t.Helper()
	stopHostAtCleanup(t, home)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append(args, "--home", home)...)
	cmd.Env = append(append(os.Environ(), "ATRIUM_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0"), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run atrium %v: %v", args, err)
	}
	return run{code, out.String(), errb.String()}
}
