package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
	"atrium/backend/receipts"
	"atrium/backend/sessions"
	"atrium/backend/stack"
	"atrium/backend/turns"
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
		r.pruneCmd(), r.moveCmd(), r.repairCmd(), r.importCmd(), r.trashCmd(), r.undoCmd(), r.requestsCmd(), r.renameCmd(), r.exportCmd(),
		r.stopCmd(), r.runningCmd())
	return c
}

// stopCmd stops the turns running in a session, whichever process of the
// profile runs them (a terminal's chat or send, the window, the dashboard,
// the gateway, the scheduler).
func (r *runner) stopCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "stop SESSION",
		Short: "Stop the turn running in a session, in whichever process runs it (agent_loop_stopped: user_stop)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				n, err := st.Runs.Stop(args[0], turns.StopByPerson)
				if err != nil {
					return err
				}
				if n == 0 {
					return apperr.New(apperr.NotFound, "no turn is running in session %s", args[0])
				}
				return r.print(map[string]int{"stopped": n}, func(w io.Writer) {
					fmt.Fprintf(w, "asked %d turn(s) to stop; what they stored stays\n", n)
				})
			})
		},
	}
}

// runningCmd lists the turns under way in the profile's processes.
func (r *runner) runningCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "running",
		Short: "The turns under way in this profile, in every process (session, where, since)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				list, err := st.Runs.Running("")
				if err != nil {
					return err
				}
				return r.print(list, func(w io.Writer) {
					if len(list) == 0 {
						fmt.Fprintln(w, "no turn is running")
					}
					for _, ru := range list {
						fmt.Fprintf(w, "%s\t%s\tpid %d\tsince %s\n", ru.SessionID, ru.Platform, ru.PID, ru.StartedAt.Local().Format(time.TimeOnly))
					}
				})
			})
		},
	}
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
	var archived, convs, subagents bool
	var cursor string
	var limit int
	var rf *ruleFlags
	c := &cobra.Command{
		Use:   "list [filter flags]",
		Short: "List sessions, newest activity first (in the trash: newest deletion first)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fields := rf.fields()
			if archived {
				if fields == nil {
					fields = map[string]string{}
				}
				if sc := fields[sessions.FieldScope]; sc != "" && sc != sessions.ScopeArchived {
					return usageError{fmt.Errorf("--archived contradicts --scope %s", sc)}
				}
				fields[sessions.FieldScope] = sessions.ScopeArchived
			}
			rule, err := sessions.ParseRule(fields)
			if err != nil {
				return err
			}
			f := sessions.Filter{Rule: rule, Limit: limit, Cursor: cursor}
			if convs || subagents {
				return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
					page, err := st.Sessions.Conversations(ctx, sessions.ConversationFilter{Rule: rule, Subagents: subagents, Limit: limit, Cursor: cursor})
					if err != nil {
						return err
					}
					return r.print(page, func(w io.Writer) {
						conversationTable(w, page.Rows)
						if page.Next != "" {
							fmt.Fprintf(w, "more: --cursor %s\n", page.Next)
						}
					})
				})
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
	fl.BoolVar(&archived, "archived", false, "list archived sessions instead of active ones (--scope archived)")
	fl.BoolVar(&convs, "conversations", false, "one row per conversation: a compression chain is one row, subagents are counted under their parent")
	fl.BoolVar(&subagents, "subagents", false, "with --conversations: list subagents as rows too")
	fl.IntVar(&limit, "limit", 50, "page size (at most 1000)")
	fl.StringVar(&cursor, "cursor", "", "continue after a previous page")
	rf = addRuleFlags(c)
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
	var scope string
	c := &cobra.Command{
		Use:   "search QUERY",
		Short: "Full-text search over titles and messages",
		Args:  minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				hits, err := st.Sessions.Search(ctx, strings.Join(args, " "), sessions.SearchOptions{Limit: limit, Scope: scope})
				if err != nil {
					return err
				}
				return r.print(hits, func(w io.Writer) {
					fmt.Fprintln(w, "CONVERSATION\tWHERE\tTITLE\tMATCH")
					for _, h := range hits {
						fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", h.ConversationID, h.Where, clip(h.Session.Title, 30), clip(strings.ReplaceAll(h.Snippet, "\n", " "), 80))
					}
				})
			})
		},
	}
	c.Flags().IntVar(&limit, "limit", 20, "conversations to return")
	c.Flags().StringVar(&scope, "scope", "all", "active, archived, trash or all (active and archived)")
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
		fmt.Fprintln(w, describeResult(res))
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

