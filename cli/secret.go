package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"atrium/backend/stack"
	"atrium/backend/tools"
)

// askSecret asks the person at a terminal chat for a variable a skill
// being loaded needs, as the familiar agent's terminal asks: its prompt and
// help, the value typed unseen (the terminal's echo off), kept in the
// profile's .env (and this process's environment). Enter alone skips; so
// does a terminal whose echo cannot be turned off (the value would show).
func (r *runner) askSecret(ctx context.Context, in io.Reader, lines <-chan string, st *stack.Stack, skill string, e tools.SkillEnv) (bool, error) {
	f, ok := in.(*os.File)
	if !ok || st == nil {
		return false, nil
	}
	restore, err := noEcho(int(f.Fd()))
	if err != nil {
		fmt.Fprintf(r.env.Stdout, "the skill %s needs %s, which this terminal cannot be asked unseen: atrium config set %s VALUE keeps it\n", skill, e.Name, e.Name)
		return false, nil
	}
	defer restore()
	what := e.Prompt
	if e.RequiredFor != "" {
		what += " (for " + e.RequiredFor + ")"
	}
	fmt.Fprintf(r.env.Stdout, "🔑 The skill %s needs %s: %s.", skill, e.Name, what)
	if e.Help != "" {
		fmt.Fprintf(r.env.Stdout, " %s", e.Help)
	}
	fmt.Fprint(r.env.Stdout, "\nPaste it (not shown; Enter alone skips): ")
	var value string
	select {
	case value = <-lines: // "" once the input ended: skipped
	case <-ctx.Done():
		fmt.Fprintln(r.env.Stdout)
		return false, context.Cause(ctx)
	}
	fmt.Fprintln(r.env.Stdout) // the Enter the terminal did not echo
	if value = strings.TrimSpace(value); value == "" {
		fmt.Fprintf(r.env.Stdout, "skipped: %s is not set\n", e.Name)
		return false, nil
	}
	if err := st.Home.SetSecret(e.Name, value); err != nil {
		fmt.Fprintf(r.env.Stdout, "%s was not kept: %s\n", e.Name, oneLine(err))
		return false, nil
	}
	fmt.Fprintf(r.env.Stdout, "%s kept in %s\n", e.Name, st.Home.EnvPath())
	return true, nil
}
