package cli_test

import (
	"archive/zip"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// measured runs `atrium args...` as a process and returns its wall time and
// peak resident memory (KiB).
func measured(t *testing.T, home string, args ...string) (time.Duration, int64) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append(args, "--home", home)...)
	cmd.Env = append(os.Environ(), "ATRIUM_TEST_MAIN=1", "GORACE=atexit_sleep_ms=0")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("atrium %v: %v\n%s", args, err, errb.String())
	}
	return time.Since(start), cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
}

// A plugins folder holding hostile manifests (nesting that costs the YAML
// parser n², a 64 MB file) costs every command almost nothing: each is one
// error row, read no further than its bound, and sessions can be listed,
// created and deleted. (The figures are the best of five interleaved runs,
// and the test does not run beside the package's parallel tests, so a busy
// machine does not decide them.)
func TestHostileManifestsDoNotTakeCommandsDown(t *testing.T) {
	clean, hostile := t.TempDir(), t.TempDir()
	for _, home := range []string{clean, hostile} {
		create(t, home, "--title", "kept")
	}
	deep := func(n int) string {
		return "name: deep\nruntime: python\nconfig_schema: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n"
	}
	for name, body := range map[string]string{"deep": deep(100_000), "deep-small": deep(20_000)} {
		dir := filepath.Join(hostile, "plugins", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hugeDir := filepath.Join(hostile, "plugins", "huge")
	if err := os.MkdirAll(hugeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(hugeDir, "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("- an entry of a long list\n"), 40_000)
	for written := 0; written < 64<<20; written += len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()

	ct, cm, ht, hm := time.Hour, int64(1<<62), time.Hour, int64(1<<62)
	for range 5 {
		d, m := measured(t, clean, "sessions", "list")
		ct, cm = min(ct, d), min(cm, m)
		d, m = measured(t, hostile, "sessions", "list")
		ht, hm = min(ht, d), min(hm, m)
	}
	t.Logf("sessions list: %v, %d KiB without; %v, %d KiB with the hostile manifests", ct, cm, ht, hm)
	// A guard against the regression (seconds and gigabytes per command), not
	// a timing: on a loaded machine the clean command itself stretches, so
	// the bound is 100 ms or the clean command's own time, whichever is more.
	// The figure on a quiet machine is in docs/benchmarks.md.
	if bound := max(100*time.Millisecond, ct); ht-ct > bound {
		t.Errorf("hostile manifests cost %v more per command (the bound is %v)", ht-ct, bound)
	}
	if hm-cm > 50<<10 {
		t.Errorf("hostile manifests cost %d KiB more per command (the bound is 50 MiB)", hm-cm)
	}

	// Sessions are created and deleted; each bad plugin is one error row.
	id := create(t, hostile, "--title", "new")
	if r := atriumExec(t, hostile, "", nil, "sessions", "delete", id); r.code != 0 {
		t.Fatalf("delete: %+v", r)
	}
	r := atriumExec(t, hostile, "", nil, "plugins", "list")
	if r.code != 0 || strings.Count(r.stdout, "over the 64 KiB limit") != 2 || !strings.Contains(r.stdout, "nested deeper than 32 levels") {
		t.Fatalf("plugins list: %+v", r)
	}

	// A small zip of a deep manifest, the install route's input, is
	// invalid input at once.
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("plugin.yaml")
	_, _ = w.Write([]byte(deep(100_000)))
	zw.Close()
	z := filepath.Join(t.TempDir(), "deep.zip")
	if err := os.WriteFile(z, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := atriumExec(t, clean, "", nil, "plugins", "install", z); r.code != 2 || !strings.Contains(r.stderr, "over the 64 KiB limit") {
		t.Fatalf("install a %d-byte zip of a deep manifest: %+v", buf.Len(), r)
	}
}
