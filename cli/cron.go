package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"atrium/backend/cron"
	"atrium/backend/stack"
)

func (r *runner) cronCmd() *cobra.Command {
	c := &cobra.Command{Use: "cron", Short: "Prompts run on a schedule, by the process that hosts the profile (the window, atrium serve, atrium gateway run)"}
	var p cron.AddParams
	add := &cobra.Command{
		Use:   "add NAME --schedule \"0 9 * * 1-5\" --prompt TEXT [--tz ZONE] [--deliver telegram:<chat_id>]",
		Short: "Add a job (five cron fields, or @hourly, @daily, @every 2h; the time zone is stored with it)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.Name = args[0]
			return r.withCron(cmd, func(ctx context.Context, st *stack.Stack, s *cron.Service) error {
				j, err := s.Add(ctx, p)
				if err != nil {
					return err
				}
				r.warnDeliver(st, j.Deliver)
				return r.print(j, func(w io.Writer) {
					fmt.Fprintf(w, "added %s: %s (%s); next run %s\n", j.Name, j.Schedule, j.Timezone, nextRun(j))
					if rep, err := st.CronStatus(ctx, s); err == nil && !rep.Running {
						fmt.Fprintln(w, "no process runs the scheduler now: it runs in the window, atrium serve and atrium gateway run")
					}
				})
			})
		},
	}
	add.Flags().StringVar(&p.Schedule, "schedule", "", "when: five cron fields (minute hour day month weekday), @daily, @every 2h, or CRON_TZ=Zone ...")
	add.Flags().StringVar(&p.Prompt, "prompt", "", "what to ask the agent at each run")
	add.Flags().StringVar(&p.Timezone, "tz", "", "IANA time zone of the schedule (default: this machine's zone, stored by name)")
	add.Flags().StringVar(&p.Deliver, "deliver", "", "send the answer to platform:chat_id[:thread_id] through the gateway")
	list := &cobra.Command{
		Use:   "list",
		Short: "The jobs: schedule, zone, next run, last run and its session",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.withCron(cmd, func(ctx context.Context, st *stack.Stack, s *cron.Service) error {
				rep, err := st.CronStatus(ctx, s)
				if err != nil {
					return err
				}
				return r.print(rep, func(w io.Writer) { printCron(w, rep) })
			})
		},
	}
	simple := func(use, short string, fn func(ctx context.Context, s *cron.Service, name string) (any, string, error)) *cobra.Command {
		return &cobra.Command{
			Use:   use + " NAME",
			Short: short,
			Args:  exactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return r.withCron(cmd, func(ctx context.Context, _ *stack.Stack, s *cron.Service) error {
					v, text, err := fn(ctx, s, args[0])
					if err != nil {
						return err
					}
					return r.print(v, func(w io.Writer) { fmt.Fprintln(w, text) })
				})
			},
		}
	}
	remove := simple("remove", "Remove a job (its past sessions stay)", func(ctx context.Context, s *cron.Service, name string) (any, string, error) {
		err := s.Remove(ctx, name)
		return map[string]string{"removed": name}, "removed " + name, err
	})
	pause := simple("pause", "Pause a job", func(ctx context.Context, s *cron.Service, name string) (any, string, error) {
		j, err := s.SetPaused(ctx, name, true)
		return j, "paused " + name, err
	})
	resume := simple("resume", "Resume a job (ticks missed while paused are not run)", func(ctx context.Context, s *cron.Service, name string) (any, string, error) {
		j, err := s.SetPaused(ctx, name, false)
		return j, fmt.Sprintf("resumed %s; next run %s", name, nextRun(j)), err
	})
	run := simple("run", "Run a job now, in this process, and print its answer", func(ctx context.Context, s *cron.Service, name string) (any, string, error) {
		res, err := s.Run(ctx, name)
		text := res.Reply
		if res.Delivered != 0 {
			text += "\n(queued for delivery; the running gateway sends it)"
		}
		return res, text + "\n(session " + res.SessionID + ")", err
	})
	c.AddCommand(add, list, remove, pause, resume, run)
	return c
}

func (r *runner) withCron(cmd *cobra.Command, fn func(ctx context.Context, st *stack.Stack, s *cron.Service) error) error {
	return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
		s, err := st.Cron(stack.ModelFlags{})
		if err != nil {
			return err
		}
		return fn(ctx, st, s)
	})
}

// warnDeliver says when a job delivers to a platform no adapter serves.
func (r *runner) warnDeliver(st *stack.Stack, deliver string) {
	if deliver == "" {
		return
	}
	platform, _, _, err := cron.ParseDeliver(deliver)
	if err != nil {
		return
	}
	var names []string
	g, _ := st.GatewayConfig()
	for _, a := range stack.GatewayAdapters(g) {
		names = append(names, a.Adapter.Platform())
	}
	if !slices.Contains(names, platform) {
		fmt.Fprintf(r.env.Stderr, "atrium: warning: no gateway adapter %q is configured; the answers wait in the outbox until one is\n", platform)
	}
}

func nextRun(j cron.Job) string {
	if j.Paused {
		return "- (paused)"
	}
	if j.NextRun == nil {
		return "-"
	}
	loc := j.NextRun.Location()
	if l, err := loadLocation(j.Timezone); err == nil {
		loc = l
	}
	return j.NextRun.In(loc).Format("2006-01-02 15:04 MST")
}

func printCron(w io.Writer, rep stack.CronReport) {
	if rep.Running {
		fmt.Fprintf(w, "Scheduler running in %s\n", rep.Host)
	} else {
		fmt.Fprintln(w, "Scheduler not running: it runs in the window, atrium serve and atrium gateway run")
	}
	if len(rep.Jobs) == 0 {
		fmt.Fprintln(w, "No jobs. Add one: atrium cron add NAME --schedule \"0 9 * * 1-5\" --prompt TEXT")
		return
	}
	fmt.Fprintln(w, "NAME\tSCHEDULE\tZONE\tNEXT RUN\tLAST RUN\tSTATUS\tRUNS\tDELIVER\tLAST SESSION")
	for _, j := range rep.Jobs {
		last := "-"
		if j.LastRunAt != nil {
			last = fmtTime(*j.LastRunAt)
		}
		status := dash(j.LastStatus)
		if j.LastError != "" {
			status += ": " + clipText(j.LastError, 60)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", j.Name, j.Schedule, j.Timezone, nextRun(j), last, status, j.Runs,
			dash(j.Deliver), dash(j.LastSessionID))
	}
}

func loadLocation(name string) (*time.Location, error) { return time.LoadLocation(name) }
