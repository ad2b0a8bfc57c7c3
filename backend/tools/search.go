package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

const (
	defaultSearchLimit = 50
	// maxSearchFiles and maxSearchFileBytes bound one search: a folder of a
	// million files, or a log of gigabytes, is not read to the end.
	maxSearchFiles     = 100_000
	maxSearchFileBytes = 10 << 20
	maxMatchChars      = 500
)

// skipDirs are folders a search passes over, as ripgrep does with its
// defaults in most projects: version control, and dependencies.
var skipDirs = []string{"node_modules", "__pycache__", ".git", ".hg", ".svn", ".venv", "venv"}

func searchFilesTool() Tool {
	return Tool{Name: "search_files", Toolset: "file", run: searchFiles,
		Description: "Search file contents or find files by name. Use this instead of grep/rg/find/ls in terminal.\n\n" +
			"Content search (target='content'): regex search inside files. Output modes: full matches with line numbers, " +
			"file paths only, or match counts.\n\nFile search (target='files'): find files by glob pattern (e.g., '*.py', " +
			"'*config*'). Also use this instead of ls: results sorted by modification time, newest first.",
		Parameters: `{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"Regex pattern for content search, or glob pattern (e.g., '*.py') for file search"},` +
			`"target":{"type":"string","enum":["content","files"],"description":"'content' searches inside file contents, 'files' searches for files by name","default":"content"},` +
			`"path":{"type":"string","description":"Directory or file to search in (default: current working directory)","default":"."},` +
			`"file_glob":{"type":"string","description":"Filter files by pattern in grep mode (e.g., '*.py' to only search Python files)"},` +
			`"limit":{"type":"integer","description":"Maximum number of results to return (default: 50)","default":50},` +
			`"offset":{"type":"integer","description":"Skip first N results for pagination (default: 0)","default":0},` +
			`"output_mode":{"type":"string","enum":["content","files_only","count"],"description":"Output format for grep mode: 'content' shows matching lines with line numbers, 'files_only' lists file paths, 'count' shows match counts per file","default":"content"},` +
			`"context":{"type":"integer","description":"Number of context lines before and after each match (grep mode only)","default":0}` +
			`},"required":["pattern"]}`}
}

type searchMatch struct {
	Path    string `json:"path"`
	Line    int    `json:"line"`
	Content string `json:"content"`
}

