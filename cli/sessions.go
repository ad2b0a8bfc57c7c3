package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
	"atrium/backend/receipts"
	"atrium/backend/sessions"
	"atrium/backend/stack"
)

func (r *runner) sessionsCmd() *cobra.Command {
	c := &cobra.Command{Use: "sessions", Short: "Create, list, search, delete and archive sessions"}
	c.AddCommand(r.createCmd(), r.listCmd(), r.showCmd(), r.searchCmd(), r.endCmd(), r.lineageCmd(), r.pinCmd(),
		r.deleteCmd(), r.archiveCmd(true), r.archiveCmd(false), r.archiveIdleCmd(),
		r.sweepCmd("sweep-empty", "Delete ended, unarchived sessions that have no messages (fires empty_sweep)",
			func(ctx context.Context, st *stack.Stack, p sessions.Progress) (sessions.Result, error) {
				return st.Sessions.SweepEmpty(ctx, p)
			}),
		r.sweepCmd("prune-ghosts", "Delete rows with no title and no messages, started over 24 h ago, never ended (fires ghost_prune)",
			func(ctx context.Context, st *stack.Stack, p sessions.Progress) (sessions.Result, error) {
				return st.Sessions.PruneGhosts(ctx, p)
			}),
		r.pruneCmd(), r.moveCmd(), r.repairCmd())
	return c
}

func (r *runner) createCmd() *cobra.Command {
	var p sessions.CreateParams
	c := &cobra.Command{
		Use:   "create",
		Short: "Start a session",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				s, err := st.Sessions.Create(ctx, p)
				if err != nil {
					return err
				}
				return r.print(s, func(w io.Writer) { fmt.Fprintln(w, s.ID) })
			})
		},
	}
	f := c.Flags()
	f.StringVar(&p.Title, "title", "", "title")
	f.StringVar(&p.Source, "source", "cli", "source: "+strings.Join(sessions.Sources, ", "))
	f.StringVar(&p.ParentID, "parent", "", "parent session id")
	f.StringVar(&p.Relation, "relation", "", "relation to the parent: delegate, branch or compression")
	f.StringVar(&p.ID, "id", "", "use this id instead of a new UUIDv7")
	f.BoolVar(&p.Pinned, "pinned", false, "pin it (spared by pruning and idle archiving)")
	return c
}

func sessionTable(w io.Writer, rows []sessions.Session) {
	fmt.Fprintln(w, "ID\tTITLE\tSOURCE\tLAST ACTIVITY\tMSGS\tSTATE")
	for _, s := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\n", s.ID, clip(s.Title, 40), s.Source, fmtTime(s.LastActivityAt.Time), s.MessageCount, state(s))
	}
}

func state(s sessions.Session) string {
	var parts []string
	if s.Ended() {
		parts = append(parts, "ended")
	} else {
		parts = append(parts, "live")
	}
	if s.Archived {
		parts = append(parts, "archived")
	}
	if s.Pinned {
		parts = append(parts, "pinned")
	}
	return strings.Join(parts, ",")
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func (r *runner) listCmd() *cobra.Command {
	var archived bool
	var source, ofProfile, cursor string
	var limit int
	c := &cobra.Command{
		Use:   "list",
		Short: "List sessions, newest activity first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := sessions.Filter{Archived: &archived, Limit: limit, Cursor: cursor}
			if cmd.Flags().Changed("source") {
				f.Source = &source
			}
			if cmd.Flags().Changed("of-profile") {
				f.Profile = &ofProfile
			}
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				page, err := st.Sessions.List(ctx, f)
				if err != nil {
					return err
				}
				return r.print(page, func(w io.Writer) {
					sessionTable(w, page.Sessions)
					if page.Next != "" {
						fmt.Fprintf(w, "more: --cursor %s\n", page.Next)
					}
				})
			})
		},
	}
	fl := c.Flags()
	fl.BoolVar(&archived, "archived", false, "list archived sessions instead of active ones")
	fl.StringVar(&source, "source", "", "only this source")
	fl.StringVar(&ofProfile, "of-profile", "", "only sessions owned by this profile")
	fl.IntVar(&limit, "limit", 50, "page size (at most 1000)")
	fl.StringVar(&cursor, "cursor", "", "continue after a previous page")
	return c
}

