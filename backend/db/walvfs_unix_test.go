//go:build unix

package db

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

const walHelperEnv = "ATRIUM_WALVFS_HELPER"

// TestMain's helper: with ATRIUM_WALVFS_HELPER=mode:path set, the test
// binary is a writer process for the two tests below.
func TestMain(m *testing.M) {
	if h := os.Getenv(walHelperEnv); h != "" {
		mode, path, _ := strings.Cut(h, ":")
		os.Exit(walHelper(mode, path))
	}
	os.Exit(m.Run())
}

func walHelper(mode, path string) int {
	if tag, ok := strings.CutPrefix(mode, "stress-"); ok {
		return stressWriter(tag, path)
	}
	d, err := Open(context.Background(), path, Options{})
	if err != nil {
		fmt.Println("open:", err)
		return 1
	}
	switch mode {
	case "commit-then-hang":
		// Commit rows one by one, say so after each, then wait to be killed.
		for i := 1; i <= 100; i++ {
			if err := d.Write.Exec(`INSERT INTO t VALUES ('killed', zeroblob(3000))`).Error; err != nil {
				fmt.Println("insert:", err)
				return 1
			}
			fmt.Println(i)
		}
		select {}
	case "file-limit":
		// The process may not grow files past their size now (as a full
		// disk): a commit must fail with the write's error, the others stand.
		signal.Ignore(syscall.SIGXFSZ)
		if err := d.Write.Exec(`INSERT INTO t VALUES ('limited', zeroblob(100))`).Error; err != nil {
			fmt.Println("small insert:", err)
			return 1
		}
		var size int64
		for _, p := range []string{path, path + "-wal"} {
			if fi, err := os.Stat(p); err == nil && fi.Size() > size {
				size = fi.Size()
			}
		}
		lim := uint64(size + 16<<10)
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
			fmt.Println("setrlimit:", err)
			return 1
		}
		err := d.Write.Exec(`INSERT INTO t SELECT 'too big', zeroblob(3000) FROM json_each(?)`, "["+strings.Repeat("0,", 199)+"0]").Error
		fmt.Println("big insert:", err)
		_ = d.Close()
		if err == nil {
			return 2
		}
		return 0
	}
	return 1
}

func helperCmd(t *testing.T, mode, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), walHelperEnv+"="+mode+":"+path)
	cmd.Stderr = os.Stderr
	return cmd
}

func newStoreWithT(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	d, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Write.Exec(`CREATE TABLE t(tag TEXT, body BLOB)`).Error; err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A commit is in the WAL file when it returns: a writer process killed
// right after keeps every row it said it committed.
func TestCommitsSurviveTheWriterBeingKilled(t *testing.T) {
	path := newStoreWithT(t)
	cmd := helperCmd(t, "commit-then-hang", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	said := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		n, err := strconv.Atoi(sc.Text())
		if err != nil {
			t.Fatalf("helper: %s", sc.Text())
		}
		if said = n; n == 100 {
			break
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if said != 100 {
		t.Fatalf("the helper committed %d rows, want 100", said)
	}
	wholeAndHolds(t, path, map[string]int{"killed": 100 * 3000})
}

// A commit the file system refuses to take fails with that error, and the
// store keeps what was committed before it.
func TestCommitThatCannotBeWrittenFailsAndLosesNothing(t *testing.T) {
	path := newStoreWithT(t)
	out, err := helperCmd(t, "file-limit", path).Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "big insert: ") || !strings.Contains(string(out), "file too large") {
		t.Fatalf("the commit past the limit did not fail with the write's error; the helper said:\n%s", out)
	}
	wholeAndHolds(t, path, map[string]int{"limited": 100})
}

const stressCommits = 1000

// stressWriter commits stressCommits rows tagged tag, one per transaction,
// and every fifth time first writes a transaction larger than its page
// cache (it spills pages to the WAL) and rolls it back.
func stressWriter(tag, path string) int {
	s, err := sql.Open(driverName, vfsDSN(path, 10000))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer s.Close()
	s.SetMaxOpenConns(1)
	if _, err := s.Exec(`PRAGMA cache_size=10`); err != nil {
		fmt.Println(err)
		return 1
	}
	// Start when the test says so, with the other writer.
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Println("stdin:", err)
		return 1
	}
	for i := range stressCommits {
		if i%5 == 0 {
			tx, err := s.Begin()
			if err != nil {
				fmt.Println("begin:", err)
				return 1
			}
			for range 40 {
				if _, err := tx.Exec(`INSERT INTO t VALUES ('rolled back', zeroblob(3000))`); err != nil {
					fmt.Println("spill:", err)
					return 1
				}
			}
			if err := tx.Rollback(); err != nil {
				fmt.Println("rollback:", err)
				return 1
			}
		}
		if _, err := s.Exec(`INSERT INTO t VALUES (?, zeroblob(3000))`, tag); err != nil {
			fmt.Println("insert:", err)
			return 1
		}
	}
	return 0
}

// Two processes write the same store at once through the VFS, each
// committing rows and rolling back transactions that spilled to the WAL:
// every committed row is there, no rolled-back one, and the file is whole.
func TestTwoWriterProcessesThroughTheVFS(t *testing.T) {
	path := newStoreWithT(t)
	var cmds []*exec.Cmd
	var gos []io.WriteCloser
	for _, tag := range []string{"a", "b"} {
		cmd := helperCmd(t, "stress-"+tag, path)
		cmd.Stdout = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, gos = append(cmds, cmd), append(gos, in)
	}
	for _, in := range gos {
		_, _ = io.WriteString(in, "go\n")
		_ = in.Close()
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer process: %v", err)
		}
	}
	wholeAndHolds(t, path, map[string]int{"a": stressCommits * 3000, "b": stressCommits * 3000})
}