func searchFiles(ctx context.Context, c *Call) any {
	pattern, _ := c.str("pattern")
	if pattern == "" {
		return failure("pattern is required")
	}
	target, _ := c.str("target")
	switch target = strings.ToLower(target); target {
	case "", "grep":
		target = "content"
	case "find":
		target = "files"
	}
	if target != "content" && target != "files" {
		return failure("target must be 'content' or 'files', not '" + target + "'")
	}
	root := c.Dir
	if p, ok := c.str("path"); ok && strings.TrimSpace(p) != "" {
		root = c.resolve(p)
	}
	if slices.Contains(devices, root) {
		return failure("Cannot search " + root)
	}
	if _, err := os.Stat(root); err != nil {
		return failure("Path not found: " + root)
	}
	offset, limit := max(0, c.integer("offset", 0)), max(1, c.integer("limit", defaultSearchLimit))
	if target == "files" {
		return findFiles(ctx, c, root, pattern, offset, limit)
	}
	g, err := newGrepper(pattern)
	if err != nil {
		return failure("invalid regex " + pattern + ": " + err.Error())
	}
	glob, _ := c.str("file_glob")
	mode, _ := c.str("output_mode")
	contextLines := min(max(0, c.integer("context", 0)), 20)

	total := 0
	var matches []searchMatch
	counts := map[string]int{}
	var files []string
	var note string
	if c.Settings.secret(root) {
		return failure("Cannot search " + root + ": it holds the profile's keys and tokens, which are not the model's to read")
	}
	secretNames := c.Settings.secretNames()
	err = walk(ctx, root, func(path string, d fs.DirEntry) error {
		if secretNames[d.Name()] && c.Settings.secret(path) {
			return nil
		}
		if glob != "" {
			if ok, _ := filepath.Match(glob, filepath.Base(path)); !ok {
				return nil
			}
		}
		shown := c.display(path)
		n, err := grepFile(path, g, contextLines, func(m searchMatch, isMatch, before bool) {
			if isMatch {
				total++
			}
			k := total // the match a line is shown with
			if before {
				k++ // lines before a match are the next match's
			}
			if mode != "files_only" && mode != "count" && k > offset && k <= offset+limit {
				m.Path = shown
				matches = append(matches, m)
			}
		})
		if err != nil || n == 0 {
			return nil
		}
		counts[shown] = n
		files = append(files, shown)
		return nil
	})
	if err != nil {
		note = err.Error()
	}
	out := map[string]any{"total_count": total}
	switch mode {
	case "files_only":
		out["total_count"] = len(files)
		out["files"] = page(files, offset, limit)
		total = len(files)
	case "count":
		shown := map[string]int{}
		for _, f := range page(files, offset, limit) {
			shown[f] = counts[f]
		}
		out["counts"] = shown
		out["total_count"] = len(files)
		total = len(files)
	default:
		if len(matches) >= 5 {
			var b strings.Builder
			last := ""
			for _, m := range matches {
				if m.Path != last {
					b.WriteString(m.Path + "\n")
					last = m.Path
				}
				fmt.Fprintf(&b, "  %d: %s\n", m.Line, strings.TrimRight(m.Content, " \t"))
			}
			out["matches_format"] = "path-grouped: each file path on its own line, followed by indented '<line>: <content>' rows for matches in that file"
			out["matches_text"] = strings.TrimRight(b.String(), "\n")
		} else if len(matches) > 0 {
			out["matches"] = matches
		}
	}
	if total > offset+limit {
		out["truncated"] = true
		out["_hint"] = fmt.Sprintf("Results truncated. Use offset=%d to see more, or narrow with a more specific pattern or file_glob.", offset+limit)
	}
	if note != "" {
		out["limit_reason"] = note
	}
	return out
}

func page(list []string, offset, limit int) []string {
	if offset >= len(list) {
		return []string{}
	}
	return list[offset:min(len(list), offset+limit)]
}

// display is a path as a result shows it: relative to the conversation's
// folder when it is inside it.
func (c *Call) display(path string) string {
	if rel, err := filepath.Rel(c.Dir, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// errStop ends a walk early and says why.
type errStop struct{ why string }

func (e errStop) Error() string { return e.why }

// walk visits the regular files under root (root itself when it is one),
// hidden folders and skipDirs passed over, at most maxSearchFiles of them.
func walk(ctx context.Context, root string, visit func(string, fs.DirEntry) error) error {
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable folder is passed over
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || slices.Contains(skipDirs, d.Name())) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || path != root && strings.HasPrefix(d.Name(), ".") {
			return nil // hidden files are passed over, as ripgrep does
		}
		if seen++; seen > maxSearchFiles {
			return errStop{fmt.Sprintf("stopped after %d files: narrow the path", maxSearchFiles)}
		}
		if seen%256 == 0 && ctx.Err() != nil {
			return errStop{"stopped with the turn"}
		}
		return visit(path, d)
	})
	var stop errStop
	if errors.As(err, &stop) {
		return stop
	}
	return err
}

// grepper is a content search's pattern: as given, matched against one
// line, and in multi-line mode, which finds the next candidate line in a
// whole file at once (a file without a match is one scan, not one match
// per line).
type grepper struct {
	re, multi *regexp.Regexp
}

func newGrepper(pattern string) (*grepper, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	multi, err := regexp.Compile("(?m:" + pattern + ")")
	if err != nil {
		multi = nil // a pattern only the line matcher takes: line by line
	}
	return &grepper{re: re, multi: multi}, nil
}

