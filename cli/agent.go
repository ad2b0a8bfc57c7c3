package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"atrium/backend/apperr"
	"atrium/backend/compaction"
	"atrium/backend/gateway"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
	"atrium/backend/stack"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

func modelFlags(c *cobra.Command, f *stack.ModelFlags) {
	c.Flags().StringVar(&f.Provider, "provider", "", "model provider: offline (default), openai (any OpenAI-compatible API at --base-url), or the familiar agent's openrouter, custom, lmstudio, auto")
	c.Flags().BoolP("offline", "", false, "use the offline provider (the default)")
	c.Flags().StringVar(&f.BaseURL, "base-url", "", "OpenAI-compatible API root, e.g. http://127.0.0.1:8080/v1")
	c.Flags().StringVar(&f.Model, "model", "", "model name")
	c.Flags().StringVar(&f.APIKey, "api-key-env", "", "environment variable that holds the API key")
}

// printTurn writes a turn as a person reads it: the model's replies
// through render when there is one (a terminal chat's Markdown).
func printTurn(w io.Writer, t turns.Turn, from string, render func(string) string) {
	reply := func(s string) string {
		if render == nil {
			return s
		}
		return render(s)
	}
	if t.Output != "" {
		fmt.Fprintln(w, t.Output)
	}
	for _, c := range t.Continued {
		fmt.Fprintln(w, reply(c.Reply))
		fmt.Fprintf(w, "(a hook did not let the turn end; the agent was told:)\n%s\n", c.Feedback)
	}
	if t.Reply != "" {
		fmt.Fprintln(w, reply(t.Reply))
	}
	for _, n := range t.Notes {
		fmt.Fprintf(w, "(%s)\n", n)
	}
	for _, c := range t.Compactions {
		fmt.Fprintf(w, "(%s)\n", compaction.Describe(c))
	}
	if t.SessionID != from {
		fmt.Fprintf(w, "(the conversation continues in session %s)\n", t.SessionID)
	}
}

func (r *runner) sendCmd() *cobra.Command {
	var f stack.ModelFlags
	c := &cobra.Command{
		Use:   "send SESSION TEXT...",
		Short: "Send one turn (or a /command) through the turn loop",
		Args:  minArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				loop, err := st.Loop(f)
				if err != nil {
					return err
				}
				// Ctrl+C stops the turn: it records how it ended, then send
				// exits.
				text := strings.Join(args[1:], " ")
				if err := st.Runs.Busy(args[0], text); err != nil {
					return err
				}
				turnCtx, release := stopOnInterrupt(ctx)
				defer release()
				turnCtx = turns.WithModelStatus(turnCtx, modelStatus(r.env.Stderr, "atrium: "))
				t, err := loop.Send(turnCtx, args[0], text, hooks.LocalContext("cli", args[0]))
				if serr := stoppedError(turnCtx, err); serr != nil {
					return serr
				}
				if err != nil {
					return err
				}
				return r.print(t, func(w io.Writer) { printTurn(w, t, args[0], nil) })
			})
		},
	}
	modelFlags(c, &f)
	return c
}

