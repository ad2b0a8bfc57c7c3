package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"atrium/backend/atomicfile"
	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/plugins/proc"
	"atrium/backend/shellhooks"
	"atrium/backend/webhooks"
)

// What the processes of a profile learn about its plugins outlives them in
// two places, so `atrium plugins list` (which starts nothing) can tell a
// running plugin from a stopped or broken one, and a command knows, before
// starting anything, which plugins registered for the hooks it can fire:
//
//	<home>/cache/plugins/<name>.json  the last handshake: hooks, commands, last failure
//	<home>/run/plugins/<pid>.json     one per live process hosting plugins: their states

// Registration is what a plugin registered the last time it started in any
// process of the profile, for the folder it started from (Fingerprint), and
// how its last start or run failed, if it did.
type Registration struct {
	Fingerprint  string            `json:"fingerprint"`
	Hooks        []string          `json:"hooks"`
	Commands     []string          `json:"commands"`
	Descriptions map[string]string `json:"descriptions,omitempty"` // of the commands
	ArgsHints    map[string]string `json:"args_hints,omitempty"`   // of the commands
	// Extras: what it registered beyond hooks and commands (tools, memory
	// providers, CLI commands, ...; and what Atrium accepts but never calls).
	Extras proc.Extras `json:"extras"`
	// Env: the variables its tools named in requires_env, passed through to
	// its next process when set.
	Env     []string  `json:"env,omitempty"`
	At      time.Time `json:"at"`
	Error   string    `json:"error,omitempty"` // "" after a good start
	ErrorAt time.Time `json:"error_at,omitzero"`
}

// RunState is one plugin as one live process hosts it.
type RunState struct {
	Name     string   `json:"name"`
	State    string   `json:"state"` // running, restarting, error, stopped
	Error    string   `json:"error,omitempty"`
	PID      int      `json:"pid,omitempty"` // the plugin's own process; the host's for in-process plugins
	Restarts int      `json:"restarts,omitempty"`
	Hooks    []string `json:"hooks"`
	Commands []string `json:"commands"`
}

// hostRecord is one live process's plugins.
type hostRecord struct {
	PID       int        `json:"pid"`
	Start     string     `json:"start,omitempty"` // the process's start time (Linux), against pid reuse
	Process   string     `json:"process"`         // what it is: "atrium serve", "the desktop window", ...
	UpdatedAt time.Time  `json:"updated_at"`
	Plugins   []RunState `json:"plugins"`
	// Shell are the shell hooks it registered.
	Shell []shellhooks.Registered `json:"shell_hooks,omitempty"`
	// Webhooks are the outbound webhook targets it registered.
	Webhooks []webhooks.Target `json:"webhooks,omitempty"`
	// ShellAll: it registers every approved shell hook (the plugin host;
	// an inline command registers only those of its hooks).
	ShellAll bool `json:"shell_all,omitempty"`
}

func registrationPath(home config.Home, name string) string {
	return filepath.Join(home.Dir, "cache", "plugins", name+".json")
}

func runDir(home config.Home) string { return filepath.Join(home.Dir, "run", "plugins") }

// reloadMarker is touched by `plugins reload`: every long-lived process of
// the profile that watches its plugins restarts them.
func reloadMarker(home config.Home) string { return filepath.Join(home.Dir, "run", "plugins-reload") }

// ReadRegistration returns the plugin's last handshake if it was made from
// the folder p is now (same fingerprint); nil otherwise.
func ReadRegistration(home config.Home, p Plugin) *Registration {
	return readRegistration(home, p.Name(), Fingerprint(p))
}

// readRegistration is ReadRegistration with the fingerprint at hand; nil
// also when the plugin never started well (only a failure is recorded).
func readRegistration(home config.Home, name, fingerprint string) *Registration {
	var r Registration
	b, err := os.ReadFile(registrationPath(home, name))
	if err != nil || json.Unmarshal(b, &r) != nil || r.Fingerprint != fingerprint {
		return nil
	}
	return &r
}

// RecordStart stores a good start's registrations (clearing the last error).
func RecordStart(home config.Home, p Plugin, hooks []string, commands []proc.CommandInfo, extras proc.Extras) error {
	r := Registration{Fingerprint: Fingerprint(p), Hooks: nonNilList(hooks), Commands: []string{}, Extras: extras, At: time.Now().UTC()}
	for _, c := range commands {
		r.Commands = append(r.Commands, c.Name)
		if c.Description != "" {
			if r.Descriptions == nil {
				r.Descriptions = map[string]string{}
			}
			r.Descriptions[c.Name] = c.Description
		}
		if c.ArgsHint != "" {
			if r.ArgsHints == nil {
				r.ArgsHints = map[string]string{}
			}
			r.ArgsHints[c.Name] = c.ArgsHint
		}
	}
	for _, t := range extras.Tools {
		for _, e := range t.RequiresEnv {
			if !slices.Contains(r.Env, e) {
				r.Env = append(r.Env, e)
			}
		}
	}
	return writeJSON(registrationPath(home, p.Name()), r)
}

// Handshake is the registration as the plugin last declared it, for
// proc.Host.Launch.
func (r Registration) Handshake() proc.InitializeResult {
	res := proc.InitializeResult{ProtocolVersion: proc.ProtocolVersion, Hooks: r.Hooks, Extras: r.Extras}
	for _, c := range r.Commands {
		res.Commands = append(res.Commands, proc.CommandInfo{Name: c, Description: r.Descriptions[c], ArgsHint: r.ArgsHints[c]})
	}
	return res
}

