package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"atrium/backend/stack"
)

// bytesHuman is a size for people: 12.3 MB.
func bytesHuman(n int64) string {
	units := []string{"B", "kB", "MB", "GB", "TB"}
	f, i := float64(n), 0
	for f >= 1000 && i < len(units)-1 {
		f /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}

func (r *runner) storageCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "storage",
		Short: "What the store holds (size, sessions and messages per source and age, the trash) and what retention would remove next",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				rep, err := st.Maintenance.Storage(ctx)
				if err != nil {
					return err
				}
				return r.print(rep, func(w io.Writer) {
					fmt.Fprintf(w, "store\t%s\nsize\t%s (+ %s write-ahead log); %s free inside (atrium storage vacuum gives it back)\n",
						rep.Path, bytesHuman(rep.DBBytes), bytesHuman(rep.WALBytes), bytesHuman(rep.FreeBytes))
					fmt.Fprintf(w, "sessions\t%d, with %d messages\n\nSOURCE\tSESSIONS\tMESSAGES\n", rep.Stats.Sessions, rep.Stats.Messages)
					for _, b := range rep.Stats.BySource {
						fmt.Fprintf(w, "%s\t%d\t%d\n", b.Name, b.Sessions, b.Messages)
					}
					fmt.Fprintln(w, "\nLAST ACTIVE\tSESSIONS\tMESSAGES")
					for _, b := range rep.Stats.ByAge {
						fmt.Fprintf(w, "%s\t%d\t%d\n", b.Name, b.Sessions, b.Messages)
					}
					t := rep.Trash
					fmt.Fprintf(w, "\ntrash\t%d session(s), %d message(s), %s of text", t.Sessions, t.Messages, bytesHuman(t.Bytes))
					if t.NextPurge != nil {
						fmt.Fprintf(w, "; the oldest go for good on %s", fmtTime(*t.NextPurge))
					}
					fmt.Fprintln(w)
					ret := rep.Retention
					p := ret.Preview
					state := "off (sessions.auto_prune: false); `atrium sessions prune` runs it by hand"
					if ret.AutoPrune {
						state = "on, daily"
					}
					fmt.Fprintf(w, "retention\t%s: ended, unpinned sessions inactive for more than %d days\n", state, ret.Days)
					switch {
					case p.Sessions > 0:
						where := "deleted"
						if p.ToTrash {
							where = "moved to the trash"
						}
						fmt.Fprintf(w, "next prune\t%d session(s) with %d message(s) would be %s now, first: %s\n", p.Sessions, p.Messages, where,
							strings.Join(p.Titles, "; "))
					case p.NextAt != nil:
						fmt.Fprintf(w, "next prune\tnothing now; the next session qualifies on %s\n", fmtTime(*p.NextAt))
					default:
						fmt.Fprintln(w, "next prune\tnothing qualifies now")
					}
					if ret.NeedsConfirmation {
						fmt.Fprintln(w, "\tthe first automatic prune waits until you confirm it: atrium storage confirm-retention")
					}
				})
			})
		},
	}
	c.AddCommand(&cobra.Command{
		Use:   "vacuum",
		Short: "Give free space inside the store back to the file system (VACUUM, or incremental_vacuum) and say how much",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				rep, err := st.Maintenance.Vacuum(ctx)
				if err != nil {
					return err
				}
				return r.print(rep, func(w io.Writer) {
					fmt.Fprintf(w, "%s: %s → %s, %s freed in %s\n", rep.Mode, bytesHuman(rep.BeforeBytes), bytesHuman(rep.AfterBytes),
						bytesHuman(rep.FreedBytes), rep.Took.Round(1e6))
				})
			})
		},
	}, &cobra.Command{
		Use:   "confirm-retention",
		Short: "Say you have seen the retention preview (atrium storage) and let automatic pruning run; it runs now",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				res, err := st.Maintenance.ConfirmRetention(ctx)
				if err != nil {
					return err
				}
				return r.print(map[string]any{"confirmed": true, "prune": res}, func(w io.Writer) {
					if res == nil {
						fmt.Fprintln(w, "confirmed; automatic pruning is off (sessions.auto_prune), so nothing ran")
						return
					}
					fmt.Fprintln(w, "confirmed; "+describeResult(*res))
				})
			})
		},
	})
	return c
}
