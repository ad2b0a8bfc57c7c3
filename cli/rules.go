package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"atrium/backend/apperr"
	"atrium/backend/receipts"
	"atrium/backend/sessions"
	"atrium/backend/stack"
)

// ruleFlags are the shared filter's fields as flags: --inactive-for for
// inactive_for, and --of-profile for profile (--profile picks the profile
// whose store is opened).
type ruleFlags struct {
	cmd    *cobra.Command
	values map[string]*string
}

func flagName(field string) string {
	if field == sessions.FieldProfile {
		return "of-profile"
	}
	return strings.ReplaceAll(field, "_", "-")
}

var ruleHelp = map[string]string{
	sessions.FieldScope:        "active (default), archived, trash or all",
	sessions.FieldSource:       "comma list of sources: " + strings.Join(sessions.Sources, ", "),
	sessions.FieldPlatform:     "comma list of platforms (local: sessions without one)",
	sessions.FieldProfile:      "sessions owned by this profile",
	sessions.FieldOlderThan:    "started more than D ago (90m, 12h, 30d, 2w)",
	sessions.FieldInactiveFor:  "last activity more than D ago",
	sessions.FieldActiveWithin: "last activity within D",
	sessions.FieldMessages:     "message count: N, =N, <N, <=N, >N, >=N or N..M (quote it)",
	sessions.FieldPinned:       "true or false",
	sessions.FieldHasChildren:  "true or false: has delegate or branch children",
	sessions.FieldMatch:        "title or messages contain every word",
	sessions.FieldTitle:        "title contains every word",
	sessions.FieldTrashedFor:   "with --scope trash: in the trash more than D",
}

// addRuleFlags adds the filter flags to c, except the fields in skip.
func addRuleFlags(c *cobra.Command, skip ...string) *ruleFlags {
	f := &ruleFlags{cmd: c, values: map[string]*string{}}
	for _, field := range sessions.RuleFields {
		if contains(skip, field) {
			continue
		}
		v := new(string)
		f.values[field] = v
		c.Flags().StringVar(v, flagName(field), "", ruleHelp[field])
	}
	return f
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fields are the filter fields given on the command line (nil: none).
func (f *ruleFlags) fields() map[string]string {
	var out map[string]string
	for field, v := range f.values {
		if f.cmd.Flags().Changed(flagName(field)) {
			if out == nil {
				out = map[string]string{}
			}
			out[field] = *v
		}
	}
	return out
}

// ruleRun is one bulk operation by rule from the command line.
type ruleRun struct {
	op        string
	fields    map[string]string
	dryRun    bool
	requestID string
	yes       bool
}

// preview is what --dry-run and --json print: every row that would go
// (count), of which how many only because they belong to what matched
// (cascaded), and their ids.
type preview struct {
	Count     int               `json:"count"`
	Cascaded  int               `json:"cascaded"`
	Matched   int               `json:"matched"`
	IDs       []string          `json:"ids"`
	RequestID string            `json:"request_id,omitempty"`
	Receipt   *receipts.Receipt `json:"receipt,omitempty"`
}

func toPreviewOut(res sessions.Result) preview {
	matched := map[string]bool{}
	for _, o := range res.Outcomes {
		if o.Status != sessions.OutcomeNotFound && o.Status != sessions.OutcomeUnchanged {
			matched[o.ID] = true
		}
	}
	p := preview{Count: len(res.AffectedIDs), Matched: res.Matched, IDs: res.AffectedIDs}
	if p.IDs == nil {
		p.IDs = []string{}
	}
	for _, id := range res.AffectedIDs {
		if !matched[id] {
			p.Cascaded++
		}
	}
	return p
}

var opWords = map[string]string{
	receipts.OpDelete:    "moved to the trash",
	receipts.OpPurge:     "deleted for good",
	receipts.OpArchive:   "archived",
	receipts.OpUnarchive: "unarchived",
	receipts.OpRestore:   "restored",
}

// opWord is what op does, in words; a delete without a trash is for good.
func opWord(op string, res sessions.Result) string {
	if op == receipts.OpDelete && !res.Trashed {
		return opWords[receipts.OpPurge]
	}
	return opWords[op]
}

// byRule prints the count and the cascade first, stops there on --dry-run,
// and otherwise runs the operation in one transaction through a receipt (a
// request id is made when none is given), so that `sessions undo` can undo it.
func (r *runner) byRule(cmd *cobra.Command, run ruleRun) error {
	return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
		req := receipts.Request{RequestID: run.requestID, Op: run.op, Filter: run.fields}
		if req.RequestID == "" {
			req.RequestID = "cli-" + uuid.Must(uuid.NewV7()).String()
		}
		pre, err := st.Receipts.Preview(ctx, req)
		if err != nil {
			return err
		}
		p := toPreviewOut(pre)
		head := fmt.Sprintf("%d session(s) match; with their compression chains and subagents %d would be %s (%d cascaded)",
			p.Matched, p.Count, opWord(run.op, pre), p.Cascaded)
		if run.dryRun || p.Count == 0 {
			return r.print(p, func(w io.Writer) {
				fmt.Fprintln(w, head)
				if run.dryRun && p.Count > 0 {
					fmt.Fprintln(w, "dry run: nothing changed")
				}
			})
		}
		if !r.g.json {
			fmt.Fprintln(r.env.Stdout, head)
		}
		if run.op == receipts.OpPurge {
			if err := r.confirm(cmd, run.yes, fmt.Sprintf("Delete %d session(s) for good", p.Count)); err != nil {
				return err
			}
		}
		rc, err := st.Receipts.Apply(ctx, req, r.progress("working"))
		if err != nil {
			return err
		}
		out := toPreviewOut(rc.Result)
		out.RequestID, out.Receipt = rc.RequestID, &rc
		return r.print(out, func(w io.Writer) {
			if rc.Replayed {
				fmt.Fprintf(w, "request %s was already applied; its receipt:\n", rc.RequestID)
			}
			fmt.Fprintln(w, describeResult(rc.Result))
			if rc.Undoable {
				fmt.Fprintf(w, "undo it with: atrium sessions undo %s\n", rc.RequestID)
			}
		})
	})
}

