package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"atrium/backend/apperr"
	"atrium/backend/approvals"
	"atrium/backend/config"
)

// approvalsCmd manages the standing approvals: the rules of plugin asks a
// person answered "always" (config.yaml's command_allowlist).
func (r *runner) approvalsCmd() *cobra.Command {
	c := &cobra.Command{Use: "approvals", Short: `The plugin approvals answered "always" (config.yaml's command_allowlist): list, allow, revoke`}
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the rules that run without asking, in every conversation and scheduled run of the profile",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := r.standing()
			if err != nil {
				return err
			}
			rules, err := s.List()
			if err != nil {
				return err
			}
			return r.print(map[string]any{"rules": rules, "path": s.Path()}, func(w io.Writer) {
				if len(rules) == 0 {
					fmt.Fprintf(w, "no standing approvals in %s\n", s.Path())
				}
				for _, k := range rules {
					fmt.Fprintln(w, k)
				}
			})
		},
	}, &cobra.Command{
		Use:   "allow RULE",
		Short: "Allow a rule from now on (plugin_rule:<rule_key or tool>), as answering \"always\" does: scheduled runs included",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := r.standing()
			if err != nil {
				return err
			}
			if err := s.Allow(args[0]); err != nil {
				return err
			}
			return r.print(map[string]any{"allowed": args[0]}, func(w io.Writer) {
				fmt.Fprintf(w, "allowed %s from now on (%s)\n", args[0], s.Path())
			})
		},
	}, &cobra.Command{
		Use:   "revoke RULE",
		Short: "Withdraw a standing approval: the next ask of the rule, in any process of the profile, asks again",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := r.standing()
			if err != nil {
				return err
			}
			found, err := s.Revoke(args[0])
			if err != nil {
				return err
			}
			if !found {
				return apperr.New(apperr.NotFound, "%s is not a standing approval in %s", args[0], s.Path())
			}
			return r.print(map[string]any{"revoked": args[0]}, func(w io.Writer) {
				fmt.Fprintf(w, "revoked %s; it is asked again from its next call\n", args[0])
			})
		},
	})
	return c
}

func (r *runner) standing() (*approvals.Standing, error) {
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return nil, err
	}
	return approvals.New(home), nil
}