func (r *runner) showCmd() *cobra.Command {
	var withMessages bool
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show one session",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				s, err := st.Sessions.Get(ctx, args[0])
				if err != nil {
					return err
				}
				var msgs []sessions.Message
				if withMessages {
					if msgs, err = st.Sessions.Messages(ctx, s.ID, false); err != nil {
						return err
					}
				}
				var v any = s
				if withMessages {
					v = struct {
						sessions.Session
						Messages []sessions.Message `json:"messages"`
					}{s, msgs}
				}
				return r.print(v, func(w io.Writer) {
					parent := "-"
					if s.ParentSessionID != nil {
						parent = *s.ParentSessionID + " (" + s.Relation + ")"
					}
					fmt.Fprintf(w, "id\t%s\ntitle\t%s\nsource\t%s\nprofile\t%s\nparent\t%s\nstarted\t%s\nlast activity\t%s\nstate\t%s\nmessages\t%d\ntokens\t%d\n",
						s.ID, s.Title, s.Source, s.Profile, parent, fmtTime(s.StartedAt.Time), fmtTime(s.LastActivityAt.Time), state(s), s.MessageCount, s.TokenCount)
					for _, m := range msgs {
						fmt.Fprintf(w, "[%s]\t%s\n", m.Role, clip(m.Content, 100))
					}
				})
			})
		},
	}
	c.Flags().BoolVar(&withMessages, "messages", false, "include the transcript")
	return c
}

func (r *runner) searchCmd() *cobra.Command {
	var limit int
	c := &cobra.Command{
		Use:   "search QUERY",
		Short: "Full-text search over titles and messages",
		Args:  minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				hits, err := st.Sessions.Search(ctx, strings.Join(args, " "), sessions.SearchOptions{Limit: limit})
				if err != nil {
					return err
				}
				return r.print(hits, func(w io.Writer) {
					fmt.Fprintln(w, "ID\tTITLE\tMATCH")
					for _, h := range hits {
						fmt.Fprintf(w, "%s\t%s\t%s\n", h.Session.ID, clip(h.Session.Title, 30), clip(strings.ReplaceAll(h.Snippet, "\n", " "), 80))
					}
				})
			})
		},
	}
	c.Flags().IntVar(&limit, "limit", 20, "sessions to return")
	return c
}

func (r *runner) endCmd() *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:   "end ID",
		Short: "End a session",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				s, changed, err := st.Sessions.End(ctx, args[0], reason)
				if err != nil {
					return err
				}
				return r.print(map[string]any{"session": s, "changed": changed}, func(w io.Writer) {
					if changed {
						fmt.Fprintf(w, "ended %s\n", s.ID)
					} else {
						fmt.Fprintf(w, "%s had already ended\n", s.ID)
					}
				})
			})
		},
	}
	c.Flags().StringVar(&reason, "reason", "user", "end reason")
	return c
}

func (r *runner) lineageCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "lineage ID",
		Short: "Show the compression chain of a session, root to tip",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				chain, err := st.Sessions.Lineage(ctx, args[0])
				if err != nil {
					return err
				}
				return r.print(chain, func(w io.Writer) { sessionTable(w, chain) })
			})
		},
	}
}

func (r *runner) pinCmd() *cobra.Command {
	var off bool
	c := &cobra.Command{
		Use:   "pin ID",
		Short: "Pin a session (spared by pruning and idle archiving); --off unpins",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				s, err := st.Sessions.SetPinned(ctx, args[0], !off)
				if err != nil {
					return err
				}
				return r.print(s, func(w io.Writer) { fmt.Fprintf(w, "%s\t%s\n", s.ID, state(s)) })
			})
		},
	}
	c.Flags().BoolVar(&off, "off", false, "unpin")
	return c
}

// printResult prints an operation's result and turns per-id failures into a
// non-zero exit after the result was shown.
func (r *runner) printResult(res sessions.Result, replayed bool, requestID string) error {
	var v any = res
	if requestID != "" {
		v = receipts.Receipt{RequestID: requestID, Op: res.Op, Result: res, Replayed: replayed}
	}
	err := r.print(v, func(w io.Writer) {
		if replayed {
			fmt.Fprintf(w, "request %s was already applied; its receipt:\n", requestID)
		}
		verb := map[string]string{"delete": "deleted", "archive": "archived", "unarchive": "unarchived", "move": "moved"}[res.Op]
		if !res.Changed {
			fmt.Fprintln(w, "nothing changed")
		} else {
			fmt.Fprintf(w, "%s %d session(s)\n", verb, len(res.AffectedIDs))
		}
		for _, o := range res.Outcomes {
			if o.Error != "" {
				fmt.Fprintf(w, "%s\t%s\t%s\n", o.ID, o.Status, o.Error)
			} else {
				fmt.Fprintf(w, "%s\t%s\n", o.ID, o.Status)
			}
		}
	})
	if err != nil {
		return err
	}
	missing := 0
	for _, o := range res.Outcomes {
		if o.Status == sessions.OutcomeNotFound {
			missing++
		}
	}
	if missing > 0 {
		return apperr.New(apperr.NotFound, "%d of %d requested session(s) not found", missing, len(res.Outcomes))
	}
	return nil
}

