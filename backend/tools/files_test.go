package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func read(t *testing.T, dir string, s Settings, args map[string]any) map[string]any {
	t.Helper()
	m, _ := runTool(t, readFileTool(), dir, s, args)
	return m
}

func write(t *testing.T, dir string, s Settings, args map[string]any) map[string]any {
	t.Helper()
	m, _ := runTool(t, writeFileTool(), dir, s, args)
	return m
}

func patchCall(t *testing.T, dir string, s Settings, args map[string]any) map[string]any {
	t.Helper()
	m, _ := runTool(t, patchTool(), dir, s, args)
	return m
}

// read_file shows lines as "N|line", paged by offset/limit, with a hint to read on.
func TestReadFileText(t *testing.T) {
	t.Parallel()
	ten := ""
	for i := 1; i <= 10; i++ {
		ten += "line" + string(rune('0'+i%10)) + "\n"
	}
	long := strings.Repeat("x", 2500)
	cases := []struct {
		name, content string
		args          map[string]any
		want          string
		total         int
		truncated     bool
		hint          string
	}{
		{name: "numbered", content: "a\nb\nc\n", want: "1|a\n2|b\n3|c", total: 3},
		{name: "no final newline", content: "a\nb", want: "1|a\n2|b", total: 2},
		{name: "empty", content: "", want: "", total: 0},
		{name: "offset and limit", content: ten, args: map[string]any{"offset": 3, "limit": 2},
			want: "3|line3\n4|line4", total: 10, truncated: true, hint: "Showing lines 3-4 of 10. Use offset=5 to continue reading."},
		{name: "limit as text", content: ten, args: map[string]any{"limit": "1"},
			want: "1|line1", total: 10, truncated: true, hint: "Use offset=2"},
		{name: "last page", content: ten, args: map[string]any{"offset": 9, "limit": 5}, want: "9|line9\n10|line0", total: 10},
		{name: "offset past end", content: ten, args: map[string]any{"offset": 50}, want: "", total: 10, hint: "past its end"},
		{name: "offset 0 is 1", content: "a\n", args: map[string]any{"offset": 0}, want: "1|a", total: 1},
		{name: "bom stripped", content: "\uFEFFhello\nworld\n", want: "1|hello\n2|world", total: 2},
		{name: "crlf", content: "a\r\nb\r\n", want: "1|a\n2|b", total: 2},
		{name: "long line clipped", content: long + "\nshort\n", want: "1|" + long[:2000] + "... [truncated]\n2|short", total: 2},
		{name: "utf-8 kept", content: "héllo wörld ✓\n", want: "1|héllo wörld ✓", total: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			putFile(t, filepath.Join(dir, "f.txt"), tc.content)
			args := map[string]any{"path": "f.txt"}
			for k, v := range tc.args {
				args[k] = v
			}
			m := read(t, dir, Settings{}, args)
			if str(m, "error") != "" {
				t.Fatalf("error %q", str(m, "error"))
			}
			if got := str(m, "content"); got != tc.want {
				t.Errorf("content %q, want %q", got, tc.want)
			}
			if num(t, m, "total_lines") != tc.total || num(t, m, "file_size") != len(tc.content) {
				t.Errorf("total_lines %v file_size %v, want %d %d", m["total_lines"], m["file_size"], tc.total, len(tc.content))
			}
			if m["truncated"] != tc.truncated {
				t.Errorf("truncated %v, want %v", m["truncated"], tc.truncated)
			}
			if !strings.Contains(str(m, "hint"), tc.hint) || tc.hint == "" && str(m, "hint") != "" {
				t.Errorf("hint %q, want %q", str(m, "hint"), tc.hint)
			}
		})
	}
}

// A read of more than 2000 lines is cut to 2000.
func TestReadFileLimitCapped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	putFile(t, filepath.Join(dir, "big.txt"), strings.Repeat("x\n", 2500))
	m := read(t, dir, Settings{}, map[string]any{"path": "big.txt", "limit": 5000})
	if n := strings.Count(str(m, "content"), "\n") + 1; n != maxReadLimit || !strings.Contains(str(m, "hint"), "offset=2001") {
		t.Fatalf("%d lines shown, hint %q", n, str(m, "hint"))
	}
}

