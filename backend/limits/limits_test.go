package limits

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"atrium/backend/apperr"
)

// ReadFile reads a regular file up to its bound; a larger one, a folder, a
// FIFO (which would block) and a device (which would never end) are each
// an invalid error, at once.
func TestReadFileReadsOnlyABoundedRegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("1234"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(ok, 4, "a test file"); err != nil || string(b) != "1234" {
		t.Fatalf("%q %v", b, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	dev := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", dev); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{ok: "is 4 bytes, over the 3 bytes limit for a test file", dir: "is a folder",
		fifo: "is not a regular file", dev: "is not a regular file"} {
		max := int64(3)
		if _, err := ReadFile(path, max, "a test file"); apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), 3, "a test file"); !os.IsNotExist(err) {
		t.Fatalf("missing: %v", err)
	}
}
