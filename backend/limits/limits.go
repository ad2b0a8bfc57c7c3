// Package limits holds the bounds Atrium puts on input it did not write: a
// plugin's manifest, config.yaml, ids, text echoed back in errors. Each check
// runs before the expensive parser sees the bytes, and its error names the
// bound, so a hostile or broken file costs one clear error and nothing more.
package limits

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"syscall"
	"unicode/utf8"

	"atrium/backend/apperr"
)

// Bounds of the files Atrium parses.
const (
	// ManifestBytes caps a plugin.yaml (real ones are under 4 KiB).
	ManifestBytes = 64 << 10
	// ConfigBytes caps a config.yaml.
	ConfigBytes = 1 << 20
	// YAMLDepth caps how deeply a manifest or config may nest (block
	// indentation, sequence dashes and flow brackets together). The YAML
	// library's cost grows with the square of the depth.
	YAMLDepth = 32
	// EchoBytes is how much of a rejected value an error message repeats.
	EchoBytes = 64
)

// ReadFile reads at most max bytes of path; a larger file is an invalid
// error naming the file and the bound, and is not read past the bound. Only
// a regular file is read (through a link too): a FIFO would block, a
// device never end; each is an invalid error, and opening one does not
// wait.
func ReadFile(path string, max int64, what string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, path, max, what)
}

// ReadFS is ReadFile on an fs.FS.
func ReadFS(fsys fs.FS, name, label string, max int64, what string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, label, max, what)
}

func read(f io.Reader, label string, max int64, what string) ([]byte, error) {
	if st, ok := f.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if info, err := st.Stat(); err == nil {
			if info.IsDir() {
				return nil, apperr.New(apperr.Invalid, "%s is a folder, not a file", label)
			}
			if !info.Mode().IsRegular() {
				return nil, apperr.New(apperr.Invalid, "%s is not a regular file (a FIFO or a device is not read)", label)
			}
			if info.Size() > max {
				return nil, TooLarge(label, info.Size(), max, what)
			}
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, TooLarge(label, -1, max, what)
	}
	return data, nil
}

// TooLarge is the error for input over its size bound (size < 0: unknown).
func TooLarge(label string, size, max int64, what string) error {
	if size >= 0 {
		return apperr.New(apperr.Invalid, "%s is %s, over the %s limit for %s", label, Size(size), Size(max), what)
	}
	return apperr.New(apperr.Invalid, "%s is over the %s limit for %s", label, Size(max), what)
}

// Size renders a byte count for people (bytes, KiB, MiB).
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// YAMLNumber is v as a number, when the YAML parser read a number (an
// integer decodes as int, int64 or uint64).
func YAMLNumber(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// ErrTooDeep is wrapped by CheckYAMLDepth's error.
var ErrTooDeep = errors.New("nested too deeply")

// CheckYAMLDepth scans YAML text, without parsing it, for nesting deeper
// than max: indentation levels, "- " sequence entries and flow brackets
// ([ and {) outside quotes, comments and block scalars all count. It is
// conservative (an odd but valid document may count a level or two more
// than a parser would) and linear in the input. label names the file in the
// error, which gives the line where the bound was passed.
func CheckYAMLDepth(data []byte, max int, label string) error {
	var (
		indents    []int // the open block indentation levels
		flow       int   // open [ and { across lines
		line       = 0
		scalarFrom = -1 // inside a block scalar (| or >) opened at this indent
		inSingle   bool // a quoted scalar can span lines
		inDouble   bool
	)
	fail := func() error {
		return apperr.Wrap(apperr.Invalid, ErrTooDeep, "%s:%d: nested deeper than %d levels (the limit)", label, line, max)
	}
	for start := 0; start < len(data); {
		end := start
		for end < len(data) && data[end] != '\n' {
			end++
		}
		text := data[start:end]
		start = end + 1
		line++
		indent := 0
		for indent < len(text) && (text[indent] == ' ' || text[indent] == '\t') {
			indent++
		}
		rest := text[indent:]
		blank := len(rest) == 0 || rest[0] == '\r'
		if scalarFrom >= 0 {
			if blank || indent > scalarFrom {
				continue // block scalar content: text, not structure
			}
			scalarFrom = -1
		}
		if blank && !inSingle && !inDouble {
			continue
		}
		depth := 0
		if flow == 0 && !inSingle && !inDouble {
			if rest[0] == '#' {
				continue
			}
			for len(indents) > 0 && indents[len(indents)-1] > indent {
				indents = indents[:len(indents)-1]
			}
			if len(indents) == 0 || indents[len(indents)-1] < indent {
				indents = append(indents, indent)
			}
			// "- - - x": each dash opens a sequence; "? " a complex key.
			for len(rest) >= 2 && (rest[0] == '-' || rest[0] == '?') && (rest[1] == ' ' || rest[1] == '\t') {
				depth++
				rest = rest[2:]
				for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
					rest = rest[1:]
				}
			}
		}
		depth += len(indents)
		if depth+flow > max {
			return fail()
		}
		// Scan the rest of the line for quotes, comments and brackets. In
		// block context a bracket opens a collection only where a value
		// starts (after ": ", "- ", "," or at the start of the content).
		valueStart := flow == 0
		lastSig := byte(0)
		for i := 0; i < len(rest); i++ {
			c := rest[i]
			switch {
			case inSingle:
				if c == '\'' {
					if i+1 < len(rest) && rest[i+1] == '\'' {
						i++
					} else {
						inSingle = false
					}
				}
				continue
			case inDouble:
				if c == '\\' {
					i++
				} else if c == '"' {
					inDouble = false
				}
				continue
			}
			switch c {
			case '#':
				if i == 0 || rest[i-1] == ' ' || rest[i-1] == '\t' {
					i = len(rest) // a comment to the end of the line
					continue
				}
			case '\'', '"':
				if flow > 0 || valueStart || lastSig == ':' || lastSig == '-' || lastSig == ',' || lastSig == 0 {
					if c == '\'' {
						inSingle = true
					} else {
						inDouble = true
					}
				}
			case '[', '{':
				if flow > 0 || valueStart || lastSig == ':' || lastSig == '-' || lastSig == ',' || lastSig == '?' {
					flow++
					if depth+flow > max {
						return fail()
					}
				}
			case ']', '}':
				if flow > 0 {
					flow--
				}
			case '|', '>':
				if flow == 0 && (lastSig == ':' || lastSig == '-' || valueStart) && blockScalarHeader(rest[i+1:]) {
					scalarFrom = indent
					i = len(rest)
					continue
				}
			}
			if c != ' ' && c != '\t' && c != '\r' {
				valueStart = false
				lastSig = c
				if c == ':' && i+1 < len(rest) && rest[i+1] != ' ' && rest[i+1] != '\t' {
					lastSig = 'x' // "a:b" is a plain scalar, not a key
				}
			}
		}
	}
	return nil
}

// blockScalarHeader reports whether what follows a | or > is a block scalar
// header: indentation and chomping indicators, then a comment or nothing.
func blockScalarHeader(rest []byte) bool {
	for i, c := range rest {
		switch {
		case c == '+' || c == '-' || (c >= '1' && c <= '9'):
		case c == ' ' || c == '\t' || c == '\r':
		case c == '#' && i > 0 && (rest[i-1] == ' ' || rest[i-1] == '\t'):
			return true
		default:
			return false
		}
	}
	return true
}

// Echo renders a value for an error message: quoted, and cut to EchoBytes
// with its full length said, so a 10 KB hostile id costs one short line.
func Echo(s string) string {
	if len(s) <= EchoBytes {
		return strconv.Quote(s)
	}
	cut := EchoBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}