func (r *runner) chatCmd() *cobra.Command {
	var f stack.ModelFlags
	var title string
	c := &cobra.Command{
		Use:   "chat [SESSION]",
		Short: "Talk to the model in a session, slash commands included (one line per turn when stdin is not a terminal)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				// On a terminal, a tool call a plugin wants approved is asked
				// of the person at it; elsewhere nobody is asked and it is
				// blocked (fail closed).
				// The clarify tool's question is asked there too (elsewhere
				// the tool is not offered).
				var ask terminalAsk
				if onTerminal(cmd.InOrStdin()) {
					f.Clarify = func(ctx context.Context, q turns.Question) (turns.Reply, error) {
						if ask.clarify == nil {
							return turns.Reply{}, errors.New("the chat is not reading answers yet")
						}
						if q.Timeout <= 0 {
							return ask.clarify(ctx, q)
						}
						qctx, cancel := context.WithTimeoutCause(ctx, q.Timeout, turns.ErrNoAnswer)
						defer cancel()
						reply, err := ask.clarify(qctx, q)
						if err != nil && ctx.Err() == nil && errors.Is(context.Cause(qctx), turns.ErrNoAnswer) {
							fmt.Fprintf(r.env.Stdout, "no answer within %s: the agent goes on with its own choice\n", q.Timeout)
							return turns.Reply{}, turns.ErrNoAnswer
						}
						return reply, err
					}
					// A key a skill needs, asked as it loads, unseen.
					f.AskSecret = func(ctx context.Context, skill string, e tools.SkillEnv) (bool, error) {
						if ask.secret == nil {
							return false, nil
						}
						return ask.secret(ctx, skill, e)
					}
					f.Approve = func(ctx context.Context, a turns.Approval) (turns.Answer, error) {
						if ask.approve == nil {
							return turns.AnswerDeny, nil
						}
						limit := a.Timeout // approvals.timeout now; none: no limit here
						if limit <= 0 {
							return ask.approve(ctx, a)
						}
						// approvals.timeout: silence is a no.
						actx, cancel := context.WithTimeoutCause(ctx, limit, turns.ErrNoAnswer)
						defer cancel()
						answer, err := ask.approve(actx, a)
						// An answer given as time ran out counts (an "always"
						// it carried is kept already).
						if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), turns.ErrNoAnswer) {
							fmt.Fprintf(r.env.Stdout, "no answer within %s: %s was not run\n", limit, a.ToolName)
							return turns.AnswerDeny, turns.ErrNoAnswer
						}
						return answer, err
					}
				}
				loop, err := st.Loop(f)
				if err != nil {
					return err
				}
				// A chat is for talking to the model: one that cannot be
				// asked (no key yet) is said now, not after the first line.
				if _, err := loop.Resolve(); err != nil {
					return err
				}
				id := ""
				if len(args) == 1 {
					if id, err = loop.Continuation(ctx, args[0]); err != nil {
						return err
					}
					if id != args[0] {
						fmt.Fprintf(r.env.Stdout, "(session %s continues in %s)\n", args[0], id)
					}
				} else {
					s, err := st.Sessions.Create(ctx, sessions.CreateParams{Title: title, Source: "cli"})
					if err != nil {
						return err
					}
					id = s.ID
					fmt.Fprintf(r.env.Stdout, "(new session %s)\n", id)
				}
				return r.chatLoop(ctx, loop, id, cmd.InOrStdin(), &ask, st)
			})
		},
	}
	c.Flags().StringVar(&title, "title", "", "title of a new session")
	modelFlags(c, &f)
	return c
}

// onTerminal reports whether in is a terminal.
func onTerminal(in io.Reader) bool {
	fi, ok := in.(*os.File)
	return ok && term.IsTerminal(int(fi.Fd()))
}

// terminalAsk asks the person at a terminal chat: an approval, and the
// clarify tool's question (nil until the chat reads its lines).
type terminalAsk struct {
	approve func(context.Context, turns.Approval) (turns.Answer, error)
	clarify func(context.Context, turns.Question) (turns.Reply, error)
	secret  tools.SecretAsker
}

