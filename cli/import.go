package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/imports"
	"atrium/backend/sessions"
	"atrium/backend/stack"
)

func (r *runner) importCmd() *cobra.Command {
	var dry, all bool
	c := &cobra.Command{
		Use:   "import hermes|claude-code|codex|gemini-cli|opencode [PATH] [--dry-run]",
		Short: "Import the sessions of another agent: the familiar Python agent's state.db, Claude Code's, Codex's, Gemini CLI's or OpenCode's history",
		Long: `Import the sessions another agent kept, with their messages, times, titles and lineage.

  hermes       the familiar Python agent's store: PATH is its state.db or its home
               (default $HERMES_HOME/state.db, else ~/.hermes/state.db)
  claude-code  Claude Code's transcripts: PATH is the projects folder, one project's
               folder or one .jsonl file (default $CLAUDE_CONFIG_DIR/projects, else
               ~/.claude/projects)
  codex        Codex's rollouts: PATH is the sessions folder, any folder under it or
               one .jsonl file (default $CODEX_HOME/sessions, else ~/.codex/sessions)
  gemini-cli   Gemini CLI's conversations: PATH is its tmp folder, one project's
               folder, its chats folder or one session file (default
               $GEMINI_CLI_HOME/.gemini/tmp, else ~/.gemini/tmp)
  opencode     OpenCode's history: PATH is its data folder, its opencode.db or its
               storage folder (default $XDG_DATA_HOME/opencode, else
               ~/.local/share/opencode)

The other agent's files are only read. Run it again at any time: a session
imported before gets only the messages added to it since, and is never
copied twice; one whose messages changed there since (a rewind), or that was
continued here, is left as it is and said to be so (exit 4). An import fires
no hook: it is history, not activity.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageError{fmt.Errorf("%s takes a kind (hermes, claude-code, codex, gemini-cli or opencode) and at most one path (see --help)", cmd.CommandPath())}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			kind := args[0]
			switch kind {
			case "claude":
				kind = sessions.ImportClaude
			case "gemini":
				kind = sessions.ImportGemini
			}
			path := ""
			if len(args) == 2 {
				path = args[1]
			}
			home, _ := os.UserHomeDir()
			// A kind or a path that cannot be read is said before the store
			// is opened (or made).
			if _, err := imports.Open(kind, path, os.Getenv, home, nil); err != nil {
				return err
			}
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				rep, err := imports.Run(ctx, st.Sessions, kind, path, os.Getenv, home, imports.RunOptions{DryRun: dry, Progress: r.counter("importing"),
					Warn: func(p imports.Problem) {
						if !r.g.json {
							fmt.Fprintf(r.env.Stderr, "atrium: warning: skipped %s\n", p)
						}
					}})
				if err != nil {
					return err
				}
				err = r.reportImport(rep, all)
				if kind == sessions.ImportHermes && !r.g.json {
					r.familiarFiles(rep.Path, st.Home)
				}
				return err
			})
		},
	}
	c.Flags().BoolVar(&dry, "dry-run", false, "say what would be imported; write nothing")
	c.Flags().BoolVar(&all, "all", false, "list every session, not only those with something to say")
	return c
}

// familiarFiles says, after an import from the familiar agent, which of
// its files beside its store Atrium reads as they are (its .env, its
// config.yaml, its memory's MEMORY.md and USER.md), where the profile has
// none yet: copying them brings the keys, the settings and what the agent
// remembers along. Nothing is copied: they are the person's.
func (r *runner) familiarFiles(store string, home config.Home) {
	dir := store
	if fi, err := os.Stat(store); err == nil && !fi.IsDir() {
		dir = filepath.Dir(store)
	}
	memories := filepath.Base(home.MemoriesDir())
	for _, f := range []struct{ name, what string }{{".env", "keys"}, {"config.yaml", "settings"},
		{filepath.Join(memories, "MEMORY.md"), "notes (its memory)"}, {filepath.Join(memories, "USER.md"), "profile of you (its memory)"}} {
		src, dst := filepath.Join(dir, f.name), filepath.Join(home.Dir, f.name)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		mkdir := ""
		if _, err := os.Stat(filepath.Dir(dst)); err != nil {
			mkdir = "mkdir -p " + shellQuote(filepath.Dir(dst)) + " && "
		}
		fmt.Fprintf(r.env.Stdout, "note: %s holds that agent's %s, which Atrium reads as they are: %scp -p %s %s\n", src, f.what, mkdir, shellQuote(src), shellQuote(dst))
	}
}

// shellQuote is s as one word for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-+:@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// counter prints a running count on a terminal's stderr, when the total is
// not known ahead; nil when stderr is no terminal.
func (r *runner) counter(verb string) func(n int, done bool) {
	if r.progress(verb) == nil {
		return nil
	}
	return func(n int, done bool) {
		if done {
			fmt.Fprint(r.env.Stderr, "\r\033[K")
			return
		}
		fmt.Fprintf(r.env.Stderr, "\r%s: %d session(s) read", verb, n)
	}
}

func (r *runner) reportImport(rep imports.Report, all bool) error {
	err := r.print(rep, func(w io.Writer) {
		verb := "imported"
		if rep.DryRun {
			verb = "would import"
		}
		var parts []string
		for _, st := range []string{sessions.ImportStatusImported, sessions.ImportStatusUpdated, sessions.ImportStatusUnchanged,
			sessions.ImportStatusSkipped, sessions.ImportStatusConflict} {
			if n := rep.Counts[st]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, st))
			}
		}
		if len(parts) == 0 {
			parts = append(parts, "no session found")
		}
		fmt.Fprintf(w, "%s from %s %s: %s; %d message(s) %s\n", verb, rep.Kind, rep.Path, strings.Join(parts, ", "), rep.Messages,
			map[bool]string{true: "to add", false: "added"}[rep.DryRun])
		if len(rep.Problems) > 0 {
			fmt.Fprintf(w, "%d thing(s) could not be read and were skipped (see the warnings above)\n", len(rep.Problems))
		}
		header := false
		for _, o := range rep.Outcomes {
			if !all && o.Note == "" && o.Status != sessions.ImportStatusConflict {
				continue
			}
			if !header {
				fmt.Fprintln(w, "ID\tSTATUS\tMSGS\tTITLE\tNOTE")
				header = true
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", o.ID, o.Status, o.Messages, clip(o.Title, 40), o.Note)
		}
	})
	if err != nil {
		return err
	}
	if n := rep.Counts[sessions.ImportStatusConflict]; n > 0 {
		return apperr.New(apperr.Conflict, "%d session(s) not imported: their id belongs to a session of this store that was not imported from them", n)
	}
	return nil
}
