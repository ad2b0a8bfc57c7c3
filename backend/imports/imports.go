// Package imports reads the session history of other agents (the familiar
// Python agent's state.db, Claude Code's and Codex's JSONL transcripts,
// Gemini CLI's conversation files, OpenCode's store) into
// sessions.Imported values for sessions.Service.Import. Readers only read:
// a foreign store or file is opened read-only and never changed. What cannot
// be read (a broken line, a row of an unknown shape) is reported as a
// Problem and skipped; the rest is imported.
package imports

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/sessions"
)

// The platform of an imported session that did not come from a chat
// platform: the agent it was kept by. A list filtered by platform (the
// UI's, `--platform claude-code`) then shows, or deletes, what an import
// brought.
const (
	PlatformHermes   = "hermes"
	PlatformClaude   = "claude-code"
	PlatformCodex    = "codex"
	PlatformGemini   = "gemini-cli"
	PlatformOpenCode = "opencode"
)

// The readings of the readers (sessions.Imported.Reading): each changes
// when its reader turns the same source into other messages, so that what
// an earlier version took is not then mistaken for a source rewritten.
const (
	readingHermes   = "hermes/1"
	readingClaude   = "claude-code/1"
	readingCodex    = "codex/1"
	readingGemini   = "gemini-cli/1"
	readingOpenCode = "opencode/1"
)

// Problem is one thing a reader skipped.
type Problem struct {
	Path    string `json:"path"`
	Line    int    `json:"line,omitempty"` // 1-based; 0 when not about a line
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.Path, p.Message)
}

// Yield takes one session; an error from it stops the reader.
type Yield func(sessions.Imported) error

// Reader reads one agent's history.
type Reader struct {
	Kind string // one of sessions.ImportKinds
	Path string // the store, folder or file read
	// Each gives every session found, parents before their children, each
	// with all its messages, the same way at every run.
	Each func(ctx context.Context, yield Yield) error
}

// Open makes the reader of kind for path ("" = the agent's default place,
// from env and home). warn receives what is skipped; it may be nil.
func Open(kind, path string, env func(string) string, home string, warn func(Problem)) (Reader, error) {
	if warn == nil {
		warn = func(Problem) {}
	}
	if path == "" {
		path = DefaultPath(kind, env, home)
	}
	if path == "" {
		return Reader{}, apperr.New(apperr.Invalid, "unknown import kind %q (one of hermes, claude-code, codex, gemini-cli, opencode)", kind)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return Reader{}, apperr.Wrap(apperr.Invalid, err, "import path %s", path)
	}
	if _, err := os.Stat(abs); err != nil {
		if os.IsNotExist(err) {
			return Reader{}, apperr.New(apperr.NotFound, "nothing to import from %s: %s does not exist", kind, abs)
		}
		return Reader{}, apperr.Wrap(apperr.Invalid, err, "import from %s", abs)
	}
	r := Reader{Kind: kind, Path: abs}
	switch kind {
	case sessions.ImportHermes:
		r.Each = func(ctx context.Context, yield Yield) error { return readHermes(ctx, abs, yield, warn) }
	case sessions.ImportClaude:
		r.Each = func(ctx context.Context, yield Yield) error { return readClaude(ctx, abs, yield, warn) }
	case sessions.ImportCodex:
		r.Each = func(ctx context.Context, yield Yield) error { return readCodex(ctx, abs, yield, warn) }
	case sessions.ImportGemini:
		r.Each = func(ctx context.Context, yield Yield) error { return readGemini(ctx, abs, yield, warn) }
	case sessions.ImportOpenCode:
		r.Each = func(ctx context.Context, yield Yield) error { return readOpenCode(ctx, abs, yield, warn) }
	}
	return r, nil
}

// DefaultPath is where kind keeps its history: $HERMES_HOME/state.db (else
// ~/.hermes/state.db), $CLAUDE_CONFIG_DIR/projects (else
// ~/.claude/projects), $CODEX_HOME/sessions (else ~/.codex/sessions),
// $GEMINI_CLI_HOME/.gemini/tmp (else ~/.gemini/tmp: GEMINI_CLI_HOME stands
// for the home folder), $XDG_DATA_HOME/opencode (else
// ~/.local/share/opencode). "" for an unknown kind.
func DefaultPath(kind string, env func(string) string, home string) string {
	pick := func(envName, dot, leaf string) string {
		if v := env(envName); v != "" {
			return filepath.Join(v, leaf)
		}
		return filepath.Join(home, dot, leaf)
	}
	switch kind {
	case sessions.ImportHermes:
		return pick("HERMES_HOME", ".hermes", "state.db")
	case sessions.ImportClaude:
		return pick("CLAUDE_CONFIG_DIR", ".claude", "projects")
	case sessions.ImportCodex:
		return pick("CODEX_HOME", ".codex", "sessions")
	case sessions.ImportGemini:
		if v := env("GEMINI_CLI_HOME"); v != "" {
			home = v
		}
		return filepath.Join(home, ".gemini", "tmp")
	case sessions.ImportOpenCode:
		if v := env("XDG_DATA_HOME"); filepath.IsAbs(v) {
			return filepath.Join(v, "opencode")
		}
		return filepath.Join(home, ".local", "share", "opencode")
	}
	return ""
}

// stillWriting is how long after its last write a source's unfinished
// turn is taken to be running still, to be imported whole once it is done;
// one left longer stopped there (its agent quit or crashed) and is imported
// as it was left. A variable for tests.
var stillWriting = 24 * time.Hour

// writtenLately says whether a source last written at t may still be
// writing (an unknown time may).
func writtenLately(t time.Time) bool { return t.IsZero() || time.Since(t) < stillWriting }

// promptTitleRunes bounds a title made of a session's first prompt: the
// list shows about that much, and the familiar agent's preview is shorter.
const promptTitleRunes = 80

// promptTitle is the title of a session that has none of its own: its first
// prompt's first line, cut at a word near promptTitleRunes.
func promptTitle(prompt string) string {
	t := []rune(sessions.ImportTitle(prompt))
	if len(t) <= promptTitleRunes {
		return string(t)
	}
	cut := promptTitleRunes - 1
	for i := cut; i > promptTitleRunes/2; i-- {
		if t[i] == ' ' {
			cut = i
			break
		}
	}
	return strings.TrimRight(string(t[:cut]), " ,.;:-") + "…"
}
