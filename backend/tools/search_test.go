package tools

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func search(t *testing.T, dir string, args map[string]any) map[string]any {
	t.Helper()
	m, _ := runTool(t, searchFilesTool(), dir, Settings{}, args)
	return m
}

// match is one row of a search's "matches" list.
type match struct {
	Path    string
	Line    int
	Content string
}

func matchesOf(t *testing.T, m map[string]any) []match {
	t.Helper()
	raw, _ := m["matches"].([]any)
	var out []match
	for _, r := range raw {
		o := r.(map[string]any)
		out = append(out, match{o["path"].(string), int(o["line"].(float64)), o["content"].(string)})
	}
	return out
}

// searchTree is a small project: sources, a hidden folder, dependencies
// and a binary file.
func searchTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	putFile(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main() {\n\tTODO(\"start\")\n}\n")
	putFile(t, filepath.Join(dir, "pkg", "util.go"), "package pkg\n\n// TODO: tidy\nfunc Util() {}\n")
	putFile(t, filepath.Join(dir, "pkg", "notes.md"), "# Notes\nTODO write docs\n")
	putFile(t, filepath.Join(dir, ".git", "config"), "TODO hidden\n")
	putFile(t, filepath.Join(dir, ".cache", "x.go"), "TODO hidden\n")
	putFile(t, filepath.Join(dir, "node_modules", "dep", "index.js"), "// TODO dep\n")
	putFile(t, filepath.Join(dir, "pkg", "__pycache__", "m.pyc"), "TODO cache\n")
	putFile(t, filepath.Join(dir, "blob.bin"), "TODO\x00\x01binary")
	return dir
}

// Content search gives matches with relative paths and lines, skipping hidden, dependency and binary files.
func TestSearchContent(t *testing.T) {
	t.Parallel()
	dir := searchTree(t)
	m := search(t, dir, map[string]any{"pattern": `TODO`})
	if str(m, "error") != "" {
		t.Fatal(str(m, "error"))
	}
	got := matchesOf(t, m)
	want := []match{
		{"main.go", 4, "\tTODO(\"start\")"},
		{filepath.Join("pkg", "notes.md"), 2, "TODO write docs"},
		{filepath.Join("pkg", "util.go"), 3, "// TODO: tidy"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("matches %v, want %v", got, want)
	}
	if num(t, m, "total_count") != 3 || m["truncated"] != nil {
		t.Fatalf("total_count %v truncated %v", m["total_count"], m["truncated"])
	}
}

// search_files searches the file or folder named by path, showing paths relative to the conversation's.
func TestSearchPathArgument(t *testing.T) {
	t.Parallel()
	dir := searchTree(t)
	for _, tc := range []struct {
		path string
		want []match
	}{
		{"pkg/util.go", []match{{filepath.Join("pkg", "util.go"), 3, "// TODO: tidy"}}},
		{"pkg", []match{{filepath.Join("pkg", "notes.md"), 2, "TODO write docs"}, {filepath.Join("pkg", "util.go"), 3, "// TODO: tidy"}}},
		{filepath.Join(dir, "main.go"), []match{{"main.go", 4, "\tTODO(\"start\")"}}},
	} {
		m := search(t, dir, map[string]any{"pattern": "TODO", "path": tc.path})
		if got := matchesOf(t, m); !slices.Equal(got, tc.want) {
			t.Errorf("path %q: %v, want %v", tc.path, got, tc.want)
		}
	}
	// A folder outside the conversation's shows absolute paths.
	other := t.TempDir()
	putFile(t, filepath.Join(other, "o.txt"), "TODO\n")
	m := search(t, dir, map[string]any{"pattern": "TODO", "path": other})
	if got := matchesOf(t, m); len(got) != 1 || got[0].Path != filepath.Join(other, "o.txt") {
		t.Fatalf("outside folder: %v", got)
	}
}

// Five matches or more come as path-grouped text, not a list.
func TestSearchMatchesText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	putFile(t, filepath.Join(dir, "a.txt"), "hit 1\nmiss\nhit 2\nhit 3   \n")
	putFile(t, filepath.Join(dir, "b.txt"), "hit 4\nhit 5\n")
	m := search(t, dir, map[string]any{"pattern": "hit"})
	want := "a.txt\n  1: hit 1\n  3: hit 2\n  4: hit 3\nb.txt\n  1: hit 4\n  2: hit 5"
	if got := str(m, "matches_text"); got != want {
		t.Fatalf("matches_text %q, want %q", got, want)
	}
	if m["matches"] != nil || !strings.Contains(str(m, "matches_format"), "path-grouped") || num(t, m, "total_count") != 5 {
		t.Fatalf("result %v", m)
	}
}

// output_mode files_only lists matching files and count gives matching lines per file.
func TestSearchOutputModes(t *testing.T) {
	t.Parallel()
	dir := searchTree(t)
	m := search(t, dir, map[string]any{"pattern": "TODO", "output_mode": "files_only"})
	files := strs(t, m, "files")
	want := []string{"main.go", filepath.Join("pkg", "notes.md"), filepath.Join("pkg", "util.go")}
	if !slices.Equal(files, want) || num(t, m, "total_count") != 3 || m["matches"] != nil {
		t.Fatalf("files_only: %v", m)
	}
	putFile(t, filepath.Join(dir, "pkg", "util.go"), "TODO a\nTODO b\nnone\n")
	m = search(t, dir, map[string]any{"pattern": "TODO", "output_mode": "count"})
	counts, _ := m["counts"].(map[string]any)
	wantCounts := map[string]any{"main.go": 1.0, filepath.Join("pkg", "notes.md"): 1.0, filepath.Join("pkg", "util.go"): 2.0}
	if !maps.Equal(counts, wantCounts) {
		t.Fatalf("counts %v, want %v", counts, wantCounts)
	}
}

// file_glob keeps a content search to files of a name.
func TestSearchFileGlob(t *testing.T) {
	t.Parallel()
	dir := searchTree(t)
	m := search(t, dir, map[string]any{"pattern": "TODO", "file_glob": "*.go", "output_mode": "files_only"})
	if got := strs(t, m, "files"); !slices.Equal(got, []string{"main.go", filepath.Join("pkg", "util.go")}) {
		t.Fatalf("files %v", got)
	}
	m = search(t, dir, map[string]any{"pattern": "TODO", "file_glob": "*.rs"})
	if num(t, m, "total_count") != 0 || m["matches"] != nil {
		t.Fatalf("no .rs file, but %v", m)
	}
}

// context shows lines around each match (before the first one too) with the match's page.
func TestSearchContextLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	putFile(t, filepath.Join(dir, "f.txt"), "one\ntwo\nMATCH\nfour\nfive\nsix\n")
	m := search(t, dir, map[string]any{"pattern": "MATCH", "context": 1})
	want := []match{{"f.txt", 2, "two"}, {"f.txt", 3, "MATCH"}, {"f.txt", 4, "four"}}
	if got := matchesOf(t, m); !slices.Equal(got, want) {
		t.Fatalf("matches %v, want %v", got, want)
	}
	if num(t, m, "total_count") != 1 {
		t.Fatalf("total_count %v: context lines are no matches", m["total_count"])
	}
	// Overlapping context is shown once.
	putFile(t, filepath.Join(dir, "f.txt"), "a\nM1\nb\nM2\nc\nd\ne\n")
	m = search(t, dir, map[string]any{"pattern": "M[0-9]", "context": 1})
	want = []match{{"f.txt", 1, "a"}, {"f.txt", 2, "M1"}, {"f.txt", 3, "b"}, {"f.txt", 4, "M2"}, {"f.txt", 5, "c"}}
	if got := str(m, "matches_text"); got != "f.txt\n  1: a\n  2: M1\n  3: b\n  4: M2\n  5: c" {
		t.Fatalf("matches_text %q (want the rows of %v)", got, want)
	}
	// A page shows its matches' context, not the next page's.
	putFile(t, filepath.Join(dir, "f.txt"), "a\nM1\nb\nc\nd\nM2\ne\n")
	for _, tc := range []struct {
		offset int
		want   []match
	}{
		{0, []match{{"f.txt", 1, "a"}, {"f.txt", 2, "M1"}, {"f.txt", 3, "b"}}},
		{1, []match{{"f.txt", 5, "d"}, {"f.txt", 6, "M2"}, {"f.txt", 7, "e"}}},
	} {
		m = search(t, dir, map[string]any{"pattern": "M[0-9]", "context": 1, "limit": 1, "offset": tc.offset})
		if got := matchesOf(t, m); !slices.Equal(got, tc.want) {
			t.Errorf("offset %d: %v, want %v", tc.offset, got, tc.want)
		}
	}
}

