package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/stack"
	"atrium/backend/tools"
)

// skillsCmd lists and shows the profile's skills: the folders under
// skills/ (and skills.external_dirs) whose SKILL.md tells the agent how to
// do one kind of task.
func (r *runner) skillsCmd() *cobra.Command {
	c := &cobra.Command{Use: "skills", Short: "The agent's skills: how it does one kind of task each (the profile's skills/ folder)"}
	var platform string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the skills, which are not offered (disabled, or for another machine), and the keys they still need",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := r.skills()
			if err != nil {
				return err
			}
			infos, problems := s.Listing(platform)
			return r.print(map[string]any{"folder": s.Dir, "skills": infos, "problems": problems}, func(w io.Writer) {
				fmt.Fprintf(w, "%s: %d skill(s)\n", s.Dir, len(infos))
				for _, sk := range infos {
					name := sk.Name
					if sk.Category != "" {
						name = sk.Category + "/" + sk.Name
					}
					fmt.Fprintf(w, "  /%s  %s", name, sk.Description)
					if sk.External {
						fmt.Fprintf(w, "  [shared: %s]", sk.Path)
					}
					if sk.NotOffered != "" {
						fmt.Fprintf(w, "  (not offered: %s)", sk.NotOffered)
					}
					if len(sk.Missing) > 0 {
						fmt.Fprintf(w, "  (needs %s: atrium config set NAME VALUE keeps one in the profile's .env)", strings.Join(sk.Missing, ", "))
					}
					fmt.Fprintln(w)
				}
				for _, p := range problems {
					fmt.Fprintf(w, "! %s\n", p)
				}
			})
		},
	}
	show := &cobra.Command{
		Use:   "show NAME [FILE]",
		Short: "Print a skill's SKILL.md (or one of the files beside it), as the agent loads it",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := r.skills()
			if err != nil {
				return err
			}
			file := ""
			if len(args) == 2 {
				file = args[1]
			}
			out := s.View(args[0], file, platform)
			if out["success"] != true {
				return apperr.New(apperr.NotFound, "%v", out["error"])
			}
			return r.print(out, func(w io.Writer) {
				fmt.Fprintln(w, out["content"])
				if linked, ok := out["linked_files"].(map[string][]string); ok && len(linked) > 0 && file == "" {
					fmt.Fprintln(w, "\nfiles beside it:")
					for _, kind := range []string{"references", "templates", "scripts", "assets"} {
						for _, f := range linked[kind] {
							fmt.Fprintf(w, "  %s\n", f)
						}
					}
				}
			})
		},
	}
	for _, sub := range []*cobra.Command{list, show} {
		sub.Flags().StringVar(&platform, "platform", "cli", "the platform whose offer to show (cli, telegram, discord, ...)")
	}
	c.AddCommand(list, show)
	return c
}

// skills is the profile's skills as its config.yaml sets them.
func (r *runner) skills() (tools.Skills, error) {
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return tools.Skills{}, err
	}
	return stack.LoadSkills(home)
}