// read_file refuses what it cannot show as text, and says why.
func TestReadFileRefusals(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	putFile(t, filepath.Join(dir, "notes.txt"), "x")
	putFile(t, filepath.Join(dir, "notes.md.bak"), "x")
	putFile(t, filepath.Join(dir, "other.go"), "x")
	putFile(t, filepath.Join(dir, "bin.dat"), "abc\x00def")
	putFile(t, filepath.Join(dir, "latin.txt"), strings.Repeat("caf\xe9 ", 20))
	putFile(t, filepath.Join(dir, "wide.txt"), strings.Repeat("0123456789\n", 5))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     map[string]any
		s        Settings
		want     string
		binary   bool
		similars []string
	}{
		{name: "missing", args: map[string]any{"path": "notes.md"}, want: "File not found",
			similars: []string{filepath.Join(dir, "notes.md.bak"), filepath.Join(dir, "notes.txt")}},
		{name: "missing in a missing folder", args: map[string]any{"path": "nope/x.txt"}, want: "File not found"},
		{name: "directory", args: map[string]any{"path": "sub"}, want: "is a directory"},
		{name: "binary", args: map[string]any{"path": "bin.dat"}, want: "Binary file (7 bytes)", binary: true},
		{name: "not utf-8", args: map[string]any{"path": "latin.txt"}, want: "Binary file", binary: true},
		{name: "dev zero", args: map[string]any{"path": "/dev/zero"}, want: "device"},
		{name: "dev stdin", args: map[string]any{"path": "/dev/stdin"}, want: "device"},
		{name: "fifo", args: map[string]any{"path": "fifo"}, want: "not a regular file"},
		{name: "no path", args: map[string]any{}, want: "path is required"},
		{name: "above MaxReadChars", args: map[string]any{"path": "wide.txt"}, s: Settings{MaxReadChars: 25},
			want: "above the limit of 25"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := read(t, dir, tc.s, tc.args)
			if !strings.Contains(str(m, "error"), tc.want) {
				t.Errorf("error %q, want %q", str(m, "error"), tc.want)
			}
			if (m["is_binary"] == true) != tc.binary {
				t.Errorf("is_binary %v, want %v", m["is_binary"], tc.binary)
			}
			if str(m, "content") != "" {
				t.Errorf("content given: %q", str(m, "content"))
			}
			if tc.similars != nil {
				got := strs(t, m, "similar_files")
				slices.Sort(got)
				if !slices.Equal(got, tc.similars) {
					t.Errorf("similar_files %v, want %v", got, tc.similars)
				}
			}
		})
	}
	// Within MaxReadChars, a range of the same file reads.
	m := read(t, dir, Settings{MaxReadChars: 25}, map[string]any{"path": "wide.txt", "limit": 2})
	if str(m, "content") != "1|0123456789\n2|0123456789" {
		t.Fatalf("a range under the limit: %v", m)
	}
}

