package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"atrium/backend/atomicfile"
)

const (
	defaultReadLimit = 500
	maxReadLimit     = 2000
	maxLineChars     = 2000
	// maxEditBytes bounds a file write_file or patch reads whole.
	maxEditBytes = 50 << 20
	sniffBytes   = 8000
)

// devices are paths a read never ends on or that wait for input.
var devices = []string{"/dev/zero", "/dev/random", "/dev/urandom", "/dev/full", "/dev/stdin", "/dev/tty", "/dev/console",
	"/dev/stdout", "/dev/stderr", "/dev/fd/0", "/dev/fd/1", "/dev/fd/2"}

func readFileTool() Tool {
	return Tool{Name: "read_file", Toolset: "file", run: readFile,
		Description: "Read a text file with line numbers and pagination. Use this instead of cat/head/tail in terminal. Output " +
			"format: 'LINE_NUM|CONTENT'. Suggests similar filenames if not found. Use offset and limit for large files; a read " +
			"longer than about 100,000 characters is refused. Cannot read images or other binary files.",
		Parameters: `{"type":"object","properties":{` +
			`"path":{"type":"string","description":"Path to the file to read (absolute, relative, or ~/path)"},` +
			`"offset":{"type":"integer","description":"Line number to start reading from (1-indexed, default: 1)","default":1,"minimum":1},` +
			`"limit":{"type":"integer","description":"Maximum number of lines to read (default: 500, max: 2000)","default":500,"maximum":2000}` +
			`},"required":["path"]}`}
}

func writeFileTool() Tool {
	return Tool{Name: "write_file", Toolset: "file", run: writeFile, Writes: true,
		Description: "Write content to a file, completely replacing existing content. Use this instead of echo/cat heredoc in " +
			"terminal. Creates parent directories automatically. OVERWRITES the entire file: use 'patch' for targeted edits.",
		Parameters: `{"type":"object","properties":{` +
			`"path":{"type":"string","description":"Path to the file to write (will be created if it doesn't exist, overwritten if it does)"},` +
			`"content":{"type":"string","description":"Complete content to write to the file"}` +
			`},"required":["path","content"]}`}
}

func patchTool() Tool {
	return Tool{Name: "patch", Toolset: "file", run: patch, Writes: true,
		Description: "Targeted find-and-replace edits in files. Use this instead of sed/awk in terminal. Whitespace and " +
			"indentation differences are tolerated when the text is otherwise unique. Returns a unified diff.\n\n" +
			"REPLACE MODE (mode='replace', default): find a unique string and replace it. REQUIRED PARAMETERS: mode, path, " +
			"old_string, new_string.\nPATCH MODE (mode='patch'): apply V4A multi-file patches for bulk changes. REQUIRED " +
			"PARAMETERS: mode, patch.",
		Parameters: `{"type":"object","properties":{` +
			`"mode":{"type":"string","enum":["replace","patch"],"description":"Edit mode. 'replace' (default): requires path + old_string + new_string. 'patch': requires patch content only.","default":"replace"},` +
			`"path":{"type":"string","description":"REQUIRED when mode='replace'. File path to edit."},` +
			`"old_string":{"type":"string","description":"REQUIRED when mode='replace'. Exact text to find and replace. Must be unique in the file unless replace_all=true. Include surrounding context lines to ensure uniqueness."},` +
			`"new_string":{"type":"string","description":"REQUIRED when mode='replace'. Replacement text. Pass empty string '' to delete the matched text."},` +
			`"replace_all":{"type":"boolean","description":"Replace all occurrences instead of requiring a unique match (default: false)","default":false},` +
			`"patch":{"type":"string","description":"REQUIRED when mode='patch'. V4A format patch content. Format:\n*** Begin Patch\n*** Update File: path/to/file\n@@ context hint @@\n context line\n-removed line\n+added line\n*** End Patch"}` +
			`},"required":["mode"]}`}
}

// readResult is the familiar agent's result of a read.
type readResult struct {
	Content      string   `json:"content,omitempty"`
	TotalLines   int      `json:"total_lines"`
	FileSize     int64    `json:"file_size"`
	Truncated    bool     `json:"truncated"`
	Hint         string   `json:"hint,omitempty"`
	IsBinary     bool     `json:"is_binary,omitempty"`
	Error        string   `json:"error,omitempty"`
	SimilarFiles []string `json:"similar_files,omitempty"`
}