func (r *runner) chatLoop(ctx context.Context, loop *turns.Loop, id string, in io.Reader, ask *terminalAsk, st *stack.Stack) error {
	interactive := onTerminal(in)
	render := replyRenderer(r.env.Stdout) // the model's Markdown, at a terminal
	lines, readErr := readLines(ctx, in)
	// At a terminal, a background process this chat started with
	// notify_on_complete is told to it when it ends: at the prompt, a turn
	// whose message is the notification (piped, the chat ends with its
	// input, and its processes with it: nobody would be told).
	var untold tools.Untold
	ended := make(chan struct{}, 1)
	var current atomic.Value // the session the chat is in now
	current.Store(id)
	if interactive && st != nil {
		stop := st.TellEnds(func(owner string) func(tools.Completion) {
			if owner != "cli:"+current.Load().(string) {
				return nil
			}
			return func(c tools.Completion) {
				untold.Add("", c) // one teller: this loop, woken below
				select {
				case ended <- struct{}{}:
				default:
				}
			}
		})
		defer stop()
	}
	if interactive && ask != nil {
		// The chat loop waits in Send meanwhile: the next line is the
		// answer. Ctrl+C (the turn stopped) ends the question at once.
		ask.clarify = func(tctx context.Context, q turns.Question) (turns.Reply, error) {
			printQuestion(r.env.Stdout, q)
			select {
			case line := <-lines: // "" once the input ended: skipped
				return q.Read(line), nil
			case <-tctx.Done():
				fmt.Fprintln(r.env.Stdout)
				return turns.Reply{}, context.Cause(tctx)
			}
		}
		ask.secret = func(tctx context.Context, skill string, e tools.SkillEnv) (bool, error) {
			return r.askSecret(tctx, in, lines, st, skill, e)
		}
		ask.approve = func(tctx context.Context, a turns.Approval) (turns.Answer, error) {
			if a.Plugin == "" {
				fmt.Fprintf(r.env.Stdout, "the %s asks before it runs: %v", a.ToolName, a.Args["command"])
			} else {
				fmt.Fprintf(r.env.Stdout, "plugin %s asks before %s runs with %v", a.Plugin, a.ToolName, a.Args)
			}
			if a.Message != "" {
				fmt.Fprintf(r.env.Stdout, " (%s)", a.Message)
			}
			always := ""
			if a.KeepAlways != nil {
				always = ", a: and from now on (" + a.PatternKey + ")"
			}
			fmt.Fprintf(r.env.Stdout, ". Run it? [y/N, s: and do not ask again in this session%s] ", always)
			for {
				select {
				case line := <-lines: // "" once the input ended: a no
					switch strings.ToLower(strings.TrimSpace(line)) {
					case "y", "yes":
						return turns.AnswerOnce, nil
					case "s", "session":
						return turns.AnswerSession, nil
					case "a", "always":
						if a.KeepAlways == nil {
							return turns.AnswerDeny, nil // not offered
						}
						if err := a.KeepAlways(); err != nil {
							fmt.Fprintf(r.env.Stdout, "always cannot be kept now (%v). Run it? [y/N, s: and do not ask again in this session] ", err)
							continue
						}
						return turns.AnswerAlways, nil
					}
					return turns.AnswerDeny, nil
				case <-tctx.Done():
					fmt.Fprintln(r.env.Stdout)
					return turns.AnswerDeny, context.Cause(tctx)
				}
			}
		}
	}
	prompt := true
	for {
		if interactive && prompt {
			fmt.Fprint(r.env.Stdout, "> ")
		}
		prompt = true
		var line string
		told := false // an end told, not the person's line
		select {
		case text, ok := <-lines:
			if !ok {
				return readErr()
			}
			line = strings.TrimSpace(text)
		case <-ended:
			// An end of a session the chat left with /new is not told, as
			// the other surfaces drop it (a compaction's continuation took
			// its processes along: it is this session).
			cs := slices.DeleteFunc(untold.Next(""), func(c tools.Completion) bool { return c.Owner != "cli:"+id })
			if len(cs) == 0 {
				prompt = false // nothing to tell after all: the prompt stands
				continue
			}
			for _, c := range cs {
				fmt.Fprintf(r.env.Stdout, "\n(%s)\n", c.Summary())
			}
			line, told = tools.CompletionsText(cs), true
		}
		if line == "" {
			continue
		}
		var t turns.Turn
		var err error
		if !told {
			err = st.Runs.Busy(id, line) // a turn of another surface runs in this session
		}
		if err == nil {
			turnCtx, release := stopOnInterrupt(ctx)
			if interactive {
				turnCtx = turns.WithSubagentProgress(turnCtx, subagentProgress(r.env.Stdout))
				turnCtx = turns.WithToolProgress(turnCtx, toolProgress(r.env.Stdout, st.ToolProgress("cli"), id))
				turnCtx = turns.WithModelStatus(turnCtx, modelStatus(r.env.Stdout, "  ┊ "))
			} else {
				turnCtx = turns.WithModelStatus(turnCtx, modelStatus(r.env.Stderr, "atrium: "))
			}
			t, err = loop.Send(turnCtx, id, line, hooks.LocalContext("cli", id))
			release()
			if serr := stoppedError(turnCtx, err); serr != nil {
				if !interactive {
					return serr
				}
				fmt.Fprintln(r.env.Stdout, "(stopped: your message and what the turn stored stay; Ctrl+C at the prompt leaves)")
				continue
			}
		}
		if err != nil {
			fmt.Fprintf(r.env.Stderr, "atrium: %s\n", oneLine(err))
			if !interactive {
				return err
			}
			continue
		}
		if r.g.json {
			_ = r.print(t, nil)
		} else {
			printTurn(r.env.Stdout, t, id, render)
		}
		id = t.SessionID
		current.Store(id)
		if t.Command == "exit" {
			return nil
		}
	}
}