// offset and limit page through matches, and a cut page says how to see the next.
func TestSearchPagination(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 7; i++ {
		fmt.Fprintf(&b, "hit %d\n", i)
	}
	putFile(t, filepath.Join(dir, "f.txt"), b.String())
	for _, tc := range []struct {
		offset, limit int
		lines         []int
		truncated     bool
		hint          string
	}{
		{0, 3, []int{1, 2, 3}, true, "offset=3"},
		{3, 3, []int{4, 5, 6}, true, "offset=6"},
		{6, 3, []int{7}, false, ""},
		{10, 3, nil, false, ""},
	} {
		m := search(t, dir, map[string]any{"pattern": "hit", "offset": tc.offset, "limit": tc.limit})
		var lines []int
		for _, mt := range matchesOf(t, m) {
			lines = append(lines, mt.Line)
		}
		if !slices.Equal(lines, tc.lines) || num(t, m, "total_count") != 7 {
			t.Errorf("offset %d: lines %v total %v, want %v", tc.offset, lines, m["total_count"], tc.lines)
		}
		if (m["truncated"] == true) != tc.truncated || !strings.Contains(str(m, "_hint"), tc.hint) {
			t.Errorf("offset %d: truncated %v _hint %q", tc.offset, m["truncated"], str(m, "_hint"))
		}
	}
	// files_only pages files.
	for i := range 4 {
		putFile(t, filepath.Join(dir, fmt.Sprintf("g%d.txt", i)), "hit\n")
	}
	m := search(t, dir, map[string]any{"pattern": "hit", "output_mode": "files_only", "limit": 2, "offset": 1})
	if got := strs(t, m, "files"); !slices.Equal(got, []string{"g0.txt", "g1.txt"}) || m["truncated"] != true {
		t.Fatalf("files_only page: %v", m)
	}
}

