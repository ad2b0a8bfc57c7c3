package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"atrium/backend/apperr"
	"atrium/backend/approvals"
	"atrium/backend/config"
	"atrium/backend/limits"
	"atrium/backend/plugins"
)

// approvalsCmd manages the standing approvals: the rules of plugin asks a
// person answered "always" (config.yaml's command_allowlist).
func (r *runner) approvalsCmd() *cobra.Command {
	c := &cobra.Command{Use: "approvals", Short: `Plugin approvals: the rules answered "always" (config.yaml's command_allowlist), whether a person is asked, and for how long`}
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
	}, &cobra.Command{
		Use:   "mode [manual|off|smart]",
		Short: "Show, or set, whether a person is asked (manual), a reviewing model decides a flagged command first (smart), or everything asked about runs unasked (off); applies at the next ask everywhere",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				// config.yaml's own check refuses a mode it does not know
				// (nothing is written then).
				if err := r.editApprovals("mode", strings.ToLower(args[0])); err != nil {
					return err
				}
			}
			return r.printPolicy()
		},
	}, &cobra.Command{
		Use:   "timeout [SECONDS]",
		Short: "Show, or set, how long a person has to answer (0: 5 minutes in the window and the dashboard, no limit at a terminal; at most 3600)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				secs, err := strconv.ParseFloat(args[0], 64)
				if err != nil {
					return apperr.New(apperr.Invalid, "the timeout is a number of seconds, not %s", limits.Echo(args[0]))
				}
				// config.yaml's own check refuses one out of its bounds.
				var v any = secs
				if secs == 0 {
					v = nil // the default: the key goes
				}
				if err := r.editApprovals("timeout", v); err != nil {
					return err
				}
			}
			return r.printPolicy()
		},
	})
	return c
}

// editApprovals sets approvals.key in the profile's config.yaml (nil
// removes it); every process of the profile follows at its next ask.
func (r *runner) editApprovals(key string, value any) error {
	s, err := r.standing()
	if err != nil {
		return err
	}
	return plugins.EditConfig(s.Path(), plugins.ConfigEdit{Section: "approvals", Key: key, Value: value})
}

// printPolicy prints the approvals block as config.yaml has it now.
func (r *runner) printPolicy() error {
	s, err := r.standing()
	if err != nil {
		return err
	}
	cfg, _, err := config.Load(s.Path())
	if err != nil {
		return err
	}
	mode := cfg.ApprovalsMode()
	reviewer, reviewerTimeout := cfg.ApprovalGuard()
	out := map[string]any{"mode": mode, "timeout_seconds": cfg.Approvals.Timeout, "path": s.Path()}
	if mode == config.ApproveSmart {
		out["reviewer_model"], out["reviewer_timeout_seconds"], out["smart_policy"] = reviewer, reviewerTimeout.Seconds(), strings.TrimSpace(cfg.Approvals.SmartPolicy)
		out["reviewer_provider"], out["reviewer_base_url"] = cfg.Auxiliary.Approval.Provider, cfg.Auxiliary.Approval.BaseURL
	}
	return r.print(out, func(w io.Writer) {
		switch mode {
		case config.ApproveOff:
			fmt.Fprintln(w, "mode: off (every call a plugin asks about runs without asking; a block still blocks)")
		case config.ApproveSmart:
			if reviewer == "" {
				reviewer = "the main model"
			}
			reviewer += cfg.Auxiliary.Approval.Where()
			fmt.Fprintf(w, "mode: smart (a terminal command that could destroy data is first put to %s, auxiliary.approval.model, which lets it run, blocks it, or leaves it to a person within %gs; a plugin's ask is always a person's)\n",
				reviewer, reviewerTimeout.Seconds())
			if p := strings.TrimSpace(cfg.Approvals.SmartPolicy); p != "" {
				fmt.Fprintf(w, "smart_policy: %s\n", p)
			}
		default:
			fmt.Fprintln(w, "mode: manual (a person is asked)")
		}
		if cfg.Approvals.Timeout > 0 {
			fmt.Fprintf(w, "timeout: %gs\n", cfg.Approvals.Timeout)
		} else {
			fmt.Fprintln(w, "timeout: default (5 minutes in the window and the dashboard, no limit at a terminal)")
		}
	})
}

func (r *runner) standing() (*approvals.Standing, error) {
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return nil, err
	}
	return approvals.New(home), nil
}