func (r *runner) undoCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "undo REQUEST_ID",
		Short: "Undo a request as a whole: a delete comes back from the trash, an archive is unarchived, and so on",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				rc, err := st.Receipts.Undo(ctx, args[0])
				if err != nil {
					return err
				}
				return r.printResult(rc.Result, rc.Replayed, rc.RequestID)
			})
		},
	}
}

func (r *runner) requestsCmd() *cobra.Command {
	var limit int
	c := &cobra.Command{
		Use:   "requests",
		Short: "Recent requests (deletes, archives, restores...) and whether each can still be undone",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				rs, err := st.Receipts.Recent(ctx, limit)
				if err != nil {
					return err
				}
				return r.print(rs, func(w io.Writer) {
					fmt.Fprintln(w, "REQUEST\tWHEN\tWHAT\tUNDO")
					for _, rc := range rs {
						undo := "-"
						switch {
						case rc.Undone:
							undo = "undone"
						case rc.Undoable:
							undo = "atrium sessions undo " + rc.RequestID
						}
						fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", rc.RequestID, fmtTime(rc.CreatedAt), describeResult(rc.Result), undo)
					}
				})
			})
		},
	}
	c.Flags().IntVar(&limit, "limit", 20, "at most this many")
	return c
}

func (r *runner) renameCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "rename ID TITLE",
		Short: "Set a session's title",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				s, err := st.Sessions.Rename(ctx, args[0], args[1])
				if err != nil {
					return err
				}
				return r.print(s, func(w io.Writer) { fmt.Fprintf(w, "%s\t%s\n", s.ID, s.Title) })
			})
		},
	}
}

func (r *runner) exportCmd() *cobra.Command {
	var format, output string
	c := &cobra.Command{
		Use:   "export ID [--format markdown|json] [--output FILE]",
		Short: "Write out a whole conversation (every part of its compression chain) as Markdown or JSON",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				ex, err := st.Sessions.Export(ctx, args[0], format)
				if err != nil {
					return err
				}
				if output == "" {
					_, err := r.env.Stdout.Write(ex.Content)
					return err
				}
				if err := os.WriteFile(output, ex.Content, 0o600); err != nil {
					return apperr.Wrap(apperr.Invalid, err, "cannot write %s", output)
				}
				fmt.Fprintf(r.env.Stderr, "wrote %s (%d bytes)\n", output, len(ex.Content))
				return nil
			})
		},
	}
	c.Flags().StringVar(&format, "format", "markdown", "markdown or json")
	c.Flags().StringVarP(&output, "output", "o", "", "write to this file instead of stdout")
	return c
}

func conversationTable(w io.Writer, rows []sessions.Conversation) {
	fmt.Fprintln(w, "ID\tTITLE\tSOURCE\tLAST ACTIVITY\tPARTS\tMSGS\tSUBAGENTS\tFROM")
	for _, c := range rows {
		from := "-"
		if c.OriginTitle != "" {
			from = map[string]string{sessions.RelationBranch: "branched from ", sessions.RelationDelegate: "subagent of "}[c.Relation] + clip(c.OriginTitle, 30)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", c.ID, clip(c.Title, 40), c.Source, fmtTime(c.LastActivityAt.Time),
			c.Parts, c.TotalMessages, c.Subagents, from)
	}
}
