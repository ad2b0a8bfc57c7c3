package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/stack"
	"atrium/backend/tools"
)

// memoryCmd shows and edits what the agent remembers: the profile's
// memories/MEMORY.md (its notes) and USER.md (what it keeps about the
// user), the files every new conversation starts with.
func (r *runner) memoryCmd() *cobra.Command {
	c := &cobra.Command{Use: "memory", Short: "What the agent remembers for later conversations: its notes (MEMORY.md) and what it keeps about you (USER.md)"}
	var user bool
	target := func() string {
		if user {
			return tools.TargetUser
		}
		return tools.TargetMemory
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List both files' entries, with each file's budget",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := r.memory()
			if err != nil {
				return err
			}
			var out []tools.MemoryFile
			for _, t := range []string{tools.TargetMemory, tools.TargetUser} {
				f, err := m.File(t)
				if err != nil {
					return apperr.New(apperr.Internal, "%s cannot be read: %v", f.Path, err)
				}
				out = append(out, f)
			}
			return r.print(out, func(w io.Writer) {
				for i, f := range out {
					if i > 0 {
						fmt.Fprintln(w)
					}
					state := ""
					if f.Off {
						state = " (turned off)"
					}
					fmt.Fprintf(w, "%s: %d/%d characters%s\n", f.Path, f.Chars, f.Limit, state)
					if len(f.Entries) == 0 {
						fmt.Fprintln(w, "  (nothing)")
					}
					for _, e := range f.Entries {
						fmt.Fprintf(w, "  - %s\n", e)
					}
				}
			})
		},
	}
	add := &cobra.Command{
		Use:   "add TEXT",
		Short: "Add an entry, as the agent's memory tool would (within the file's budget; text that would steer the model is refused)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.changeMemory(target(), args[0], "added", tools.Memory.Remember)
		},
	}
	forget := &cobra.Command{
		Use:   "forget ENTRY",
		Short: "Remove the entry that is exactly ENTRY (as `memory list` shows it)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.changeMemory(target(), args[0], "forgotten", tools.Memory.Forget)
		},
	}
	for _, sub := range []*cobra.Command{add, forget} {
		sub.Flags().BoolVar(&user, "user", false, "USER.md (what the agent keeps about you) instead of MEMORY.md (its notes)")
	}
	c.AddCommand(list, add, forget)
	return c
}

func (r *runner) changeMemory(target, text, done string, change func(tools.Memory, string, string) error) error {
	m, err := r.memory()
	if err != nil {
		return err
	}
	if err := stack.ChangeMemory(m, change, target, text); err != nil {
		return err
	}
	return r.print(map[string]any{done: text, "target": target, "path": m.Path(target)}, func(w io.Writer) {
		fmt.Fprintf(w, "%s: %s (new conversations start with the file as it is now)\n", done, m.Path(target))
	})
}

// memory is the profile's curated memory as its config.yaml sets it.
func (r *runner) memory() (tools.Memory, error) {
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return tools.Memory{}, err
	}
	return stack.LoadMemory(home)
}