// Bad searches say what is wrong.
func TestSearchRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"pattern": "("}, "invalid regex"},
		{map[string]any{"pattern": "x", "path": "no/such"}, "Path not found"},
		{map[string]any{"pattern": "x", "target": "files", "path": "no/such"}, "Path not found"},
		{map[string]any{"pattern": ""}, "pattern is required"},
		{map[string]any{"pattern": "x", "target": "web"}, "target must be"},
		{map[string]any{"pattern": "[", "target": "files"}, "invalid glob"},
		{map[string]any{"pattern": "x", "path": "/dev/zero"}, "Cannot search"},
	} {
		if m := search(t, dir, tc.args); !strings.Contains(str(m, "error"), tc.want) {
			t.Errorf("%v: error %q, want %q", tc.args, str(m, "error"), tc.want)
		}
	}
}

// target files finds files by glob or part of the name, newest first.
func TestSearchFilesByName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	for i, name := range []string{"old.go", "pkg/mid.go", "new.go", "readme.md", "MyConfig.yaml", "node_modules/dep.go", ".hidden/h.go"} {
		p := filepath.Join(dir, name)
		putFile(t, p, "x")
		at := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		{"*.go", []string{"new.go", filepath.Join("pkg", "mid.go"), "old.go"}},
		{"config", []string{"MyConfig.yaml"}}, // a part of the name, any case
		{"*.txt", []string{}},
		{"m?d.go", []string{filepath.Join("pkg", "mid.go")}},
	} {
		m := search(t, dir, map[string]any{"pattern": tc.pattern, "target": "files"})
		if got := strs(t, m, "files"); !slices.Equal(got, tc.want) || num(t, m, "total_count") != len(tc.want) {
			t.Errorf("%q: files %v total %v, want %v", tc.pattern, got, m["total_count"], tc.want)
		}
	}
	// Pages newest first.
	m := search(t, dir, map[string]any{"pattern": "*.go", "target": "files", "limit": 1, "offset": 1})
	if got := strs(t, m, "files"); !slices.Equal(got, []string{filepath.Join("pkg", "mid.go")}) || m["truncated"] != true ||
		!strings.Contains(str(m, "_hint"), "offset=2") {
		t.Fatalf("page: %v", m)
	}
	// "find" is target files too.
	m = search(t, dir, map[string]any{"pattern": "readme", "target": "find"})
	if got := strs(t, m, "files"); !slices.Equal(got, []string{"readme.md"}) {
		t.Fatalf("target find: %v", got)
	}
}