// write_file creates or replaces a file, keeping its CRLF endings, BOM and mode.
func TestWriteFile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		existing *string // nil: no file there
		mode     os.FileMode
		path     string
		content  string
		want     string
		wantMode os.FileMode
		dirsMade bool
	}{
		{name: "new file in new folders", path: "a/b/c.txt", content: "hello\n", want: "hello\n", wantMode: 0o644, dirsMade: true},
		{name: "new file", path: "n.txt", content: "x\ny\n", want: "x\ny\n", wantMode: 0o644},
		{name: "overwrite", existing: ptr("old old old\n"), mode: 0o644, path: "f.txt", content: "new\n", want: "new\n", wantMode: 0o644},
		{name: "crlf kept", existing: ptr("a\r\nb\r\n"), mode: 0o644, path: "f.txt", content: "x\ny\n", want: "x\r\ny\r\n", wantMode: 0o644},
		{name: "crlf not doubled", existing: ptr("a\r\nb\r\n"), mode: 0o644, path: "f.txt", content: "x\r\ny\n", want: "x\r\ny\r\n", wantMode: 0o644},
		{name: "lf file stays lf", existing: ptr("a\nb\n"), mode: 0o644, path: "f.txt", content: "x\ny\n", want: "x\ny\n", wantMode: 0o644},
		{name: "bom kept", existing: ptr("\uFEFFold\n"), mode: 0o644, path: "f.txt", content: "new\n", want: "\uFEFFnew\n", wantMode: 0o644},
		{name: "bom not doubled", existing: ptr("\uFEFFold\n"), mode: 0o644, path: "f.txt", content: "\uFEFFnew\n", want: "\uFEFFnew\n", wantMode: 0o644},
		{name: "mode kept", existing: ptr("#!/bin/sh\n"), mode: 0o750, path: "run.sh", content: "#!/bin/sh\necho\n", want: "#!/bin/sh\necho\n", wantMode: 0o750},
		{name: "private mode kept", existing: ptr("secret"), mode: 0o600, path: "k", content: "other", want: "other", wantMode: 0o600},
		{name: "empty content", existing: ptr("x"), mode: 0o644, path: "f.txt", content: "", want: "", wantMode: 0o644},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, tc.path)
			if tc.existing != nil {
				putFile(t, path, *tc.existing)
				if err := os.Chmod(path, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			m := write(t, dir, Settings{}, map[string]any{"path": tc.path, "content": tc.content})
			if str(m, "error") != "" {
				t.Fatalf("error %q", str(m, "error"))
			}
			if got := readBack(t, path); got != tc.want {
				t.Errorf("file %q, want %q", got, tc.want)
			}
			if num(t, m, "bytes_written") != len(tc.want) || m["dirs_created"] != tc.dirsMade {
				t.Errorf("bytes_written %v dirs_created %v, want %d %v", m["bytes_written"], m["dirs_created"], len(tc.want), tc.dirsMade)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tc.wantMode {
				t.Errorf("mode %v, want %v", fi.Mode().Perm(), tc.wantMode)
			}
			// No temporary file is left beside it.
			entries, _ := os.ReadDir(filepath.Dir(path))
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".") {
					t.Errorf("left behind %s", e.Name())
				}
			}
		})
	}
}

func ptr(s string) *string { return &s }

// write_file through a link writes the linked file and the link stays a link.
func TestWriteFileFollowsSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "real", "target.txt")
	putFile(t, target, "old\n")
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	m := write(t, dir, Settings{}, map[string]any{"path": "link.txt", "content": "new\n"})
	if str(m, "error") != "" {
		t.Fatal(str(m, "error"))
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link is no longer a link (%v)", err)
	}
	if readBack(t, target) != "new\n" {
		t.Fatalf("target %q", readBack(t, target))
	}
}

// write_file refuses bad calls and the profile's own files, and leaves them as they were.
func TestWriteFileRefusals(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	home := filepath.Join(dir, "home")
	config := filepath.Join(home, "config.yaml")
	env := filepath.Join(home, ".env")
	state := filepath.Join(home, "state.db")
	putFile(t, config, "model: x\n")
	putFile(t, env, "KEY=1\n")
	putFile(t, state, "SQLite")
	putFile(t, filepath.Join(dir, "bin.dat"), "a\x00b")
	if err := os.Symlink(config, filepath.Join(dir, "innocent.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Settings{Protected: []string{config, env, state}}
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"protected config", map[string]any{"path": config, "content": "x"}, "profile's own (config.yaml)"},
		{"protected relative", map[string]any{"path": "home/.env", "content": "x"}, "profile's own (.env)"},
		{"protected through a link", map[string]any{"path": "innocent.yaml", "content": "x"}, "profile's own"},
		{"store's wal", map[string]any{"path": state + "-wal", "content": "x"}, "profile's own (state.db)"},
		{"store's shm", map[string]any{"path": "home/state.db-shm", "content": "x"}, "profile's own (state.db)"},
		{"missing content", map[string]any{"path": "new.txt"}, "missing required field 'content'"},
		{"content not text", map[string]any{"path": "new.txt", "content": 5}, "'content' must be a string"},
		{"missing path", map[string]any{"content": "x"}, "missing required field 'path'"},
		{"a folder", map[string]any{"path": "sub", "content": "x"}, "is a directory"},
		{"a binary file", map[string]any{"path": "bin.dat", "content": "x"}, "binary file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := write(t, dir, s, tc.args)
			if !strings.Contains(str(m, "error"), tc.want) {
				t.Errorf("error %q, want %q", str(m, "error"), tc.want)
			}
		})
	}
	t.Cleanup(func() {
		if readBack(t, config) != "model: x\n" || readBack(t, env) != "KEY=1\n" || readBack(t, filepath.Join(dir, "bin.dat")) != "a\x00b" {
			t.Error("a refused write changed a file")
		}
		for _, p := range []string{state + "-wal", state + "-shm", filepath.Join(dir, "new.txt")} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("a refused write created %s", p)
			}
		}
	})
	// A file beside the store whose name only starts like it is not the store's.
	m := write(t, dir, s, map[string]any{"path": filepath.Join(home, "state.dbx"), "content": "x"})
	if str(m, "error") != "" {
		t.Fatalf("state.dbx refused: %s", str(m, "error"))
	}
}