// grepWhole is grepFile without context lines: the file read at once (up
// to maxSearchFileBytes), each candidate the multi-line pattern finds
// checked line by line, as grep matches.
func grepWhole(f *os.File, g *grepper, emit func(m searchMatch, isMatch, before bool)) (int, error) {
	// One read of the file's size (and one that finds its end), rather
	// than a reader's growing steps: small files are most of a tree.
	size := int64(64 << 10)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	buf := make([]byte, min(size, maxSearchFileBytes)+1)
	n, err := io.ReadFull(f, buf)
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		buf = buf[:n]
	case err != nil:
		return 0, err
	default:
		buf = buf[:min(int64(n), maxSearchFileBytes)] // it grew meanwhile, or is longer than a search reads
	}
	if binary(buf[:min(len(buf), sniffBytes)]) {
		return 0, nil
	}
	// Lines end at \n, a \r before it left out, as the line reader has them.
	if bytes.Contains(buf, []byte("\r\n")) {
		buf = bytes.ReplaceAll(buf, []byte("\r\n"), []byte("\n"))
	}
	n, pos, line, counted := 0, 0, 1, 0
	for pos <= len(buf) {
		loc := g.multi.FindIndex(buf[pos:])
		if loc == nil {
			break
		}
		start := pos + loc[0]
		ls := bytes.LastIndexByte(buf[:start], '\n') + 1
		le := len(buf)
		if i := bytes.IndexByte(buf[start:], '\n'); i >= 0 {
			le = start + i
		}
		line += bytes.Count(buf[counted:ls], []byte{'\n'})
		counted = ls
		if text := buf[ls:le]; g.re.Match(text) && (le < len(buf) || len(text) > 0 || ls < len(buf)) {
			n++
			emit(searchMatch{Line: line, Content: clip(strings.TrimRight(string(text), "\r"), maxMatchChars)}, true, false)
		}
		pos = le + 1
	}
	return n, nil
}

// grepFile reports each matching line of a text file (and the lines of
// context around it: before says a line comes before its match); it
// returns how many lines matched.
func grepFile(path string, g *grepper, contextLines int, emit func(m searchMatch, isMatch, before bool)) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if contextLines == 0 && g.multi != nil {
		return grepWhole(f, g, emit)
	}
	re := g.re
	r := bufio.NewReaderSize(f, 64<<10)
	if sniff, _ := r.Peek(sniffBytes); binary(sniff) {
		return 0, nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var before []searchMatch
	after, n, read := 0, 0, 0
	lastEmitted := 0
	for line := 1; sc.Scan(); line++ {
		read += len(sc.Bytes()) + 1
		if read > maxSearchFileBytes {
			break
		}
		text := sc.Text()
		m := searchMatch{Line: line, Content: clip(strings.TrimRight(text, "\r"), maxMatchChars)}
		if re.MatchString(text) {
			n++
			for _, b := range before {
				if b.Line > lastEmitted {
					emit(b, false, true)
				}
			}
			before = before[:0]
			emit(m, true, false)
			lastEmitted, after = line, contextLines
			continue
		}
		if after > 0 {
			emit(m, false, false)
			lastEmitted = line
			after--
			continue
		}
		if contextLines > 0 {
			before = append(before, m)
			if len(before) > contextLines {
				before = before[1:]
			}
		}
	}
	return n, nil
}

func findFiles(ctx context.Context, c *Call, root, pattern string, offset, limit int) any {
	if _, err := filepath.Match(pattern, ""); err != nil {
		return failure("invalid glob " + pattern + ": " + err.Error())
	}
	type hit struct {
		path string
		mod  time.Time
	}
	var hits []hit
	err := walk(ctx, root, func(path string, d fs.DirEntry) error {
		name := filepath.Base(path)
		ok, _ := filepath.Match(pattern, name)
		if !ok && !strings.ContainsAny(pattern, "*?[") {
			ok = strings.Contains(strings.ToLower(name), strings.ToLower(pattern))
		}
		if !ok {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			hits = append(hits, hit{c.display(path), fi.ModTime()})
		}
		return nil
	})
	slices.SortStableFunc(hits, func(a, b hit) int { return b.mod.Compare(a.mod) })
	names := make([]string, len(hits))
	for i, h := range hits {
		names[i] = h.path
	}
	out := map[string]any{"total_count": len(names), "files": page(names, offset, limit)}
	if len(names) > offset+limit {
		out["truncated"] = true
		out["_hint"] = fmt.Sprintf("Results truncated. Use offset=%d to see more, or narrow with a more specific pattern.", offset+limit)
	}
	if err != nil {
		out["limit_reason"] = err.Error()
	}
	return out
}
