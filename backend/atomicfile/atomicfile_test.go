package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWholeAndCleansUp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new"), 0o600, nil); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(b) != "new" || st.Mode().Perm() != 0o600 {
		t.Fatalf("%q %v", b, st.Mode())
	}
	// A refused check leaves the old file and no temporary.
	refused := errors.New("no")
	if err := Write(path, []byte("bad"), 0o600, func(string) error { return refused }); !errors.Is(err, refused) {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	entries, _ := os.ReadDir(dir)
	if string(b) != "new" || len(entries) != 1 {
		t.Fatalf("%q, %d entries", b, len(entries))
	}
	// A missing folder is an error, not a created one.
	if err := Write(filepath.Join(dir, "no", "f"), nil, 0o644, nil); err == nil {
		t.Fatal("wrote into a missing folder")
	}
}