// describeResult says in one line what an operation did.
func describeResult(res sessions.Result) string {
	n := len(res.AffectedIDs)
	switch {
	case !res.Changed:
		return "nothing changed"
	case res.Trashed && res.PurgeAfter != nil:
		return fmt.Sprintf("moved %d session(s) to the trash; restorable until %s (atrium sessions trash restore ID)", n, fmtTime(*res.PurgeAfter))
	case res.Op == "delete" || res.Op == "purge" || res.Op == "empty_trash":
		return fmt.Sprintf("deleted %d session(s) for good", n)
	}
	verb := map[string]string{"archive": "archived", "unarchive": "unarchived", "move": "moved", "restore": "restored"}[res.Op]
	if verb == "" {
		verb = res.Op
	}
	return fmt.Sprintf("%s %d session(s)", verb, n)
}

// confirm asks a yes/no question on a terminal. Without one, only yes
// (--yes) goes ahead: a script must say so.
func (r *runner) confirm(cmd *cobra.Command, yes bool, question string) error {
	if yes {
		return nil
	}
	in, ok := cmd.InOrStdin().(*os.File)
	if !ok || !term.IsTerminal(int(in.Fd())) {
		return apperr.New(apperr.Rejected, "%s cannot be undone: add --yes to confirm (no terminal to ask on)", question)
	}
	fmt.Fprintf(r.env.Stderr, "%s? This cannot be undone. [y/N] ", question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return apperr.New(apperr.Rejected, "cancelled: nothing was deleted")
	}
	return nil
}

func (r *runner) deleteCmd() *cobra.Command {
	var requestID string
	var ifEmpty, now, yes, dryRun bool
	var rf *ruleFlags
	c := &cobra.Command{
		Use:   "delete ID... | delete [filter flags] [--dry-run]",
		Short: "Move sessions (with their compression chains and delegate children) to the trash; fires on_session_delete once",
		Long: "Move sessions, with their compression chains and delegate children, to the trash: out of every list and\n" +
			"search, restorable with `sessions trash restore` for sessions.trash_days (default 30), then purged.\n" +
			"--now deletes for good at once (it asks on a terminal; --yes for scripts).\n" +
			"Filter flags take the place of ids (bulk by rule): the count and the cascade are printed first,\n" +
			"--dry-run stops there, and the whole runs as one transaction that `sessions undo REQUEST_ID` undoes.",
		Args: idsOrRule(&rf),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ifEmpty && (len(args) != 1 || requestID != "" || now) {
				return usageError{fmt.Errorf("--if-empty takes exactly one session id and no --request-id or --now")}
			}
			if fields := rf.fields(); fields != nil {
				op := receipts.OpDelete
				if now {
					op = receipts.OpPurge
				}
				return r.byRule(cmd, ruleRun{op: op, fields: fields, dryRun: dryRun, requestID: requestID, yes: yes})
			}
			if dryRun {
				return r.previewIDs(cmd, receipts.OpDelete, args)
			}
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				if ifEmpty {
					res, err := st.Sessions.DeleteCurrent(ctx, args[0], true)
					if err != nil {
						return err
					}
					if !res.Changed && len(res.Outcomes) == 1 && res.Outcomes[0].Status == sessions.OutcomeKept {
						return apperr.New(apperr.Rejected, "session %s was not deleted: %s (--if-empty deletes only empty sessions)", args[0],
							strings.TrimPrefix(res.Outcomes[0].Error, "not empty: "))
					}
					return r.printResult(res, false, "")
				}
				op := receipts.OpDelete
				if now {
					op = receipts.OpPurge
					if err := r.confirm(cmd, yes, fmt.Sprintf("Delete %d session(s) and what goes with them for good", len(args))); err != nil {
						return err
					}
				}
				if requestID != "" {
					rc, err := st.Receipts.Apply(ctx, receipts.Request{RequestID: requestID, Op: op, SessionIDs: args}, r.progress("deleting"))
					if err != nil {
						return err
					}
					return r.printResult(rc.Result, rc.Replayed, requestID)
				}
				res, err := st.Sessions.DeleteWith(ctx, args, sessions.DeleteOptions{Now: now, Progress: r.progress("deleting")})
				if err != nil {
					return err
				}
				return r.printResult(res, false, "")
			})
		},
	}
	c.Flags().StringVar(&requestID, "request-id", "", "go through the idempotent receipt path with this request id (as the desktop does)")
	c.Flags().BoolVar(&ifEmpty, "if-empty", false, "delete only if the session has no messages and no children (exits 5 otherwise)")
	c.Flags().BoolVar(&now, "now", false, "delete for good at once, skipping the trash (asks on a terminal)")
	c.Flags().BoolVar(&yes, "yes", false, "do not ask (for scripts)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print what would go (count, cascade, ids) and change nothing")
	rf = addRuleFlags(c)
	return c
}

