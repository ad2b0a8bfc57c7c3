package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"atrium/backend/sessions"
	"atrium/backend/stack"
)

// devCmd holds tools for demos, end-to-end tests and benchmarks; hidden from
// the help of people who only use Atrium.
func (r *runner) devCmd() *cobra.Command {
	c := &cobra.Command{Use: "dev", Short: "Developer tools (seed a demo store)", Hidden: true}
	var p sessions.SeedParams
	var span time.Duration
	seed := &cobra.Command{
		Use:   "seed",
		Short: "Add synthetic sessions with messages (fires no hooks)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				p.Span = span
				start := time.Now()
				ids, err := st.Sessions.Seed(ctx, p, r.progress("seeding"))
				if err != nil {
					return err
				}
				took := time.Since(start)
				return r.print(map[string]any{"created": len(ids), "ids": ids, "seconds": took.Seconds()}, func(w io.Writer) {
					fmt.Fprintf(w, "created %d sessions in %s\n", len(ids), took.Round(time.Millisecond))
				})
			})
		},
	}
	seed.Flags().IntVar(&p.Count, "sessions", 100, "how many sessions")
	seed.Flags().IntVar(&p.Messages, "messages", 4, "messages per session")
	seed.Flags().DurationVar(&span, "span", 90*24*time.Hour, "spread the sessions' last activity over this much time before now")
	seed.Flags().StringVar(&p.Prefix, "title", "Seeded session", "title prefix")
	c.AddCommand(seed)
	return c
}