// patch (replace mode) changes one unique string and returns a unified diff.
func TestPatchReplace(t *testing.T) {
	t.Parallel()
	src := "package main\n\nfunc a() int {\n\treturn 1\n}\n\nfunc b() int {\n\treturn 2\n}\n"
	cases := []struct {
		name        string
		content     string
		args        map[string]any
		want        string
		diffHas     []string
		noChange    bool
		errHas      string
		hintPresent bool
	}{
		{name: "unique", content: src, args: map[string]any{"old_string": "return 1", "new_string": "return 10"},
			want: strings.Replace(src, "return 1\n", "return 10\n", 1), diffHas: []string{"--- a/f.go", "+++ b/f.go", "-\treturn 1", "+\treturn 10", " func a() int {"}},
		{name: "mode spelled out", content: src, args: map[string]any{"mode": "replace", "old_string": "func b", "new_string": "func c"},
			want: strings.Replace(src, "func b", "func c", 1), diffHas: []string{"-func b() int {", "+func c() int {"}},
		{name: "delete text", content: "keep\ndrop me\nkeep\n", args: map[string]any{"old_string": "drop me\n", "new_string": ""},
			want: "keep\nkeep\n", diffHas: []string{"-drop me"}},
		{name: "not found", content: src, args: map[string]any{"old_string": "return 3", "new_string": "x"},
			want: src, errHas: "Could not find old_string", hintPresent: true},
		{name: "several", content: "x := 1\nx := 1\n", args: map[string]any{"old_string": "x := 1", "new_string": "x := 2"},
			want: "x := 1\nx := 1\n", errHas: "occurs 2 times", hintPresent: true},
		{name: "several, replace_all", content: "x := 1\nx := 1\n", args: map[string]any{"old_string": "x := 1", "new_string": "x := 2", "replace_all": true},
			want: "x := 2\nx := 2\n", diffHas: []string{"-x := 1", "+x := 2"}},
		{name: "whitespace tolerated and re-indented", content: "class A:\n        def f(self):\n            return 1\n",
			args: map[string]any{"old_string": "    def f(self):\n        return 1", "new_string": "    def f(self):\n        return 2"},
			want: "class A:\n        def f(self):\n            return 2\n"},
		{name: "trailing space tolerated", content: "a = 1   \nb = 2\n", args: map[string]any{"old_string": "a = 1\nb = 2", "new_string": "a = 3\nb = 4"},
			want: "a = 3\nb = 4\n"},
		{name: "same text", content: src, args: map[string]any{"old_string": "return 1", "new_string": "return 1"},
			want: src, noChange: true},
		{name: "crlf kept", content: "a\r\nb\r\nc\r\n", args: map[string]any{"old_string": "b", "new_string": "B"},
			want: "a\r\nB\r\nc\r\n", diffHas: []string{"-b", "+B"}},
		{name: "crlf kept across lines", content: "a\r\nb\r\nc\r\n", args: map[string]any{"old_string": "a\nb", "new_string": "x\ny\nz"},
			want: "x\r\ny\r\nz\r\nc\r\n"},
		{name: "crlf in old_string", content: "a\nb\n", args: map[string]any{"old_string": "a\r\nb", "new_string": "c"},
			want: "c\n"},
		{name: "empty old_string", content: src, args: map[string]any{"old_string": "", "new_string": "x"}, want: src, errHas: "non-empty 'old_string'"},
		{name: "no new_string", content: src, args: map[string]any{"old_string": "return 1"}, want: src, errHas: "needs 'new_string'"},
		{name: "unknown mode", content: src, args: map[string]any{"mode": "sed"}, want: src, errHas: "mode must be"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "f.go")
			putFile(t, path, tc.content)
			args := map[string]any{"path": "f.go"}
			for k, v := range tc.args {
				args[k] = v
			}
			m := patchCall(t, dir, Settings{}, args)
			if got := readBack(t, path); got != tc.want {
				t.Errorf("file %q, want %q", got, tc.want)
			}
			if tc.errHas != "" {
				if !strings.Contains(str(m, "error"), tc.errHas) || m["success"] != false {
					t.Errorf("error %q success %v, want %q", str(m, "error"), m["success"], tc.errHas)
				}
				if (str(m, "_hint") != "") != tc.hintPresent {
					t.Errorf("_hint %q", str(m, "_hint"))
				}
				return
			}
			if m["success"] != true || str(m, "error") != "" {
				t.Fatalf("result %v", m)
			}
			if (m["no_change"] == true) != tc.noChange {
				t.Errorf("no_change %v", m["no_change"])
			}
			if !tc.noChange && !slices.Equal(strs(t, m, "files_modified"), []string{path}) {
				t.Errorf("files_modified %v", m["files_modified"])
			}
			for _, d := range tc.diffHas {
				if !strings.Contains(str(m, "diff"), d+"\n") {
					t.Errorf("diff lacks %q:\n%s", d, str(m, "diff"))
				}
			}
		})
	}
}

