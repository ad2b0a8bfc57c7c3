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
	// Unsynced: the same replacement, the same cleanup.
	if err := WriteUnsynced(path, []byte("newer"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	entries, _ = os.ReadDir(dir)
	if string(b) != "newer" || len(entries) != 1 {
		t.Fatalf("unsynced: %q, %d entries", b, len(entries))
	}
}

func TestReplaceKeepsALinkAndItsMode(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "kept", "f")
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Replace(link, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link is no longer a link: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Fatalf("target: %q", b)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
	fresh := filepath.Join(dir, "fresh")
	if err := Replace(fresh, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != 0o600 {
		t.Fatalf("a new file is %v", fi.Mode().Perm())
	}
}