// toolProgress shows a terminal chat each tool call of a turn as it
// starts, as the familiar agent's chat does ("  ┊ 💻 terminal: \"make\""),
// by display.tool_progress (gateway.Progress.Follow: all, new, verbose; log
// writes logs/tool_calls.log instead, off nothing; a clarify question is
// shown as the question). nil: nothing to show.
func toolProgress(w io.Writer, p gateway.Progress, sessionID string) func(turns.ToolStart) {
	return p.Follow("cli", sessionID, func(line string) {
		fmt.Fprintf(w, "  ┊ %s\n", strings.ReplaceAll(line, "\n", "\n  ┊   "))
	})
}

// modelStatus shows w, each line after prefix, that the turn waits to
// retry its model or turned to a fallback ("⏱️ Rate limited. Waiting 4.2s
// (attempt 1/3)...").
func modelStatus(w io.Writer, prefix string) func(turns.ModelStatus) {
	var mu sync.Mutex // subagents tell theirs side by side
	return func(s turns.ModelStatus) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s%s\n", prefix, s.Text())
	}
}

// subagentProgress shows a terminal chat what the subagents of a
// delegate_task call do, as the familiar agent's chat does: the tools each
// one calls ("├─ terminal", "[2] ├─ …" when there are several), then a
// line as each one ends ("✓ [1/2] its task  (3.2s)").
func subagentProgress(w io.Writer) func(turns.SubagentEvent) {
	var mu sync.Mutex
	return func(ev turns.SubagentEvent) {
		mu.Lock()
		defer mu.Unlock()
		prefix := ""
		if ev.Of > 1 {
			prefix = fmt.Sprintf("[%d] ", ev.Index+1)
		}
		if !ev.Done {
			fmt.Fprintf(w, "  %s├─ %s\n", prefix, strings.Join(ev.Tools, ", "))
			return
		}
		mark, how := "✓", ""
		if ev.Status != turns.SubagentCompleted {
			mark, how = "✗", ", "+ev.Status
		}
		goal, _, _ := strings.Cut(strings.TrimSpace(ev.Goal), "\n")
		fmt.Fprintf(w, "  %s [%d/%d] %s  (%.1fs%s)\n", mark, ev.Index+1, ev.Of, clip(goal, 40), ev.Seconds, how)
	}
}

// printQuestion asks the clarify tool's question at a terminal: its
// choices numbered, then how to answer.
func printQuestion(w io.Writer, q turns.Question) {
	if q.Of > 1 {
		fmt.Fprintf(w, "(question %d of %d", q.Index, q.Of)
		if q.Title != "" {
			fmt.Fprintf(w, ": %s", q.Title)
		}
		fmt.Fprintln(w, ")")
	}
	fmt.Fprintf(w, "? %s\n", q.Question)
	for i, c := range q.Choices {
		fmt.Fprintf(w, "  %d. %s\n", i+1, c)
	}
	switch {
	case len(q.Choices) == 0:
		fmt.Fprint(w, "your answer (empty: skip): ")
	case q.MultiSelect:
		fmt.Fprint(w, "numbers of your choices (1,3), or your own answer (empty: skip): ")
	default:
		fmt.Fprint(w, "a number, or your own answer (empty: skip): ")
	}
}