// idsOrRule accepts session ids or filter flags, one of the two.
func idsOrRule(rf **ruleFlags) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		has := (*rf).fields() != nil
		switch {
		case has && len(args) > 0:
			return usageError{fmt.Errorf("%s takes session ids or filter flags, not both", cmd.CommandPath())}
		case !has && len(args) == 0:
			return usageError{fmt.Errorf("%s needs session ids or filter flags (see --help)", cmd.CommandPath())}
		}
		return nil
	}
}

// previewIDs is --dry-run for ids: what op would change, exactly.
func (r *runner) previewIDs(cmd *cobra.Command, op string, ids []string) error {
	return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
		res, err := st.Receipts.Preview(ctx, receipts.Request{Op: op, SessionIDs: ids})
		if err != nil {
			return err
		}
		p := toPreviewOut(res)
		return r.print(p, func(w io.Writer) {
			fmt.Fprintf(w, "%d session(s) would be %s (%d cascaded)\ndry run: nothing changed\n", p.Count, opWord(op, res), p.Cascaded)
		})
	})
}

func (r *runner) trashCmd() *cobra.Command {
	c := &cobra.Command{Use: "trash", Short: "Deleted sessions: list, restore, empty"}
	var limit int
	var cursor string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the trash, most recently deleted first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				page, err := st.Sessions.List(ctx, sessions.Filter{Rule: sessions.Rule{Scope: sessions.ScopeTrash}, Limit: limit, Cursor: cursor})
				if err != nil {
					return err
				}
				days := st.Sessions.TrashDays()
				return r.print(page, func(w io.Writer) {
					fmt.Fprintln(w, "ID\tTITLE\tSOURCE\tDELETED\tPURGED AFTER\tMSGS")
					for _, s := range page.Sessions {
						at := s.TrashedAt.Time
						fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\n", s.ID, clip(s.Title, 40), s.Source, fmtTime(at),
							fmtTime(at.Add(time.Duration(days)*24*time.Hour)), s.MessageCount)
					}
					if page.Next != "" {
						fmt.Fprintf(w, "more: --cursor %s\n", page.Next)
					}
				})
			})
		},
	}
	list.Flags().IntVar(&limit, "limit", 50, "page size (at most 1000)")
	list.Flags().StringVar(&cursor, "cursor", "", "continue after a previous page")
	var restoreID string
	restore := &cobra.Command{
		Use:   "restore ID...",
		Short: "Bring sessions back from the trash, with what was deleted with them; fires on_session_restore once",
		Args:  minArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				if restoreID != "" {
					rc, err := st.Receipts.Apply(ctx, receipts.Request{RequestID: restoreID, Op: receipts.OpRestore, SessionIDs: args}, nil)
					if err != nil {
						return err
					}
					return r.printResult(rc.Result, rc.Replayed, restoreID)
				}
				res, err := st.Sessions.Restore(ctx, args)
				if err != nil {
					return err
				}
				return r.printResult(res, false, "")
			})
		},
	}
	restore.Flags().StringVar(&restoreID, "request-id", "", "go through the idempotent receipt path with this request id")
	var olderThan, emptyID string
	var yes bool
	empty := &cobra.Command{
		Use:   "empty [--older-than D]",
		Short: "Delete for good what is in the trash (or what has been there longer than D: 12h, 7d, 2w); asks on a terminal",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var d time.Duration
			if olderThan != "" {
				var err error
				if d, err = sessions.ParseDuration("--older-than", olderThan); err != nil {
					return err
				}
			}
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				sum, err := st.Sessions.Trash(ctx)
				if err != nil {
					return err
				}
				if sum.Sessions == 0 {
					return r.printResult(sessions.Result{Op: "empty_trash", AffectedIDs: []string{}, Outcomes: []sessions.Outcome{}}, false, "")
				}
				what := fmt.Sprintf("Empty the trash (%d session(s))", sum.Sessions)
				if olderThan != "" {
					what = "Delete for good what has been in the trash longer than " + olderThan
				}
				if err := r.confirm(cmd, yes, what); err != nil {
					return err
				}
				if emptyID != "" {
					rc, err := st.Receipts.Apply(ctx, receipts.Request{RequestID: emptyID, Op: receipts.OpEmptyTrash, OlderThan: olderThan}, r.progress("deleting"))
					if err != nil {
						return err
					}
					return r.printResult(rc.Result, rc.Replayed, emptyID)
				}
				res, err := st.Sessions.EmptyTrash(ctx, d, r.progress("deleting"))
				if err != nil {
					return err
				}
				return r.printResult(res, false, "")
			})
		},
	}
	empty.Flags().StringVar(&olderThan, "older-than", "", "only what has been in the trash longer than this (12h, 7d, 2w)")
	empty.Flags().StringVar(&emptyID, "request-id", "", "go through the idempotent receipt path with this request id")
	empty.Flags().BoolVar(&yes, "yes", false, "do not ask (for scripts)")
	c.AddCommand(list, restore, empty)
	return c
}