// patch refuses the profile's own files and a file that is not there.
func TestPatchReplaceRefusals(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	config := filepath.Join(dir, "config.yaml")
	putFile(t, config, "a: 1\n")
	s := Settings{Protected: []string{config}}
	m := patchCall(t, dir, s, map[string]any{"path": "config.yaml", "old_string": "a: 1", "new_string": "a: 2"})
	if !strings.Contains(str(m, "error"), "profile's own") || readBack(t, config) != "a: 1\n" {
		t.Fatalf("protected: %v, file %q", m, readBack(t, config))
	}
	m = patchCall(t, dir, s, map[string]any{"path": "nope.txt", "old_string": "a", "new_string": "b"})
	if !strings.Contains(str(m, "error"), "File not found") || !strings.Contains(str(m, "_hint"), "write_file") {
		t.Fatalf("missing file: %v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.txt")); err == nil {
		t.Fatal("patch created a missing file")
	}
}

const v4aSrc = `def a():
    return 1

def b():
    return 1

def c():
    return 1
`

// patch mode applies V4A patches: updates by context and @@ lines, adds, deletes and moves.
func TestPatchV4A(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		files   map[string]string
		patch   string
		want    map[string]string // "" : the file must not exist
		created []string
		deleted []string
		diffHas []string
	}{
		{name: "update with @@ hint",
			files:   map[string]string{"m.py": v4aSrc},
			patch:   "*** Begin Patch\n*** Update File: m.py\n@@ def b():\n-    return 1\n+    return 2\n*** End Patch\n",
			want:    map[string]string{"m.py": strings.Replace(v4aSrc, "def b():\n    return 1", "def b():\n    return 2", 1)},
			diffHas: []string{"-    return 1", "+    return 2"}},
		{name: "update with context lines",
			files: map[string]string{"m.py": v4aSrc},
			patch: "*** Begin Patch\n*** Update File: m.py\n def c():\n-    return 1\n+    return 3\n*** End Patch",
			want:  map[string]string{"m.py": strings.Replace(v4aSrc, "def c():\n    return 1", "def c():\n    return 3", 1)}},
		{name: "hint line as the context's first",
			files: map[string]string{"m.py": v4aSrc},
			patch: "*** Begin Patch\n*** Update File: m.py\n@@ def b():\n def b():\n-    return 1\n+    return 22\n*** End Patch",
			want:  map[string]string{"m.py": strings.Replace(v4aSrc, "def b():\n    return 1", "def b():\n    return 22", 1)}},
		{name: "two hunks in order",
			files: map[string]string{"m.py": v4aSrc},
			patch: "*** Begin Patch\n*** Update File: m.py\n@@ def a():\n-    return 1\n+    return 'a'\n@@ def c():\n-    return 1\n+    return 'c'\n*** End Patch",
			want:  map[string]string{"m.py": "def a():\n    return 'a'\n\ndef b():\n    return 1\n\ndef c():\n    return 'c'\n"}},
		{name: "hunks without hints in order",
			files: map[string]string{"m.py": v4aSrc},
			patch: "*** Begin Patch\n*** Update File: m.py\n-    return 1\n+    return 'first'\n@@\n-    return 1\n+    return 'second'\n*** End Patch",
			want:  map[string]string{"m.py": "def a():\n    return 'first'\n\ndef b():\n    return 'second'\n\ndef c():\n    return 1\n"}},
		{name: "context with other indentation",
			files: map[string]string{"m.py": v4aSrc},
			patch: "*** Begin Patch\n*** Update File: m.py\n@@ def a():\n-  return 1\n+    return 0\n*** End Patch",
			want:  map[string]string{"m.py": strings.Replace(v4aSrc, "    return 1", "    return 0", 1)}},
		{name: "add file in a new folder",
			patch:   "*** Begin Patch\n*** Add File: pkg/new.txt\n+hello\n+\n+world\n*** End Patch",
			want:    map[string]string{"pkg/new.txt": "hello\n\nworld\n"},
			created: []string{"pkg/new.txt"}, diffHas: []string{"+hello", "+world"}},
		{name: "delete file",
			files:   map[string]string{"old.txt": "bye\n", "keep.txt": "k\n"},
			patch:   "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch",
			want:    map[string]string{"old.txt": "", "keep.txt": "k\n"},
			deleted: []string{"old.txt"}},
		{name: "move with a change",
			files:   map[string]string{"src/a.txt": "one\ntwo\nthree\n"},
			patch:   "*** Begin Patch\n*** Update File: src/a.txt\n*** Move to: dst/b.txt\n@@\n one\n-two\n+TWO\n*** End Patch",
			want:    map[string]string{"src/a.txt": "", "dst/b.txt": "one\nTWO\nthree\n"},
			created: []string{"dst/b.txt"}, deleted: []string{"src/a.txt"}},
		{name: "several files at once",
			files: map[string]string{"m.py": v4aSrc, "gone.txt": "x\n"},
			patch: "*** Begin Patch\n*** Add File: n.txt\n+n\n*** Update File: m.py\n@@ def c():\n-    return 1\n+    return 9\n*** Delete File: gone.txt\n*** End Patch",
			want: map[string]string{"n.txt": "n\n", "gone.txt": "",
				"m.py": strings.Replace(v4aSrc, "def c():\n    return 1", "def c():\n    return 9", 1)},
			created: []string{"n.txt"}, deleted: []string{"gone.txt"}},
		{name: "crlf file keeps crlf",
			files: map[string]string{"w.txt": "a\r\nb\r\nc\r\n"},
			patch: "*** Begin Patch\n*** Update File: w.txt\n a\n-b\n+B\n*** End Patch",
			want:  map[string]string{"w.txt": "a\r\nB\r\nc\r\n"}},
		{name: "moved crlf file keeps crlf",
			files: map[string]string{"w.txt": "a\r\nb\r\nc\r\n"},
			patch: "*** Begin Patch\n*** Update File: w.txt\n*** Move to: v.txt\n a\n-b\n+B\n*** End Patch",
			want:  map[string]string{"w.txt": "", "v.txt": "a\r\nB\r\nc\r\n"}, created: []string{"v.txt"}, deleted: []string{"w.txt"}},
		{name: "addition only, at the hint",
			files: map[string]string{"m.py": "import os\n\ndef a():\n    pass\n"},
			patch: "*** Begin Patch\n*** Update File: m.py\n@@ import os\n+import sys\n*** End Patch",
			want:  map[string]string{"m.py": "import os\nimport sys\n\ndef a():\n    pass\n"}},
		{name: "addition only, at the end",
			files: map[string]string{"l.txt": "a\nb\n"},
			patch: "*** Begin Patch\n*** Update File: l.txt\n+c\n*** End Patch",
			want:  map[string]string{"l.txt": "a\nb\nc\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, content := range tc.files {
				putFile(t, filepath.Join(dir, name), content)
			}
			m := patchCall(t, dir, Settings{}, map[string]any{"mode": "patch", "patch": tc.patch})
			if m["success"] != true || str(m, "error") != "" {
				t.Fatalf("result %v", m)
			}
			for name, want := range tc.want {
				b, err := os.ReadFile(filepath.Join(dir, name))
				switch {
				case want == "" && err == nil:
					t.Errorf("%s still exists", name)
				case want != "" && err != nil:
					t.Errorf("%s: %v", name, err)
				case want != "" && string(b) != want:
					t.Errorf("%s = %q, want %q", name, b, want)
				}
			}
			abs := func(names []string) []string {
				var out []string
				for _, n := range names {
					out = append(out, filepath.Join(dir, n))
				}
				return out
			}
			if tc.created != nil && !slices.Equal(strs(t, m, "files_created"), abs(tc.created)) {
				t.Errorf("files_created %v, want %v", m["files_created"], abs(tc.created))
			}
			if tc.deleted != nil && !slices.Equal(strs(t, m, "files_deleted"), abs(tc.deleted)) {
				t.Errorf("files_deleted %v, want %v", m["files_deleted"], abs(tc.deleted))
			}
			for _, d := range tc.diffHas {
				if !strings.Contains(str(m, "diff"), d+"\n") {
					t.Errorf("diff lacks %q:\n%s", d, str(m, "diff"))
				}
			}
		})
	}
}

