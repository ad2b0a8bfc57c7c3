package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A stamp vouches for the file it was read from until the file is
// replaced, grows or shrinks, or its time moves; never when it was read
// within a second of the file's time (a second write in the same tick may
// keep all three), nor before it was read at all.
func TestStampVouchesForTheFileAsItWasRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	write := func(body string, at time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	write("a: 1\n", old)
	if (Stamp{}).Vouches(StatStamp(path)) || StatStamp(path).Vouches(StatStamp(path)) {
		t.Fatal("a stamp never read vouched")
	}
	read := StatStamp(path).ReadNow()
	if !read.Vouches(StatStamp(path)) {
		t.Fatal("the file as it was read")
	}
	write("a: 2\n", old) // in place: same inode, size and time
	if !read.Vouches(StatStamp(path)) {
		t.Fatal("a stat cannot tell this write; the stamp was read long after the file's time")
	}
	write("a: 22\n", old)
	if read.Vouches(StatStamp(path)) {
		t.Fatal("another size")
	}
	write("a: 2\n", old.Add(time.Millisecond))
	if read.Vouches(StatStamp(path)) {
		t.Fatal("another time")
	}
	next := filepath.Join(t.TempDir(), "next")
	write("a: 2\n", old)
	if err := os.WriteFile(next, []byte("a: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(next, old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	if read.Vouches(StatStamp(path)) {
		t.Fatal("the file replaced (another inode)")
	}
	write("a: 3\n", time.Now())
	fresh := StatStamp(path).ReadNow()
	if fresh.Vouches(StatStamp(path)) {
		t.Fatal("read within a second of the file's time")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if fresh.Vouches(StatStamp(path)) {
		t.Fatal("the file removed")
	}
}