func readFile(ctx context.Context, c *Call) any {
	p, _ := c.str("path")
	if strings.TrimSpace(p) == "" {
		return failure("path is required")
	}
	path := c.resolve(p)
	if slices.Contains(devices, path) {
		return failure("Cannot read " + path + ": it is a device that never ends or waits for input")
	}
	if c.Settings.secret(path) {
		return failure("Cannot read " + path + ": it holds the profile's keys and tokens, which are not the model's to read")
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return readResult{Error: "File not found: " + path, SimilarFiles: similarFiles(path)}
	case err != nil:
		return failure(err.Error())
	case fi.IsDir():
		return failure(path + " is a directory: use search_files with target='files' to list it")
	case !fi.Mode().IsRegular():
		return failure(path + " is not a regular file")
	}
	f, err := os.Open(path)
	if err != nil {
		return failure(err.Error())
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	if sniff, _ := r.Peek(sniffBytes); binary(sniff) {
		return readResult{IsBinary: true, FileSize: fi.Size(),
			Error: fmt.Sprintf("Binary file (%d bytes): cannot display as text.", fi.Size())}
	}
	offset := max(1, c.integer("offset", 1))
	limit := min(max(1, c.integer("limit", defaultReadLimit)), maxReadLimit)
	maxChars := c.Settings.MaxReadChars
	if maxChars <= 0 {
		maxChars = DefaultMaxReadChars
	}
	var out strings.Builder
	n, chars := 0, 0
	for {
		if n%4096 == 0 && ctx.Err() != nil {
			return failure("the read was stopped with the turn")
		}
		line, err := readLine(r, maxLineChars*4)
		if line == "" && err != nil {
			break
		}
		n++
		if n >= offset && n < offset+limit {
			line = strings.TrimRight(line, "\r\n")
			if n == 1 {
				line = strings.TrimPrefix(line, "\uFEFF")
			}
			if utf8.RuneCountInString(line) > maxLineChars {
				line = string([]rune(line)[:maxLineChars]) + "... [truncated]"
			}
			if out.Len() > 0 {
				out.WriteByte('\n')
			}
			fmt.Fprintf(&out, "%d|%s", n, line)
			chars += utf8.RuneCountInString(line)
		}
		if err != nil {
			break
		}
	}
	res := readResult{TotalLines: n, FileSize: fi.Size()}
	if chars > maxChars {
		res.Error = fmt.Sprintf("Reading lines %d-%d would return %d characters, above the limit of %d: read a smaller range with offset and limit", offset, min(n, offset+limit-1), chars, maxChars)
		return res
	}
	res.Content = out.String()
	if last := offset + limit - 1; last < n {
		res.Truncated = true
		res.Hint = fmt.Sprintf("Showing lines %d-%d of %d. Use offset=%d to continue reading.", offset, last, n, last+1)
	} else if offset > n && n > 0 {
		res.Hint = fmt.Sprintf("The file has %d lines; offset %d is past its end.", n, offset)
	}
	return res
}

// readLine reads one line (its newline included) keeping at most keep of
// its bytes: a line of gigabytes (a minified bundle, a log without
// newlines) costs its reading, not its size in memory.
func readLine(r *bufio.Reader, keep int) (string, error) {
	var b []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if room := keep - len(b); room > 0 {
			b = append(b, chunk[:min(room, len(chunk))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(chunk) > 0 && chunk[len(chunk)-1] == '\n' && len(b) == keep && b[len(b)-1] != '\n' {
			b = append(b, '\n') // the line's end, past what was kept
		}
		return string(b), err
	}
}

// binary says whether a file's first bytes are not text: a NUL byte, or
// UTF-8 that breaks before its last few bytes (a character cut by the
// sample's end is text).
func binary(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return true
	}
	if utf8.Valid(b) {
		return false
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return len(b)-i > 3 || len(b) < sniffBytes
		}
		i += size
	}
	return false
}

// similarFiles are names beside a missing path that look like its own.
func similarFiles(path string) []string {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil
	}
	want := strings.ToLower(filepath.Base(path))
	stem := strings.TrimSuffix(want, filepath.Ext(want))
	var out []string
	for _, e := range entries {
		name := strings.ToLower(e.Name())
		other := strings.TrimSuffix(name, filepath.Ext(name))
		if len(other) < 3 || len(stem) < 3 { // ".ci" or "a.go": too short to look like anything
			if name != want && other != stem {
				continue
			}
		}
		if strings.Contains(name, stem) || strings.Contains(stem, other) {
			out = append(out, filepath.Join(filepath.Dir(path), e.Name()))
			if len(out) == 5 {
				break
			}
		}
	}
	return out
}

// refuseProtected says why path may not be written (nil: it may).
func refuseProtected(path string, protected []string) error {
	if p, ok := listed(path, protected, true); ok {
		return fmt.Errorf("%s is the profile's own (%s): a person changes it, in Settings or by hand", path, filepath.Base(p))
	}
	return nil
}