// A V4A patch that cannot be applied whole writes no file of it at all.
func TestPatchV4ARefusals(t *testing.T) {
	t.Parallel()
	dir0 := realDir(t)
	config := filepath.Join(dir0, "config.yaml")
	putFile(t, config, "a: 1\n")
	cases := []struct {
		name   string
		patch  string
		errHas string
		hint   bool
	}{
		{"hunk does not match", "*** Begin Patch\n*** Add File: added.txt\n+new\n*** Delete File: m.py\n*** Update File: m.py\n@@ def a():\n-    return 42\n+    return 0\n*** End Patch",
			"hunk 1: its context and '-' lines are not in the file", true},
		{"@@ line not in the file", "*** Begin Patch\n*** Add File: added.txt\n+new\n*** Update File: m.py\n@@ def zzz():\n-    return 1\n+    return 0\n*** End Patch",
			"its @@ line \"def zzz():\" is not in the file", true},
		{"second hunk out of order", "*** Begin Patch\n*** Add File: added.txt\n+new\n*** Update File: m.py\n@@ def c():\n-    return 1\n+    return 3\n@@ def a():\n-    return 1\n+    return 0\n*** End Patch",
			"hunk 2", true},
		{"no begin", "*** Update File: m.py\n-    return 1\n+    return 0\n*** End Patch", "starts with '*** Begin Patch'", false},
		{"no end", "*** Begin Patch\n*** Add File: added.txt\n+new\n", "no '*** End Patch'", false},
		{"no file", "*** Begin Patch\n*** End Patch", "changes no file", false},
		{"line before any file", "*** Begin Patch\nhello\n*** End Patch", "comes before any", false},
		{"added line without +", "*** Begin Patch\n*** Add File: added.txt\nnew\n*** End Patch", "start with '+'", false},
		{"add an existing file", "*** Begin Patch\n*** Add File: added.txt\n+new\n*** Add File: m.py\n+x\n*** End Patch", "exists already", false},
		{"update a missing file", "*** Begin Patch\n*** Add File: added.txt\n+new\n*** Update File: none.py\n-x\n+y\n*** End Patch", "does not exist", false},
		{"delete a missing file", "*** Begin Patch\n*** Add File: added.txt\n+new\n*** Delete File: none.py\n*** End Patch", "does not exist", false},
		{"move without update", "*** Begin Patch\n*** Move to: x.py\n*** End Patch", "follows no", false},
		{"protected file", "*** Begin Patch\n*** Add File: added.txt\n+new\n*** Update File: " + config + "\n-a: 1\n+a: 2\n*** End Patch", "profile's own", false},
		{"move onto a protected file", "*** Begin Patch\n*** Add File: added.txt\n+new\n*** Update File: m.py\n*** Move to: " + config + "\n@@ def a():\n-    return 1\n+    return 0\n*** End Patch", "profile's own", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			putFile(t, filepath.Join(dir, "m.py"), v4aSrc)
			m := patchCall(t, dir, Settings{Protected: []string{config}}, map[string]any{"mode": "patch", "patch": tc.patch})
			if !strings.Contains(str(m, "error"), tc.errHas) || m["success"] != false {
				t.Fatalf("error %q success %v, want %q", str(m, "error"), m["success"], tc.errHas)
			}
			if (str(m, "_hint") != "") != tc.hint {
				t.Errorf("_hint %q", str(m, "_hint"))
			}
			if _, err := os.Stat(filepath.Join(dir, "added.txt")); err == nil {
				t.Error("an earlier Add File of the refused patch was written")
			}
			if readBack(t, filepath.Join(dir, "m.py")) != v4aSrc {
				t.Error("m.py was changed")
			}
			if readBack(t, config) != "a: 1\n" {
				t.Error("the protected file was changed")
			}
		})
	}
	m := patchCall(t, dir0, Settings{}, map[string]any{"mode": "patch"})
	if !strings.Contains(str(m, "error"), "needs the patch content") {
		t.Fatalf("no patch: %v", m)
	}
}