// RecordFailure stores why the plugin failed, keeping what it registered
// last if it is the same folder.
func RecordFailure(home config.Home, p Plugin, msg string) error {
	r := ReadRegistration(home, p)
	if r == nil {
		r = &Registration{Fingerprint: Fingerprint(p), Hooks: []string{}, Commands: []string{}}
	}
	r.Error, r.ErrorAt = msg, time.Now().UTC()
	return writeJSON(registrationPath(home, p.Name()), r)
}

// Fingerprint identifies what decides a plugin's registrations: its
// runtime, command, folder and settings, and the name, size and
// modification time of every file in its folder (hidden files and Python
// caches aside). An edited, reinstalled, upgraded or reconfigured plugin
// gets a new fingerprint (a plugin may register hooks by its settings).
func Fingerprint(p Plugin) string {
	h := sha256.New()
	m := p.Manifest
	settings, _ := json.Marshal(p.Settings) // map keys sorted: stable
	fmt.Fprintf(h, "%s\x00%s\x00%q\x00%s\x00%s\x00", m.Name, m.Runtime, m.Command, p.Dir, settings)
	if p.Dir != "" {
		n := 0
		_ = filepath.WalkDir(p.Dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			name := d.Name()
			if path != p.Dir && (strings.HasPrefix(name, ".") || name == "__pycache__") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || strings.HasSuffix(name, ".pyc") {
				return nil
			}
			if n++; n > 5000 {
				return filepath.SkipAll
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(p.Dir, path)
			fmt.Fprintf(h, "%s\x00%d\x00%d\x00", rel, info.Size(), info.ModTime().UnixNano())
			return nil
		})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// writeHostRecord publishes this process's plugins (nil removes the file).
func writeHostRecord(home config.Home, process string, plugins []RunState, shell []shellhooks.Registered, targets []webhooks.Target, shellAll bool) error {
	path := filepath.Join(runDir(home), strconv.Itoa(os.Getpid())+".json")
	if plugins == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) && !config.Unwritable(err) {
			return err
		}
		return nil
	}
	err := writeJSON(path, hostRecord{PID: os.Getpid(), Start: hooks.ProcessStart(os.Getpid()), Process: process,
		UpdatedAt: time.Now().UTC(), Plugins: plugins, Shell: shell, Webhooks: targets, ShellAll: shellAll})
	if config.Unwritable(err) {
		return nil // a read-only or full home keeps no record: nothing to say to anyone
	}
	return err
}

// liveHosts reads the records of the processes that still run, oldest
// update first, and removes those of processes that are gone.
func liveHosts(home config.Home) []hostRecord {
	entries, err := os.ReadDir(runDir(home))
	if err != nil {
		return nil
	}
	var out []hostRecord
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(runDir(home), e.Name())
		var r hostRecord
		b, err := os.ReadFile(path)
		if err != nil || json.Unmarshal(b, &r) != nil {
			continue
		}
		if !hooks.ProcessAlive(r.PID, r.Start) {
			_ = os.Remove(path)
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b hostRecord) int { return a.UpdatedAt.Compare(b.UpdatedAt) })
	return out
}

// applyStatus adds to discovered plugins what live processes and the last
// handshakes know: an enabled plugin is running (in which process), restarting,
// in error (now, or at its last start), or stopped; its hooks and commands
// are those of its last handshake when known, else the manifest's.
func applyStatus(home config.Home, list []Plugin) {
	hosts := liveHosts(home)
	for i := range list {
		p := &list[i]
		p.Hooks, p.Commands = nonNilList(p.Manifest.DeclaredHooks()), nonNilList(p.Manifest.Commands)
		reg := ReadRegistration(home, *p)
		if reg != nil && !reg.At.IsZero() {
			p.Hooks, p.Commands, p.Registered, p.Extras = nonNilList(reg.Hooks), nonNilList(reg.Commands), true, reg.Extras
			for _, w := range reg.Extras.Warnings {
				p.Warnings = append(p.Warnings, "at its last start: "+w)
			}
		}
		if p.State != StateStopped {
			continue // disabled, or a broken manifest: that is its state
		}
		var best *RunState
		var where string
		for _, h := range hosts {
			for j := range h.Plugins {
				rs := &h.Plugins[j]
				if rs.Name == p.Name() && rank(rs.State) > rank(stateOf(best)) {
					best, where = rs, h.Process
				}
			}
		}
		switch {
		case best != nil && best.State != StateStopped:
			p.State, p.Err, p.PID, p.Process, p.Restarts = best.State, best.Error, best.PID, where, best.Restarts
			if best.State == StateRunning {
				p.Hooks, p.Commands, p.Registered = nonNilList(best.Hooks), nonNilList(best.Commands), true
			}
		case reg != nil && reg.Error != "":
			p.State = StateError
			p.Err = fmt.Sprintf("%s (last start, %s)", reg.Error, reg.ErrorAt.Local().Format("2006-01-02 15:04"))
		}
	}
}

func stateOf(rs *RunState) string {
	if rs == nil {
		return ""
	}
	return rs.State
}

// rank orders the states one plugin has in several processes: running
// anywhere is what the user wants to see first.
func rank(state string) int {
	switch state {
	case StateRunning:
		return 4
	case StateRestarting:
		return 3
	case StateError:
		return 2
	case StateStopped:
		return 1
	}
	return 0
}

func nonNilList(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// writeJSON replaces path atomically.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(b, '\n'), nil)
}

// writeAtomic makes path's folder and replaces path with data (mode 0600),
// after check (when not nil) accepted the written file.
func writeAtomic(path string, data []byte, check func(tmp string) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600, check)
}