func (r *runner) deleteCmd() *cobra.Command {
	var requestID string
	var ifEmpty bool
	c := &cobra.Command{
		Use:   "delete ID...",
		Short: "Delete sessions (with their compression chains and delegate children); fires on_session_delete once",
		Args:  minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ifEmpty && (len(args) != 1 || requestID != "") {
				return usageError{fmt.Errorf("--if-empty takes exactly one session id and no --request-id")}
			}
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				switch {
				case ifEmpty:
					res, err := st.Sessions.DeleteCurrent(ctx, args[0], true)
					if err != nil {
						return err
					}
					return r.printResult(res, false, "")
				case requestID != "":
					rc, err := st.Receipts.Apply(ctx, receipts.Request{RequestID: requestID, Op: receipts.OpDelete, SessionIDs: args}, r.progress("deleting"))
					if err != nil {
						return err
					}
					return r.printResult(rc.Result, rc.Replayed, requestID)
				}
				res, err := st.Sessions.Delete(ctx, args, r.progress("deleting"))
				if err != nil {
					return err
				}
				return r.printResult(res, false, "")
			})
		},
	}
	c.Flags().StringVar(&requestID, "request-id", "", "go through the idempotent receipt path with this request id (as the desktop does)")
	c.Flags().BoolVar(&ifEmpty, "if-empty", false, "delete only if the session has no messages and no children")
	return c
}

func (r *runner) archiveCmd(archive bool) *cobra.Command {
	var requestID string
	use, short, op := "archive ID...", "Archive sessions with their compression lineage; fires on_session_delete (archive) for real transitions", receipts.OpArchive
	if !archive {
		use, short, op = "unarchive ID...", "Unarchive sessions with their compression lineage (fires nothing)", receipts.OpUnarchive
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				if requestID != "" {
					rc, err := st.Receipts.Apply(ctx, receipts.Request{RequestID: requestID, Op: op, SessionIDs: args}, nil)
					if err != nil {
						return err
					}
					return r.printResult(rc.Result, rc.Replayed, requestID)
				}
				var res sessions.Result
				var err error
				if archive {
					res, err = st.Sessions.Archive(ctx, args)
				} else {
					res, err = st.Sessions.Unarchive(ctx, args)
				}
				if err != nil {
					return err
				}
				return r.printResult(res, false, "")
			})
		},
	}
	c.Flags().StringVar(&requestID, "request-id", "", "go through the idempotent receipt path with this request id")
	return c
}

func (r *runner) archiveIdleCmd() *cobra.Command {
	var days int
	c := &cobra.Command{
		Use:   "archive-idle",
		Short: "Archive, silently, unpinned sessions idle for more than --idle-days",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				if !cmd.Flags().Changed("idle-days") {
					days = st.Config.Sessions.ArchiveIdleDays
				}
				if days <= 0 {
					return apperr.New(apperr.Invalid, "give --idle-days N (or set sessions.archive_idle_days)")
				}
				res, err := st.Sessions.ArchiveIdle(ctx, days)
				if err != nil {
					return apperr.Wrap(apperr.Invalid, err, "archive-idle")
				}
				return r.printResult(res, false, "")
			})
		},
	}
	c.Flags().IntVar(&days, "idle-days", 0, "idle for more than this many days")
	return c
}

func (r *runner) sweepCmd(use, short string, run func(context.Context, *stack.Stack, sessions.Progress) (sessions.Result, error)) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				res, err := run(ctx, st, r.progress("deleting"))
				if err != nil {
					return err
				}
				return r.printResult(res, false, "")
			})
		},
	}
}

func (r *runner) pruneCmd() *cobra.Command {
	var days int
	c := &cobra.Command{
		Use:   "prune",
		Short: "Retention: delete ended sessions idle for more than --days (default sessions.retention_days, 90); pinned spared",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				if !cmd.Flags().Changed("days") {
					days = st.Config.RetentionDays()
				}
				if days <= 0 {
					return apperr.New(apperr.Invalid, "--days must be positive")
				}
				res, err := st.Sessions.Prune(ctx, days, r.progress("pruning"))
				if err != nil {
					return err
				}
				return r.printResult(res, false, "")
			})
		},
	}
	c.Flags().IntVar(&days, "days", 0, "retention in days")
	return c
}

func (r *runner) moveCmd() *cobra.Command {
	var to string
	c := &cobra.Command{
		Use:   "move ID... --to-profile P",
		Short: "Move sessions (with lineage and messages) to another profile; fires profile_repair here",
		Args:  minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usageError{fmt.Errorf("--to-profile is required")}
			}
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				res, err := st.Sessions.Move(ctx, args, to, st.Resolver())
				if err != nil {
					return err
				}
				return r.printResult(res, false, "")
			})
		},
	}
	c.Flags().StringVar(&to, "to-profile", "", "target profile")
	return c
}