// A V4A move onto a file that exists is refused with nothing written; a
// moved file keeps its mode.
func TestPatchV4AMoveKeepsModeAndRefusesATakenName(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	putFile(t, filepath.Join(dir, "run.sh"), "echo one\n")
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	putFile(t, filepath.Join(dir, "taken.sh"), "keep me\n")
	move := func(to string) map[string]any {
		return patchCall(t, dir, Settings{}, map[string]any{"mode": "patch", "patch": "*** Begin Patch\n*** Update File: run.sh\n*** Move to: " + to +
			"\n@@\n-echo one\n+echo two\n*** End Patch"})
	}
	if out := move("taken.sh"); !strings.Contains(out["error"].(string), "exists already") {
		t.Fatalf("onto a taken name: %v", out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "taken.sh")); string(b) != "keep me\n" {
		t.Fatalf("the taken file: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "run.sh")); string(b) != "echo one\n" {
		t.Fatalf("the source after a refused move: %q", b)
	}
	if out := move("bin/run2.sh"); out["success"] != true {
		t.Fatalf("move: %v", out)
	}
	fi, err := os.Stat(filepath.Join(dir, "bin", "run2.sh"))
	if err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("the moved file: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run.sh")); !os.IsNotExist(err) {
		t.Fatalf("the source is still there: %v", err)
	}
}

