package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"atrium/backend/apperr"
	"atrium/backend/gateway"
	"atrium/backend/stack"
)

// pairingCmd is the familiar `hermes pairing`: the people a chat platform's
// bot gave a pairing code, waiting for the owner; and those it let in.
func (r *runner) pairingCmd() *cobra.Command {
	c := &cobra.Command{Use: "pairing", Short: "DM pairing: approve the code a person not let in was given, list who waits and who is paired, revoke"}
	list := &cobra.Command{
		Use:   "list",
		Short: "The people waiting for their code to be approved (codes are never shown), and those pairing let in",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				store := gateway.NewStore(st.DB)
				waiting, err := store.PairingRequests(ctx)
				if err != nil {
					return err
				}
				paired, err := store.PairedUsers(ctx)
				if err != nil {
					return err
				}
				out := struct {
					Pending  []gateway.PairingRequest `json:"pending"`
					Approved []gateway.Paired         `json:"approved"`
				}{nonNil(waiting), nonNil(paired)}
				return r.print(out, func(w io.Writer) { printPairing(w, waiting, paired) })
			})
		},
	}
	approve := &cobra.Command{
		Use:   "approve PLATFORM CODE",
		Short: "Let in the person PLATFORM gave CODE (5 codes in a row that match nobody lock a platform's approvals for an hour)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				p, err := gateway.NewStore(st.DB).ApprovePairingCode(ctx, args[0], args[1])
				if err != nil {
					return err
				}
				return r.print(p, func(w io.Writer) {
					fmt.Fprintf(w, "Approved: %s (%s) may now talk to the agent on %s.\n", dash(p.UserName), p.UserID, p.Platform)
				})
			})
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke PLATFORM USER_ID",
		Short: "Let out a person pairing let in",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				gone, err := gateway.NewStore(st.DB).RevokePairing(ctx, args[0], args[1])
				if err != nil {
					return err
				}
				if !gone {
					return apperr.New(apperr.NotFound, "%s is not paired on %s (atrium pairing list shows who is)", args[1], args[0])
				}
				return r.print(map[string]any{"platform": args[0], "user_id": args[1], "revoked": true}, func(w io.Writer) {
					fmt.Fprintf(w, "Revoked: %s may no longer talk to the agent on %s (unless a list lets them in).\n", args[1], args[0])
				})
			})
		},
	}
	clearPending := r.platformCountCmd("clear-pending [PLATFORM]", "Drop the requests waiting (all platforms, or one)", "cleared",
		"%d request(s) dropped\n", (*gateway.Store).ClearPairingRequests)
	c.AddCommand(list, approve, revoke, clearPending)
	return c
}

func printPairing(w io.Writer, waiting []gateway.PairingRequest, paired []gateway.Paired) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(waiting) == 0 {
		fmt.Fprintln(tw, "Nobody is waiting for a pairing code to be approved.")
	} else {
		fmt.Fprintln(tw, "WAITING\tPLATFORM\tUSER ID\tNAME\tASKED")
		for _, q := range waiting {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s ago\n", q.ID, q.Platform, q.UserID, dash(q.UserName), time.Since(q.CreatedAt).Round(time.Minute))
		}
	}
	if len(paired) > 0 {
		fmt.Fprintln(tw, "\nPAIRED\tPLATFORM\tUSER ID\tNAME\tSINCE")
		for _, p := range paired {
			fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s\n", p.Platform, p.UserID, dash(p.UserName), p.ApprovedAt.Local().Format(time.DateTime))
		}
	}
	_ = tw.Flush()
}