// readLines reads in line by line on its own goroutine (until ctx ends),
// so that a question can stop waiting for a line without losing it: the
// chat loop and an approval prompt take turns at one channel. err tells why
// the channel closed (nil at the end of the input).
func readLines(ctx context.Context, in io.Reader) (<-chan string, func() error) {
	lines := make(chan string)
	var err error
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1024*1024), 1024*1024)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		err = sc.Err()
	}()
	// Read only after the channel closed, which orders it after the write.
	return lines, func() error { return err }
}

// errStopped ends send, or a piped chat, whose turn Ctrl+C stopped.
var errStopped = apperr.New(apperr.Rejected, "stopped (Ctrl+C): your message and what the turn stored before stay")

// errStoppedElsewhere ends send, or a piped chat, whose turn a person
// stopped from another process (the window's Stop, `atrium sessions stop`).
var errStoppedElsewhere = apperr.New(apperr.Rejected, "stopped by a person (from the window, the dashboard or another terminal): your message and what the turn stored before stay")

// stoppedError is how send, or a piped chat, ends when a person stopped
// its turn (err is Send's under turnCtx): errStopped for Ctrl+C here,
// errStoppedElsewhere for a stop from another process; nil otherwise.
func stoppedError(turnCtx context.Context, err error) error {
	switch {
	case err == nil || turns.StopOf(turnCtx, err) == nil:
		return nil
	case turns.Stopped(turnCtx):
		return errStopped
	}
	return errStoppedElsewhere
}

// stopOnInterrupt is ctx, stopped by a person (turns.StopByPerson) at
// Ctrl+C until release: the turn under way records how it ended
// (on_session_end, agent_loop_stopped). On a terminal chat the chat then
// goes on (at the prompt Ctrl+C leaves, as ever); send and a piped chat
// exit.
func stopOnInterrupt(ctx context.Context) (context.Context, func()) {
	turnCtx, stop := context.WithCancelCause(ctx)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			stop(turns.StopByPerson)
		case <-done:
		}
	}()
	return turnCtx, func() {
		signal.Stop(sigs)
		close(done)
		stop(nil)
	}
}

func (r *runner) compactCmd() *cobra.Command {
	var kind, reason, focus string
	var f stack.ModelFlags
	c := &cobra.Command{
		Use:   "compact SESSION",
		Short: "Compact a session now (--kind summarize|micro_summarize|prune_tool_results|provider_native)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
				req := compaction.Request{SessionID: args[0], Kind: kind, Reason: reason, Focus: focus}
				if kind == compaction.KindProviderNative {
					loop, err := st.Loop(f)
					if err != nil {
						return err
					}
					m, err := loop.Resolve()
					if err != nil {
						return err
					}
					req.Native = m.Native()
					if req.Native == nil {
						return fmt.Errorf("the provider cannot compact natively")
					}
					if !cmd.Flags().Changed("reason") {
						req.Reason = compaction.ReasonProvider
					}
				}
				res, err := st.Compaction.Compact(ctx, req)
				if err != nil {
					return err
				}
				return r.print(res, func(w io.Writer) { fmt.Fprintln(w, compaction.Describe(res)) })
			})
		},
	}
	c.Flags().StringVar(&kind, "kind", compaction.KindSummarize, "kind: "+strings.Join(compaction.Kinds, ", "))
	c.Flags().StringVar(&reason, "reason", compaction.ReasonManual, "reason: "+strings.Join(compaction.Reasons, ", "))
	c.Flags().StringVar(&focus, "focus", "", "what the summary should keep above all")
	modelFlags(c, &f)
	return c
}
