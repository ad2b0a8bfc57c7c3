package shellhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/shlex"

	"atrium/backend/atomicfile"
	"atrium/backend/limits"
)

// AllowlistFile is the consent file in the profile's folder, named and
// shaped as the familiar agent's: {"approvals": [{event, command,
// approved_at, script_mtime_at_approval}]}.
const AllowlistFile = "shell-hooks-allowlist.json"

// Approval is one (event, command) pair the user allowed to run.
type Approval struct {
	Event      string  `json:"event"`
	Command    string  `json:"command"`
	ApprovedAt string  `json:"approved_at"`
	ScriptTime *string `json:"script_mtime_at_approval"`
}

// Allowlist is the profile's consent file.
type Allowlist struct {
	dir, path string
}

// NewAllowlist is the allowlist of the profile folder dir (where hook
// commands run: a relative script is found from there).
func NewAllowlist(dir string) Allowlist {
	return Allowlist{dir: dir, path: filepath.Join(dir, AllowlistFile)}
}

// Path is the file's path.
func (a Allowlist) Path() string { return a.path }

type allowDoc struct {
	Approvals []Approval `json:"approvals"`
}

// Load reads the approvals. A missing file has none; an unreadable or
// broken one is an error that says so (nothing runs then: consent that
// cannot be read is not consent).
func (a Allowlist) Load() ([]Approval, error) {
	data, err := limits.ReadFile(a.path, limits.ConfigBytes, "the shell hook allowlist")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data = []byte(strings.TrimPrefix(string(data), "\ufeff"))
	if strings.TrimSpace(string(data)) == "" {
		return nil, nil
	}
	var doc allowDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("the shell hook allowlist %s is not valid JSON (%v); fix or remove it, then approve the hooks again", a.path, err)
	}
	return doc.Approvals, nil
}

// Find returns the approval of (event, command), if any.
func (a Allowlist) Find(event, command string) (*Approval, error) {
	list, err := a.Load()
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].Event == event && list[i].Command == command {
			return &list[i], nil
		}
	}
	return nil, nil
}

// Approve records (event, command) as allowed now, with the modification
// time of the script it runs, so a later change to it can be reported.
func (a Allowlist) Approve(event, command string, now time.Time) error {
	return a.ApproveAll([]Spec{{Name: event, Command: command}}, now)
}

// ApproveAll records the (Name, Command) pair of each spec as allowed now,
// in one rewrite of the file.
func (a Allowlist) ApproveAll(specs []Spec, now time.Time) error {
	if len(specs) == 0 {
		return nil
	}
	at := now.UTC().Format("2006-01-02T15:04:05.000000Z")
	return a.update(func(list []Approval) []Approval {
		for _, s := range specs {
			list = slices.DeleteFunc(list, func(e Approval) bool { return e.Event == s.Name && e.Command == s.Command })
			list = append(list, Approval{Event: s.Name, Command: s.Command, ApprovedAt: at, ScriptTime: ScriptTime(a.dir, s.Command)})
		}
		return list
	})
}

// Revoke removes every approval of command; it returns how many there were.
func (a Allowlist) Revoke(command string) (int, error) {
	n := 0
	err := a.update(func(list []Approval) []Approval {
		out := list[:0:0]
		for _, e := range list {
			if e.Command == command {
				n++
				continue
			}
			out = append(out, e)
		}
		return out
	})
	return n, err
}

// update changes the file under an exclusive lock on a sibling .lock file,
// so two processes approving at once both count, and replaces it whole.
func (a Allowlist) update(change func([]Approval) []Approval) error {
	if err := os.MkdirAll(filepath.Dir(a.path), 0o755); err != nil {
		return err
	}
	unlock, err := atomicfile.Lock(a.path)
	if err != nil {
		return err
	}
	defer unlock()
	list, err := a.Load()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // commands keep their > and & readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(allowDoc{Approvals: nonNil(change(list))}); err != nil {
		return err
	}
	return atomicfile.Write(a.path, buf.Bytes(), 0o600, nil)
}

func nonNil(l []Approval) []Approval {
	if l == nil {
		return []Approval{}
	}
	return l
}

// scriptExts are the endings of the script a command runs.
var scriptExts = []string{".sh", ".bash", ".zsh", ".fish", ".py", ".pyw", ".rb", ".pl", ".lua", ".js", ".mjs", ".cjs", ".ts"}

// IsScript tells whether a command's word names a script by its ending.
func IsScript(w string) bool {
	for _, e := range scriptExts {
		if strings.HasSuffix(strings.ToLower(w), e) {
			return true
		}
	}
	return false
}

// ScriptPath is the script a command runs: its first word with a script's
// ending, else its first word that looks like a path, else its first word.
func ScriptPath(command string) string {
	words, err := shlex.Split(command)
	if err != nil || len(words) == 0 {
		return command
	}
	for _, w := range words {
		if IsScript(w) {
			return w
		}
	}
	for _, w := range words {
		if strings.Contains(w, "/") || strings.HasPrefix(w, "~") {
			return w
		}
	}
	return words[0]
}

// ScriptTime is the modification time of command's script (RFC 3339, UTC),
// nil when it is not a file; a relative one is found from dir.
func ScriptTime(dir, command string) *string {
	info, err := os.Stat(Resolve(dir, ScriptPath(command)))
	if err != nil {
		return nil
	}
	s := info.ModTime().UTC().Format(time.RFC3339Nano)
	return &s
}

// Resolve is the file a command's word names: a leading ~ is the user's
// home folder, a relative path is found from dir, and a bare name that is
// not there is looked up in PATH, as the program of a command is.
func Resolve(dir, p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	if filepath.IsAbs(p) {
		return p
	}
	joined := filepath.Join(dir, p)
	if strings.Contains(p, "/") {
		return joined
	}
	if _, err := os.Stat(joined); err == nil {
		return joined
	}
	if lp, err := exec.LookPath(p); err == nil {
		return lp
	}
	return joined
}

// Split separates specs into those the user approved and those still
// waiting for consent. With accept (--accept-hooks, ATRIUM_ACCEPT_HOOKS,
// hooks_auto_accept), the waiting ones are approved and recorded now.
func (a Allowlist) Split(specs []Spec, accept bool, now time.Time) (approved, waiting []Spec, err error) {
	list, err := a.Load()
	if err != nil {
		return nil, specs, err
	}
	for _, s := range specs {
		if slices.ContainsFunc(list, func(e Approval) bool { return e.Event == s.Name && e.Command == s.Command }) {
			approved = append(approved, s)
		} else {
			waiting = append(waiting, s)
		}
	}
	if accept && len(waiting) > 0 {
		if err := a.ApproveAll(waiting, now); err != nil {
			return approved, waiting, err
		}
		approved, waiting = specs, nil
	}
	return approved, waiting, nil
}

// ApproveWaiting approves those of specs not approved yet, and returns how
// many that was (the rest already were).
func (a Allowlist) ApproveWaiting(specs []Spec, now time.Time) (int, error) {
	_, waiting, err := a.Split(specs, false, now)
	if err != nil {
		return 0, err
	}
	return len(waiting), a.ApproveAll(waiting, now)
}

// AcceptEnv are the environment variables that approve every hook
// (Atrium's, and the familiar agent's name for it).
var AcceptEnv = []string{"ATRIUM_ACCEPT_HOOKS", "HERMES_ACCEPT_HOOKS"}