// listed is the entry of list path is (through links on either side), or
// with sidecars one whose sidecar it is (state.db-wal beside state.db).
func listed(path string, list []string, sidecars bool) (string, bool) {
	if !slices.ContainsFunc(list, func(p string) bool { return p != "" }) {
		return "", false // nothing to resolve a link for
	}
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
	}
	for _, p := range list {
		if p == "" {
			continue
		}
		rp := p
		if r, err := filepath.EvalSymlinks(p); err == nil {
			rp = r
		}
		if path == p || real == rp ||
			sidecars && strings.HasPrefix(filepath.Base(real), filepath.Base(rp)+"-") && filepath.Dir(real) == filepath.Dir(rp) {
			return p, true
		}
	}
	return "", false
}

// editable reads a file write_file or patch is about to replace ("" and
// false when it does not exist).
func editable(path string) (string, bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if fi.IsDir() {
		return "", false, fmt.Errorf("%s is a directory", path)
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxEditBytes {
		return "", false, fmt.Errorf("%s is %d bytes, above the %d a tool edits whole: use the terminal", path, fi.Size(), maxEditBytes)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false, err
	}
	if binary(b[:min(len(b), sniffBytes)]) {
		return "", false, fmt.Errorf("%s is a binary file: it is not edited as text", path)
	}
	return string(b), true, nil
}

// store writes text to path the way the file was: its line endings and
// its byte-order mark kept, a link kept a link, its mode kept.
func store(path, text, before string, existed bool) (int, bool, error) {
	if existed {
		if strings.Contains(before[:min(len(before), 4096)], "\r\n") {
			text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r\n")
		}
		if strings.HasPrefix(before, "\uFEFF") && !strings.HasPrefix(text, "\uFEFF") {
			text = "\uFEFF" + text
		}
	}
	made := false
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 0, false, err
		}
		made = true
	}
	if err := atomicfile.Replace(path, []byte(text), 0o644); err != nil {
		return 0, made, err
	}
	return len(text), made, nil
}

func writeFile(_ context.Context, c *Call) any {
	p, _ := c.str("path")
	if strings.TrimSpace(p) == "" {
		return failure("write_file: missing required field 'path'. Re-emit the tool call with both 'path' and 'content' set.")
	}
	content, ok := c.Args["content"].(string)
	if !ok {
		if _, present := c.Args["content"]; !present {
			return failure("write_file: missing required field 'content'. Re-emit the tool call with the full content.")
		}
		return failure(fmt.Sprintf("write_file: 'content' must be a string, not %T", c.Args["content"]))
	}
	path := c.resolve(p)
	if err := refuseProtected(path, c.Settings.Protected); err != nil {
		return failure(err.Error())
	}
	before, existed, err := editable(path)
	if err != nil {
		return failure(err.Error())
	}
	n, made, err := store(path, content, before, existed)
	if err != nil {
		return failure("Failed to write " + path + ": " + err.Error())
	}
	c.Changed = append(c.Changed, path)
	return map[string]any{"bytes_written": n, "dirs_created": made}
}

// patchResult is the familiar agent's result of an edit.
type patchResult struct {
	Success       bool     `json:"success"`
	NoChange      bool     `json:"no_change,omitempty"`
	Note          string   `json:"note,omitempty"`
	Diff          string   `json:"diff,omitempty"`
	FilesModified []string `json:"files_modified,omitempty"`
	FilesCreated  []string `json:"files_created,omitempty"`
	FilesDeleted  []string `json:"files_deleted,omitempty"`
	Error         string   `json:"error,omitempty"`
	Hint          string   `json:"_hint,omitempty"`
}

func patch(_ context.Context, c *Call) any {
	mode, _ := c.str("mode")
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "", "replace":
		return replaceIn(c)
	case "patch":
		text, _ := c.str("patch")
		if strings.TrimSpace(text) == "" {
			return patchResult{Error: "mode='patch' needs the patch content in 'patch'"}
		}
		return applyV4A(c, text)
	}
	return patchResult{Error: "mode must be 'replace' or 'patch', not '" + mode + "'"}
}