// Hidden files are passed over as ripgrep does; count mode's total is the
// number of files, as its pages are.
func TestSearchHiddenFilesAndCountTotals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, text := range map[string]string{".env": "TOKEN=needle\n", "a.txt": "needle\nneedle\n", "b.txt": "needle\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := runTool(t, searchFilesTool(), dir, Settings{}, map[string]any{"pattern": "needle", "output_mode": "count"})
	if out["total_count"] != 2.0 || fmt.Sprint(out["counts"]) != "map[a.txt:2 b.txt:1]" {
		t.Fatalf("count: %v", out)
	}
	// Named directly, a hidden file is searched.
	out, _ = runTool(t, searchFilesTool(), dir, Settings{}, map[string]any{"pattern": "needle", "path": ".env"})
	if out["total_count"] != 1.0 {
		t.Fatalf("a hidden file named: %v", out)
	}
}

// Arguments a Go caller passes as Go numbers are read as the model's are.
func TestGoNumbersAreArguments(t *testing.T) {
	t.Parallel()
	c := &Call{Args: map[string]any{"a": 7, "b": int64(8), "c": json.Number("9"), "d": 10.0, "e": "11"}}
	if got := fmt.Sprint(c.integer("a", 0), c.integer("b", 0), c.integer("c", 0), c.integer("d", 0), c.integer("e", 0), c.integer("f", 12)); got != "7 8 9 10 11 12" {
		t.Fatalf("integers: %s", got)
	}
}

// A whole file searched at once finds exactly the lines a line-by-line
// search finds, line numbers included, for patterns that can match empty
// text, span lines, or sit at a line's ends.
func TestSearchWholeFileMatchesLineByLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	texts := []string{
		"foo bar\nfoo\nbar\n\nneedle\r\nlast without newline needle",
		"\n\n\nx\n",
		"",
		"only\n",
		"a\nb\nc",
	}
	patterns := []string{`^$`, `x*`, `(?i)NEEDLE`, `foo\s+bar`, `needle$`, `^b`, `$`, `o\nb`, `.`, `c\z`}
	for i, text := range texts {
		path := filepath.Join(dir, fmt.Sprintf("t%d.txt", i))
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, p := range patterns {
			g, err := newGrepper(p)
			if err != nil {
				t.Fatal(err)
			}
			collect := func(g *grepper) string {
				var out []string
				n, err := grepFile(path, g, 0, func(m searchMatch, isMatch, _ bool) {
					out = append(out, fmt.Sprintf("%d:%q:%v", m.Line, m.Content, isMatch))
				})
				if err != nil {
					t.Fatal(err)
				}
				return fmt.Sprint(n, out)
			}
			whole := collect(g)
			byLine := collect(&grepper{re: g.re})
			if whole != byLine {
				t.Errorf("text %d, pattern %q: whole file %s, line by line %s", i, p, whole, byLine)
			}
		}
	}
}