func (r *runner) archiveCmd(archive bool) *cobra.Command {
	var requestID string
	var dryRun bool
	var rf *ruleFlags
	use, short, op := "archive ID... | archive [filter flags] [--dry-run]", "Archive sessions with their compression lineage; fires on_session_delete (archive) for real transitions", receipts.OpArchive
	if !archive {
		use, short, op = "unarchive ID... | unarchive [filter flags] [--dry-run]", "Unarchive sessions with their compression lineage; fires on_session_restore (archive) for real transitions", receipts.OpUnarchive
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  idsOrRule(&rf),
		RunE: func(cmd *cobra.Command, args []string) error {
			if fields := rf.fields(); fields != nil {
				return r.byRule(cmd, ruleRun{op: op, fields: fields, dryRun: dryRun, requestID: requestID})
			}
			if dryRun {
				return r.previewIDs(cmd, op, args)
			}
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
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print what would change (count, cascade, ids) and change nothing")
	rf = addRuleFlags(c, sessions.FieldTrashedFor)
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
		Short: "Run the automatic maintenance now (empty sweep, ghost prune, retention prune if enabled, idle archive if enabled, trash purge, event and receipt expiry)",
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
					fmt.Fprintf(w, "empty sweep\t%d\nghost prune\t%d\nretention prune\t%d\nidle archive\t%d\ntrash purged\t%d\nevents pruned\t%d\nreceipts expired\t%d\n",
						n(rep.EmptySweep), n(rep.GhostPrune), n(rep.Prune), n(rep.ArchiveIdle), n(rep.TrashPurge), rep.EventsPruned, rep.ReceiptsExpired)
					if rep.RetentionHeld != "" {
						fmt.Fprintf(w, "retention held	%s (atrium storage shows the preview)\n", rep.RetentionHeld)
					}
				})
			})
		},
	})
	return c
}
