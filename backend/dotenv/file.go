package dotenv

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"atrium/backend/atomicfile"
)

// bom is the UTF-8 byte order mark an editor on another system may put
// first (python-dotenv's callers read with utf-8-sig).
var bom = []byte{0xef, 0xbb, 0xbf}

// MaxSize is the largest .env read: a file of keys is a few kilobytes.
const MaxSize = 1 << 20

// Report is what Load did.
type Report struct {
	Path   string
	Exists bool
	// Set are the variables the file gave the process; Shadowed those it
	// has that the environment already had (the environment's value is
	// kept). Both in the file's order; names only, never values.
	Set, Shadowed []string
	// Warnings: statements that do not parse (by line), a file others may
	// read. Never a value.
	Warnings []string
}

// Read returns the file's text ("" when it does not exist) and warnings
// about the file itself.
func Read(path string) (text string, exists bool, warnings []string, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil, nil
	}
	if err != nil {
		return "", false, nil, err
	}
	if !fi.Mode().IsRegular() {
		return "", true, nil, fmt.Errorf("%s is not a file", path)
	}
	if fi.Size() > MaxSize {
		return "", true, nil, fmt.Errorf("%s is %d bytes; a .env of keys is far smaller (at most %d is read)", path, fi.Size(), MaxSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", true, nil, err
	}
	data = bytes.TrimPrefix(data, bom)
	if !utf8.Valid(data) {
		return "", true, nil, fmt.Errorf("%s is not UTF-8 text", path)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", true, nil, fmt.Errorf("%s holds NUL bytes: not a text file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		warnings = append(warnings, fmt.Sprintf("%s holds secrets but other users may read it (mode %04o): chmod 600 %s", path, perm, path))
	}
	return string(data), true, warnings, nil
}

// Problems are the warnings for statements that do not parse.
func Problems(path string, bs []Binding) []string {
	var out []string
	for _, b := range bs {
		if b.Err {
			out = append(out, fmt.Sprintf("%s: line %d does not parse and is not read (KEY=value, the value in quotes if it has spaces)", path, b.Line))
		}
	}
	return out
}

// loaded records what Load gave this process's environment (one per
// process, as the environment is): name → fromFile.
var loaded sync.Map

// fromFile is a value a .env gave, and which file.
type fromFile struct{ value, path string }

// Loaded reports whether this process's variable name holds what a .env
// gave it, rather than what the process was started with (or was set to
// since).
func Loaded(name string) bool {
	v, ok := loaded.Load(name)
	cur, set := os.LookupEnv(name)
	return ok && set && cur == v.(fromFile).value
}

// Exported reports whether this process has name from where it was
// started (or set since), not from a .env: that value goes first.
func Exported(name string) bool {
	_, ok := os.LookupEnv(name)
	return ok && !Loaded(name)
}

// Setenv gives this process name=value as the .env at path has it (a value
// just written there): Loaded reports it so.
func Setenv(path, name, value string) error {
	if err := os.Setenv(name, value); err != nil {
		return err
	}
	loaded.Store(name, fromFile{value: value, path: path})
	return nil
}

// Unsetenv takes name from this process, as from its .env.
func Unsetenv(name string) error {
	loaded.Delete(name)
	return os.Unsetenv(name)
}

// Environ is os.Environ without what a .env gave this process: for an
// Atrium process started from this one, which reads the .env itself (and
// then knows which of its variables came from there).
func Environ() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return Loaded(k)
	})
}

// Load gives the process the variables of the .env at path that its
// environment does not have already (lookup, set: os.LookupEnv and
// os.Setenv when nil). A missing file is no error. A file that cannot be
// read is an error and sets nothing; a statement that does not parse is a
// warning, and the others are read.
func Load(path string, lookup func(string) (string, bool), set func(k, v string) error) (Report, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if set == nil {
		set = func(k, v string) error { return Setenv(path, k, v) }
	}
	rep := Report{Path: path}
	text, exists, warnings, err := Read(path)
	rep.Exists, rep.Warnings = exists, warnings
	if err != nil || !exists {
		return rep, err
	}
	bs := Parse(text)
	rep.Warnings = append(rep.Warnings, Problems(path, bs)...)
	order, vals := Values(bs, lookup)
	for _, k := range order {
		if _, ok := lookup(k); ok {
			rep.Shadowed = append(rep.Shadowed, k)
			continue
		}
		if err := set(k, vals[k]); err != nil {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %s cannot be set: %v", path, k, err))
			continue
		}
		rep.Set = append(rep.Set, k)
	}
	return rep, nil
}

// Refresh gives this process the .env at path as the file is now, after a
// Load of it (another process may have written it since): what the file
// gives is set or changed, what it gave before and gives no longer is taken
// away (what another file gave is not this one's to take), and what the
// process had from where it was started still goes first. A file that cannot be read changes nothing. changed names what
// changed, never a value.
func Refresh(path string) (changed []string, err error) {
	text, exists, _, err := Read(path)
	if err != nil {
		return nil, err
	}
	// The environment the process was started with (or set since), as
	// Load saw it: without what a .env gave it.
	started := func(k string) (string, bool) {
		if Loaded(k) {
			return "", false
		}
		return os.LookupEnv(k)
	}
	var order []string
	var vals map[string]string
	if exists {
		order, vals = Values(Parse(text), started)
	}
	for _, k := range order {
		if _, ok := started(k); ok {
			continue
		}
		if cur, ok := os.LookupEnv(k); ok && cur == vals[k] {
			continue
		}
		if err := Setenv(path, k, vals[k]); err != nil {
			return changed, err
		}
		changed = append(changed, k)
	}
	var gone []string
	loaded.Range(func(key, v any) bool {
		if k := key.(string); v.(fromFile).path == path && Loaded(k) && !slices.Contains(order, k) {
			gone = append(gone, k)
		}
		return true
	})
	slices.Sort(gone)
	for _, k := range gone {
		if err := Unsetenv(k); err != nil {
			return changed, err
		}
		changed = append(changed, k)
	}
	return changed, nil
}

// Update changes the file at path under its lock: change gets the text
// ("" for a missing file) and returns the new one. The file is replaced
// whole (a linked .env stays a link: the file it names is replaced), keeps
// its mode, and is created private (0600).
func Update(path string, change func(text string) (string, error)) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	unlock, err := atomicfile.Lock(path)
	if err != nil {
		return err
	}
	defer unlock()
	text, _, _, err := Read(path)
	if err != nil {
		return err
	}
	out, err := change(text)
	if err != nil || out == text {
		return err
	}
	return atomicfile.Replace(path, []byte(out), 0o600)
}

// Names are the variables text sets, in order.
func Names(text string) []string {
	order, _ := Values(Parse(text), nil)
	return order
}