func replaceIn(c *Call) patchResult {
	p, _ := c.str("path")
	oldS, hasOld := c.Args["old_string"].(string)
	newS, hasNew := c.Args["new_string"].(string)
	switch {
	case strings.TrimSpace(p) == "":
		return patchResult{Error: "mode='replace' needs 'path'"}
	case !hasOld || oldS == "":
		return patchResult{Error: "mode='replace' needs a non-empty 'old_string'"}
	case !hasNew:
		return patchResult{Error: "mode='replace' needs 'new_string' ('' deletes the text)"}
	}
	path := c.resolve(p)
	if err := refuseProtected(path, c.Settings.Protected); err != nil {
		return patchResult{Error: err.Error()}
	}
	before, existed, err := editable(path)
	if err != nil {
		return patchResult{Error: err.Error()}
	}
	if !existed {
		return patchResult{Error: "File not found: " + path, Hint: "use write_file to create a file"}
	}
	text := strings.ReplaceAll(before, "\r\n", "\n")
	after, err := replaceText(text, strings.ReplaceAll(oldS, "\r\n", "\n"), strings.ReplaceAll(newS, "\r\n", "\n"), c.boolean("replace_all"))
	if err != nil {
		return patchResult{Error: err.Error() + " in " + path,
			Hint: "old_string not found or not unique. Use read_file to verify the current content, or search_files to locate the text."}
	}
	if after == text {
		return patchResult{Success: true, NoChange: true, Note: "the file already reads so; nothing was written"}
	}
	if _, _, err := store(path, after, before, true); err != nil {
		return patchResult{Error: "Failed to write " + path + ": " + err.Error()}
	}
	c.Changed = append(c.Changed, path)
	return patchResult{Success: true, Diff: unifiedDiff(p, text, after), FilesModified: []string{path}}
}

// replaceText replaces oldS in text: exactly where it occurs; else, when
// the lines it spans occur once with only their indentation or trailing
// space different, there.
func replaceText(text, oldS, newS string, all bool) (string, error) {
	switch n := strings.Count(text, oldS); {
	case n == 1 || n > 1 && all:
		return strings.ReplaceAll(text, oldS, newS), nil
	case n > 1:
		return "", fmt.Errorf("old_string occurs %d times: include more surrounding lines to make it unique, or set replace_all=true", n)
	}
	lines := strings.Split(text, "\n")
	want := strings.Split(strings.Trim(oldS, "\n"), "\n")
	var at []int
	for i := 0; i+len(want) <= len(lines); i++ {
		if sameTrimmed(lines[i:i+len(want)], want) {
			at = append(at, i)
		}
	}
	switch {
	case len(at) == 0:
		return "", errors.New("Could not find old_string")
	case len(at) > 1 && !all:
		return "", fmt.Errorf("old_string matches %d places once whitespace is set aside: include more surrounding lines", len(at))
	}
	repl := strings.Split(strings.Trim(newS, "\n"), "\n")
	if strings.Trim(newS, "\n") == "" {
		repl = nil
	}
	var out []string
	prev := 0
	for _, i := range at {
		out = append(out, lines[prev:i]...)
		out = append(out, reindent(repl, want[0], lines[i])...)
		prev = i + len(want)
	}
	out = append(out, lines[prev:]...)
	return strings.Join(out, "\n"), nil
}

func sameTrimmed(a, b []string) bool {
	for i := range a {
		if strings.TrimSpace(a[i]) != strings.TrimSpace(b[i]) {
			return false
		}
	}
	return true
}

// reindent gives replacement lines the indentation the file has where the
// model's text had another.
func reindent(repl []string, modelFirst, fileFirst string) []string {
	mi := modelFirst[:len(modelFirst)-len(strings.TrimLeft(modelFirst, " \t"))]
	fi := fileFirst[:len(fileFirst)-len(strings.TrimLeft(fileFirst, " \t"))]
	if mi == fi {
		return repl
	}
	out := make([]string, len(repl))
	for i, l := range repl {
		if strings.HasPrefix(l, mi) {
			l = fi + strings.TrimPrefix(l, mi)
		}
		out[i] = l
	}
	return out
}

// unifiedDiff is a one-hunk unified diff of a change: the lines from the
// first that differs to the last, with three lines of context.
func unifiedDiff(name, a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	start := max(0, pre-3)
	aEnd, bEnd := min(len(al), len(al)-suf+3), min(len(bl), len(bl)-suf+3)
	var d strings.Builder
	fmt.Fprintf(&d, "--- a/%s\n+++ b/%s\n@@ -%d,%d +%d,%d @@\n", name, name, start+1, aEnd-start, start+1, bEnd-start)
	for _, l := range al[start:pre] {
		d.WriteString(" " + l + "\n")
	}
	for _, l := range al[pre : len(al)-suf] {
		d.WriteString("-" + l + "\n")
	}
	for _, l := range bl[pre : len(bl)-suf] {
		d.WriteString("+" + l + "\n")
	}
	for _, l := range al[len(al)-suf : aEnd] {
		d.WriteString(" " + l + "\n")
	}
	return d.String()
}
