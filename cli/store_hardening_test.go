package cli_test

import (
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// 16 processes opening a new home at once all succeed: the schema version
// is read under the write lock, so none runs a migration another applied.
func TestConcurrentFirstOpensOfANewHomeAllSucceed(t *testing.T) {
	t.Parallel()
	for round := range 2 {
		home := filepath.Join(t.TempDir(), "home")
		var wg sync.WaitGroup
		results := make([]run, 16)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = atriumExec(t, home, "", nil, "sessions", "list")
			}()
		}
		wg.Wait()
		for i, r := range results {
			if r.code != 0 {
				t.Errorf("round %d, process %d: exit %d: %s", round, i, r.code, r.stderr)
			}
		}
	}
}

// mountTmpfs mounts a small tmpfs at dir for the test (root only).
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounting a tmpfs (a read-only or full file system) needs root; run the tests as root to cover it")
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("skipped: cannot mount a tmpfs here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// oneLine checks stderr is exactly one line saying all of want.
func wantOneLine(t *testing.T, what string, r run, code int, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != code || len(lines) != 1 {
		t.Fatalf("%s: exit %d (want %d), stderr %q", what, r.code, code, r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(lines[0], w) {
			t.Fatalf("%s: %q does not say %q", what, lines[0], w)
		}
	}
}

func TestReadOnlyHomeServesReadsAndRefusesWritesInOneLine(t *testing.T) {
	t.Parallel()
	mnt := t.TempDir()
	mountTmpfs(t, mnt, "8m")
	home := filepath.Join(mnt, "home")
	id := create(t, home, "--title", "kept")
	if out, err := exec.Command("mount", "-o", "remount,ro", mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v %s", err, out)
	}
	r := atriumExec(t, home, "", nil, "sessions", "list")
	if r.code != 0 || !strings.Contains(r.stdout, id) || r.stderr != "" {
		t.Fatalf("sessions list on a read-only home: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := atriumExec(t, home, "", nil, "sessions", "show", id); r.code != 0 {
		t.Fatalf("sessions show: %+v", r)
	}
	if r := atriumExec(t, home, "", nil, "events", "list"); r.code != 0 {
		t.Fatalf("events list: %+v", r)
	}
	wantOneLine(t, "create", atriumExec(t, home, "", nil, "sessions", "create", "--title", "x"), 5,
		"cannot write the store", "read-only file system")
	wantOneLine(t, "delete", atriumExec(t, home, "", nil, "sessions", "delete", id), 5,
		"cannot write the store", "read-only file system")
	// A key for .env is refused the same way, without its value.
	r = atriumExec(t, home, "", nil, "config", "set", "ATRIUM_T_TOKEN", "tok-not-echoed")
	wantOneLine(t, "config set of a key", r, 5, "ATRIUM_T_TOKEN", "is unchanged", "read-only file system")
	if strings.Contains(r.stderr, "tok-not-echoed") {
		t.Fatalf("the refusal echoes the value: %q", r.stderr)
	}
}

func TestFullDiskServesReadsAndRefusesWritesInOneLine(t *testing.T) {
	t.Parallel()
	mnt := t.TempDir()
	mountTmpfs(t, mnt, "2m")
	home := filepath.Join(mnt, "home")
	id := create(t, home, "--title", "kept")
	fill := fillDisk(t, mnt, nil)
	defer fill.Close()
	before := fileSum(t, filepath.Join(home, "state.db"))
	r := atriumExec(t, home, "", nil, "sessions", "list")
	if r.code != 0 || !strings.Contains(r.stdout, id) || r.stderr != "" {
		t.Fatalf("sessions list on a full disk: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	long := strings.Repeat("a title to need a page ", 10)
	for i := range 3 {
		// Take whatever space came back since, so each create meets a disk
		// with no block left: the pages of an exited process's -shm mapping
		// are freed by whoever drops the last reference to its memory (a
		// test reading /proc, say), which can be after its wait returned.
		// A create writes a handful of WAL pages; the -shm held eight.
		fillDisk(t, mnt, fill)
		r := atriumExec(t, home, "", nil, "sessions", "create", "--title", long)
		if r.code != 5 {
			t.Errorf("create %d on a full disk: %s", i, diskState(mnt))
		}
		wantOneLine(t, "create", r, 5, "cannot be written", "the disk is full")
	}
	if after := fileSum(t, filepath.Join(home, "state.db")); after != before {
		t.Fatal("the store changed")
	}
}

// fillDisk writes to the file "fill" under mnt (f, or a new one) until the
// file system answers ENOSPC, in ever smaller pieces down to one byte, and
// checks that no block is left free. Any other error fails the test with
// what the file system said, so a disk that did not fill is never taken
// for a full one.
func fillDisk(t *testing.T, mnt string, f *os.File) *os.File {
	t.Helper()
	if f == nil {
		var err error
		if f, err = os.OpenFile(filepath.Join(mnt, "fill"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, size := range []int{64 << 10, 4 << 10, 512, 1} {
		chunk := make([]byte, size)
		for {
			_, err := f.Write(chunk)
			if err == nil {
				continue
			}
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v (want ENOSPC); %s", mnt, err, diskState(mnt))
			}
			break
		}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	if st.Bavail != 0 {
		t.Fatalf("%s is not full after ENOSPC: %s", mnt, diskState(mnt))
	}
	return f
}

// diskState says how full mnt is and what files it holds, for a failure.
func diskState(mnt string) string {
	var b strings.Builder
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err == nil {
		fmt.Fprintf(&b, "%d of %d blocks of %d bytes free; ", st.Bavail, st.Blocks, st.Bsize)
	}
	_ = filepath.WalkDir(mnt, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, ierr := d.Info(); ierr == nil {
				fmt.Fprintf(&b, "%s %d; ", strings.TrimPrefix(p, mnt+"/"), info.Size())
			}
		}
		return nil
	})
	return b.String()
}

// damagePage overwrites the header of table's root page.
func damagePage(t *testing.T, path, table string) {
	t.Helper()
	d, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var root, size int64
	if err := d.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = ?`, table).Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := d.QueryRow(`PRAGMA page_size`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	d.Close()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, (root-1)*size); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestDamagedStoreSaysSoAndIsNotWrittenTo(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for i := range 3 {
		create(t, home, "--title", fmt.Sprint("s", i))
	}
	path := filepath.Join(home, "state.db")
	damagePage(t, path, "sessions")
	before := fileSum(t, path)
	hint := []string{"is damaged", "PRAGMA integrity_check", "backup", "writes nothing more"}
	wantOneLine(t, "list", atriumExec(t, home, "", nil, "sessions", "list"), 5, hint...)
	wantOneLine(t, "create", atriumExec(t, home, "", nil, "sessions", "create", "--title", "x"), 5, hint...)
	if after := fileSum(t, path); after != before {
		t.Fatal("the damaged store was written to")
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if info, err := os.Stat(path + suffix); err == nil && info.Size() > 0 && suffix == "-wal" {
			t.Fatalf("a WAL was left beside the damaged store: %d bytes", info.Size())
		}
	}
}

func TestStoreAndHomeArePrivate(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	create(t, home, "--title", "private")
	for path, want := range map[string]os.FileMode{
		home:                            0o700,
		filepath.Join(home, "sessions"): 0o700,
		filepath.Join(home, "state.db"): 0o600,
	} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s: mode %o, want %o", path, info.Mode().Perm(), want)
		}
	}
}