// A missing file's similar names are names that look like it: not every
// dotfile, nor every short name, beside it.
func TestSimilarFilesAreSimilar(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, n := range []string{".ci", ".gitignore", "a.go", "config.yaml", "config.yml.bak", "README.md"} {
		putFile(t, filepath.Join(dir, n), "x\n")
	}
	got := similarFiles(filepath.Join(dir, "nowhere"))
	if len(got) != 0 {
		t.Fatalf("similar to nowhere: %v", got)
	}
	got = similarFiles(filepath.Join(dir, "config.yml"))
	var names []string
	for _, p := range got {
		names = append(names, filepath.Base(p))
	}
	if fmt.Sprint(names) != "[config.yaml config.yml.bak]" {
		t.Fatalf("similar to config.yml: %v", names)
	}
}

// A line of megabytes is read without holding it: read_file shows its
// first 2,000 characters and counts the lines after it.
func TestReadFileHugeLine(t *testing.T) {
	t.Parallel()
	dir := realDir(t)
	huge := strings.Repeat("x", 8<<20)
	putFile(t, filepath.Join(dir, "bundle.js"), "first\n"+huge+"\nlast\n")
	out := read(t, dir, Settings{MaxReadChars: 50_000}, map[string]any{"path": "bundle.js"})
	lines := strings.Split(fmt.Sprint(out["content"]), "\n")
	if out["total_lines"] != 3.0 || len(lines) != 3 || lines[0] != "1|first" || lines[2] != "3|last" ||
		lines[1] != "2|"+strings.Repeat("x", 2000)+"... [truncated]" {
		t.Fatalf("read: %v lines, total %v, %.80q", len(lines), out["total_lines"], lines)
	}
}