func (r *runner) repairCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "repair-profile",
		Short: "Finish moves to other profiles that were interrupted",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				results, err := st.Sessions.RepairProfile(ctx, st.Resolver())
				if err != nil {
					return err
				}
				return r.print(results, func(w io.Writer) {
					if len(results) == 0 {
						fmt.Fprintln(w, "no interrupted move")
					}
					for _, res := range results {
						fmt.Fprintf(w, "finished a move of %d session(s)\n", len(res.AffectedIDs))
					}
				})
			})
		},
	}
}

func (r *runner) messagesCmd() *cobra.Command {
	c := &cobra.Command{Use: "messages", Short: "Append and list messages"}
	var m sessions.NewMessage
	app := &cobra.Command{
		Use:   "append SESSION --role R --content TEXT",
		Short: "Append a message to a live session",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("content") {
				return usageError{fmt.Errorf("--content is required")}
			}
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				msg, err := st.Sessions.AppendMessage(ctx, args[0], m)
				if err != nil {
					return err
				}
				return r.print(msg, func(w io.Writer) { fmt.Fprintf(w, "message %d appended to %s\n", msg.ID, msg.SessionID) })
			})
		},
	}
	app.Flags().StringVar(&m.Role, "role", "user", "role: "+strings.Join(sessions.Roles, ", "))
	app.Flags().StringVar(&m.Content, "content", "", "message text")
	app.Flags().StringVar(&m.ToolName, "tool-name", "", "tool name (role tool)")
	app.Flags().StringVar(&m.ToolCallID, "tool-call-id", "", "tool call id (role tool)")
	var all bool
	list := &cobra.Command{
		Use:   "list SESSION",
		Short: "List a session's messages",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				msgs, err := st.Sessions.Messages(ctx, args[0], all)
				if err != nil {
					return err
				}
				return r.print(msgs, func(w io.Writer) {
					fmt.Fprintln(w, "ID\tROLE\tTOKENS\tCONTENT\tAS SENT")
					for _, m := range msgs {
						sent := ""
						if m.SentContent != nil {
							sent = clip(strings.ReplaceAll(*m.SentContent, "\n", " "), 60)
						}
						fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%s\n", m.ID, m.Role, m.TokenCount, clip(strings.ReplaceAll(m.Content, "\n", " "), 60), sent)
					}
				})
			})
		},
	}
	list.Flags().BoolVar(&all, "all", false, "include inactive (compacted) messages")
	c.AddCommand(app, list)
	return c
}

func (r *runner) eventsCmd() *cobra.Command {
	c := &cobra.Command{Use: "events", Short: "The durable hook event log"}
	var hook string
	var after int64
	var limit int
	list := &cobra.Command{
		Use:   "list",
		Short: "List hook events, oldest first by sequence",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				evs, err := hooks.ListEvents(ctx, st.DB, hooks.LogFilter{Hook: hook, AfterSeq: after, Limit: limit})
				if err != nil {
					return err
				}
				return r.print(evs, func(w io.Writer) {
					fmt.Fprintln(w, "SEQ\tHOOK\tCREATED\tDELIVERED\tPAYLOAD")
					for _, e := range evs {
						d := "pending"
						if e.Delivered {
							d = "delivered"
						}
						if e.Redelivery {
							d += " (redelivery)"
						}
						fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", e.Seq, e.Hook, fmtTime(e.CreatedAt), d, clip(string(e.Payload), 90))
					}
				})
			})
		},
	}
	list.Flags().StringVar(&hook, "hook", "", "only this hook")
	list.Flags().Int64Var(&after, "after", 0, "only events after this sequence number")
	list.Flags().IntVar(&limit, "limit", 1000, "at most this many events")
	c.AddCommand(list)
	return c
}

func (r *runner) maintenanceCmd() *cobra.Command {
	c := &cobra.Command{Use: "maintenance", Short: "Automatic upkeep of the store"}
	c.AddCommand(&cobra.Command{
		Use:   "run",
		Short: "Run the automatic maintenance now (empty sweep, ghost prune, retention prune if enabled, idle archive if enabled, event and receipt expiry)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				rep, err := st.Maintenance.Run(ctx, true)
				if err != nil {
					return err
				}
				return r.print(rep, func(w io.Writer) {
					n := func(res *sessions.Result) int {
						if res == nil {
							return 0
						}
						return len(res.AffectedIDs)
					}
					fmt.Fprintf(w, "empty sweep\t%d\nghost prune\t%d\nretention prune\t%d\nidle archive\t%d\nevents pruned\t%d\nreceipts expired\t%d\n",
						n(rep.EmptySweep), n(rep.GhostPrune), n(rep.Prune), n(rep.ArchiveIdle), rep.EventsPruned, rep.ReceiptsExpired)
				})
			})
		},
	})
	return c
}
