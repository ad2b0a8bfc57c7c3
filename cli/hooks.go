package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/gatewayhooks"
	"atrium/backend/hooks"
	"atrium/backend/plugins"
	"atrium/backend/shellhooks"
	"atrium/backend/stack"
	"atrium/backend/webhooks"
)

// Shell hooks: config.yaml's hooks: section (backend/shellhooks), their
// consent, and `atrium hooks`.

// hookEnv is a profile's shell hook setting: its configured hooks, the
// warnings for those that cannot run, and its allowlist.
type hookEnv struct {
	home    config.Home
	cfg     config.Config
	specs   []shellhooks.Spec
	targets []webhooks.Target // hooks.outbound
	warns   []string
	allow   shellhooks.Allowlist
}

func (r *runner) hookEnv() (hookEnv, error) {
	home, err := config.ResolveHome(r.g.home, r.g.profile)
	if err != nil {
		return hookEnv{}, err
	}
	return loadHookEnv(home)
}

func loadHookEnv(home config.Home) (hookEnv, error) {
	cfg, _, err := config.Load(home.ConfigPath())
	if err != nil {
		return hookEnv{}, err
	}
	specs, warns := plugins.ShellHooks(cfg)
	targets, twarns := plugins.Webhooks(cfg)
	return hookEnv{home: home, cfg: cfg, specs: specs, targets: targets, warns: append(warns, twarns...),
		allow: shellhooks.NewAllowlist(home.Dir)}, nil
}

// consentHooks runs before a command that fires hooks: the shell hooks it
// can fire that are not approved yet are approved with --accept-hooks (or
// the environment, or hooks_auto_accept), else asked about on a terminal,
// else named in a warning: they do not run.
func (r *runner) consentHooks(cmd *cobra.Command, home config.Home) {
	e, err := loadHookEnv(home)
	if err != nil || len(e.specs) == 0 || os.Getenv(plugins.EnvSafeMode) == "1" {
		return // a broken config is the stack's to report; safe mode runs no hook
	}
	want := plugins.Want{Hooks: r.pluginHooks}
	specs := slices.DeleteFunc(e.specs, func(s shellhooks.Spec) bool { return !want.Takes(s.Event) })
	accept := r.acceptHooks || plugins.AcceptHooks(e.cfg)
	_, waiting, err := e.allow.Split(specs, accept, time.Now())
	if err != nil {
		fmt.Fprintf(r.env.Stderr, "atrium: warning: %s\n", oneLine(err))
		return
	}
	in, ok := cmd.InOrStdin().(*os.File)
	// The window asks nobody on the terminal it may have been started from.
	tty := ok && term.IsTerminal(int(in.Fd())) && r.cmdPath != "atrium"
	var rd *bufio.Reader
	for _, s := range waiting {
		if !tty {
			fmt.Fprintf(r.env.Stderr, "atrium: warning: shell hook %s → %s is not approved, so it does not run: "+
				"approve it with `atrium hooks approve`, --accept-hooks or hooks_auto_accept: true\n", s.Name, s.Command)
			continue
		}
		if rd == nil {
			rd = bufio.NewReader(in)
		}
		fmt.Fprintf(r.env.Stderr, "\nAtrium is about to run a shell hook on your behalf.\n\n    Event:   %s\n    Command: %s\n\n"+
			"  It runs with your full user rights. Only approve commands you trust.\nAllow this hook to run? [y/N] ", s.Name, s.Command)
		line, _ := rd.ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a == "y" || a == "yes" {
			if err := e.allow.Approve(s.Name, s.Command, time.Now()); err != nil {
				fmt.Fprintf(r.env.Stderr, "atrium: warning: %s\n", oneLine(err))
			}
		}
	}
}

func (r *runner) hooksCmd() *cobra.Command {
	c := &cobra.Command{Use: "hooks", Short: "Shell hooks and outbound webhooks of config.yaml's hooks: section: list, test, approve, revoke, doctor"}
	c.AddCommand(r.hooksListCmd(), r.hooksTestCmd(), r.hooksApproveCmd(), r.hooksRevokeCmd(), r.hooksDoctorCmd())
	return c
}

func (e hookEnv) rows() ([]plugins.HookStatus, error) { return plugins.HookStatuses(e.home, e.specs) }

// webhookRow is one outbound target as `hooks list` shows it.
type webhookRow struct {
	webhooks.Target
	TimeoutSeconds float64  `json:"timeout_seconds"`
	DeadlineHours  float64  `json:"deadline_hours"`
	RegisteredIn   []string `json:"registered_in"`
}

func (e hookEnv) webhookRows() []webhookRow {
	live := plugins.LiveWebhooks(e.home)
	rows := []webhookRow{}
	for _, t := range e.targets {
		row := webhookRow{Target: t, TimeoutSeconds: t.Timeout.Seconds(), DeadlineHours: t.Deadline.Hours(), RegisteredIn: []string{}}
		for _, l := range live {
			if l.Item.Subscriber() == t.Subscriber() && l.Item.URL == t.URL {
				row.RegisteredIn = append(row.RegisteredIn, fmt.Sprintf("%s (pid %d)", l.Process, l.PID))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func (r *runner) hooksListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the configured shell hooks (whether approved, where registered) and outbound webhooks",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := r.hookEnv()
			if err != nil {
				return err
			}
			for _, w := range e.warns {
				fmt.Fprintf(r.env.Stderr, "atrium: warning: %s\n", w)
			}
			rows, err := e.rows()
			if err != nil {
				return err
			}
			out := e.webhookRows()
			return r.print(map[string]any{"shell": rows, "outbound": out}, func(w io.Writer) {
				if len(out) > 0 {
					fmt.Fprintln(w, "OUTBOUND\tURL\tEVENTS\tSIGNED\tTIMEOUT\tDEADLINE\tREGISTERED")
					for _, o := range out {
						fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%gs\t%gh\t%s\n", o.Label(), clip(o.URL, 50), strings.Join(o.Events, ","), yesNo(o.Signed),
							o.TimeoutSeconds, o.DeadlineHours, dash(strings.Join(o.RegisteredIn, ", ")))
					}
					if len(rows) > 0 {
						fmt.Fprintln(w)
					}
				}
				if len(rows) == 0 {
					if len(out) == 0 {
						fmt.Fprintln(w, "no shell hooks and no outbound webhooks in "+e.home.ConfigPath())
					}
					return
				}
				fmt.Fprintln(w, "EVENT\tHOOK\tMATCHER\tCOMMAND\tTIMEOUT\tFAIL\tAPPROVED\tREGISTERED")
				for _, h := range rows {
					approved := "no"
					if h.Approved {
						approved = h.ApprovedAt
					}
					fail := "open"
					if h.FailClosed {
						fail = "closed"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%gs\t%s\t%s\t%s\n", h.Name, h.Event, dash(h.Matcher), clip(h.Command, 60), h.TimeoutSeconds,
						fail, approved, dash(strings.Join(h.RegisteredIn, ", ")))
				}
			})
		},
	}
}

// selectHooks picks the configured hooks an argument names: an event (the
// hook's or Claude Code's name), or a command.
func (e hookEnv) selectHooks(arg string) []shellhooks.Spec {
	var out []shellhooks.Spec
	for _, s := range e.specs {
		if arg == "" || s.Event == arg || s.Name == arg || s.Command == arg {
			out = append(out, s)
		}
	}
	return out
}

func (r *runner) hooksApproveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "approve [EVENT|COMMAND]",
		Short: "Approve configured shell hooks (all, or those of one event or command) so they run",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := r.hookEnv()
			if err != nil {
				return err
			}
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			picked := e.selectHooks(arg)
			if len(picked) == 0 {
				return apperr.New(apperr.NotFound, "no configured shell hook matches %q (see `atrium hooks list`)", arg)
			}
			n, err := e.allow.ApproveWaiting(picked, time.Now())
			if err != nil {
				return err
			}
			out := map[string]any{"approved": n, "already": len(picked) - n, "allowlist": e.allow.Path()}
			return r.print(out, func(w io.Writer) {
				fmt.Fprintf(w, "approved %d shell hook(s) (%d already were); a running plugin host takes them in at its next look\n",
					n, len(picked)-n)
			})
		},
	}
}

func (r *runner) hooksRevokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "revoke COMMAND",
		Short: "Withdraw the approval of a shell hook command (every event it had): it stops running",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := r.hookEnv()
			if err != nil {
				return err
			}
			n, err := e.allow.Revoke(args[0])
			if err != nil {
				return err
			}
			if n == 0 {
				return apperr.New(apperr.NotFound, "no approval of %q in %s", args[0], e.allow.Path())
			}
			return r.print(map[string]any{"revoked": n, "command": args[0]}, func(w io.Writer) {
				fmt.Fprintf(w, "revoked %d approval(s) of %s; a running plugin host unregisters it at its next look\n", n, args[0])
			})
		},
	}
}

// testResult is one hook's run under `hooks test`.
type testResult struct {
	Event    string             `json:"event"`
	Command  string             `json:"command"`
	Matched  bool               `json:"matched"`
	Outcome  shellhooks.Outcome `json:"outcome"`
	Answer   map[string]any     `json:"answer"`
	Problem  string             `json:"problem,omitempty"`
	Approved bool               `json:"approved"`
}

// samplePayload is a payload of hook with every field it has, for a test,
// with the fields of extra (--payload) added or replacing them.
func samplePayload(event, tool string, extra map[string]any) map[string]any {
	p := map[string]any{"session_id": "test-session", "platform": "cli", "session_key": "", "task_id": "test-task", "turn_id": "test-turn"}
	switch event {
	case hooks.PreToolCall, hooks.PostToolCall, hooks.TransformToolRes:
		p["tool_name"], p["args"], p["arguments"], p["tool_call_id"] = tool, map[string]any{}, "{}", "test-call"
		if event != hooks.PreToolCall {
			p["result"], p["status"] = "", "ok"
		}
	case hooks.PreLLMCall, hooks.PostLLMCall:
		p["user_message"], p["conversation_history"], p["is_first_turn"], p["model"] = "hello", []any{}, true, "test-model"
		if event == hooks.PreLLMCall {
			p["session_start"] = "startup"
		}
		if event == hooks.PostLLMCall {
			p["assistant_response"] = "hi"
		}
	case hooks.PreTurnEnd:
		p["user_message"], p["assistant_response"], p["continues"], p["model"], p["agent_context"] = "hello", "hi", 0, "test-model", "primary"
		p["attempt"], p["final_response"], p["coding"], p["changed_paths"] = 0, "hi", false, []any{}
	case hooks.PreApprovalDecide, hooks.PreApprovalRequest, hooks.PostApprovalResp:
		p["tool_name"], p["args"], p["tool_call_id"], p["command"] = tool, map[string]any{}, "test-call", tool+" {}"
		p["description"], p["pattern_key"], p["pattern_keys"], p["surface"], p["request_id"] = "a test approval", "test", []any{"test"}, "cli", "test-request"
		if event == hooks.PostApprovalResp {
			p["choice"], p["approved"] = "once", true
		}
	case hooks.AgentLoopStopped:
		p["session_key"], p["reason"], p["invalidation_reason"] = "cli:test-session", "user_stop", "session_interrupt"
	case hooks.OnSessionFinalize:
		p["reason"] = "exit"
	case hooks.PreCompaction, hooks.PostCompaction:
		p["kind"], p["reason"] = "summarize", "manual"
	case hooks.OnSessionDelete:
		p["reason"], p["deleted_ids"], p["profile"] = "delete", []any{"test-session"}, "default"
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func (r *runner) hooksTestCmd() *cobra.Command {
	var tool, payload string
	c := &cobra.Command{
		Use:   "test EVENT",
		Short: "Run the shell hooks of one event now with a sample payload, and show what each answered",
		Long: "Run the shell hooks configured for EVENT (Atrium's hook name or Claude Code's event name) once, as they run\n" +
			"in earnest: the same stdin, timeout and reading of the answer. Approval is not needed to test. --payload\n" +
			"adds or replaces payload fields (a JSON object). For a gateway event (agent:start, command:new, ...), the\n" +
			"gateway event hooks that listen to it get a sample context, as the running gateway would hand it.",
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if gatewayhooks.IsEvent(args[0]) {
				return r.testGatewayHooks(cmd, args[0], payload)
			}
			e, err := r.hookEnv()
			if err != nil {
				return err
			}
			var picked []shellhooks.Spec
			for _, s := range e.specs {
				if s.Event == args[0] || s.Name == args[0] {
					picked = append(picked, s)
				}
			}
			var targets []webhooks.Target
			for _, t := range e.targets {
				if slices.Contains(t.Events, args[0]) {
					targets = append(targets, t)
				}
			}
			if len(picked) == 0 && len(targets) == 0 {
				if _, known := shellhooks.ClaudeEvents[args[0]]; !known && !hooks.Known(args[0]) {
					return apperr.New(apperr.Invalid, "unknown hook event %q (known: %s)", args[0], strings.Join(hooks.Names(), ", "))
				}
				return apperr.New(apperr.NotFound, "no shell hook or outbound webhook is configured for %s", args[0])
			}
			var extra map[string]any
			if payload != "" {
				if err := json.Unmarshal([]byte(payload), &extra); err != nil {
					return apperr.New(apperr.Invalid, "--payload must be a JSON object: %v", err)
				}
			}
			env := shellhooks.Env{Dir: e.home.Dir, Profile: e.home.Profile}
			var results []testResult
			failed := 0
			for _, s := range picked {
				p := samplePayload(s.Event, tool, extra)
				res := testResult{Event: s.Name, Command: s.Command, Matched: true}
				if a, _ := e.allow.Find(s.Name, s.Command); a != nil {
					res.Approved = true
				}
				if ok, why := shellhooks.Applies(s, p); !ok {
					res.Matched, res.Problem = false, why
					results = append(results, res)
					continue
				}
				stdin, err := shellhooks.Stdin(s, env, p, "")
				if err != nil {
					return err
				}
				res.Outcome = shellhooks.Run(context.Background(), s, env, stdin)
				res.Answer, res.Problem = shellhooks.Answer(s, res.Outcome)
				if res.Outcome.Err != "" || res.Outcome.TimedOut {
					failed++
				}
				results = append(results, res)
			}
			for _, tg := range targets {
				raw, _ := json.Marshal(samplePayload(args[0], tool, extra))
				ev := hooks.Event{ID: "test-" + time.Now().UTC().Format("20060102T150405.000000"), Hook: args[0], Payload: raw, CreatedAt: time.Now()}
				res := testResult{Event: args[0], Command: "POST " + tg.URL, Matched: true, Approved: true}
				start := time.Now()
				code, err := webhooks.Try(context.Background(), tg, env, ev)
				took := time.Since(start)
				res.Outcome = shellhooks.Outcome{ExitCode: code, Elapsed: took, ElapsedMS: float64(took.Microseconds()) / 1000}
				if err != nil {
					res.Outcome.Err = err.Error()
					failed++
				}
				results = append(results, res)
			}
			err = r.print(results, func(w io.Writer) {
				for _, t := range results {
					fmt.Fprintf(w, "%s → %s\n", t.Event, t.Command)
					if !t.Matched {
						fmt.Fprintf(w, "  not run: %s\n", t.Problem)
						continue
					}
					o := t.Outcome
					switch {
					case strings.HasPrefix(t.Command, "POST ") && o.Err == "":
						fmt.Fprintf(w, "  HTTP %d in %s: taken\n", o.ExitCode, o.Elapsed.Round(time.Millisecond))
						continue
					case o.Err != "":
						fmt.Fprintf(w, "  could not run: %s\n", o.Err)
					case o.TimedOut:
						fmt.Fprintf(w, "  timed out after %s\n", o.Elapsed.Round(time.Millisecond))
					default:
						fmt.Fprintf(w, "  exit %d in %s\n", o.ExitCode, o.Elapsed.Round(time.Millisecond))
					}
					if s := strings.TrimSpace(o.Stdout); s != "" {
						fmt.Fprintf(w, "  stdout: %s\n", clip(s, 400))
					}
					if s := strings.TrimSpace(o.Stderr); s != "" {
						fmt.Fprintf(w, "  stderr: %s\n", clip(s, 400))
					}
					if t.Answer != nil {
						b, _ := json.Marshal(t.Answer)
						fmt.Fprintf(w, "  answer: %s\n", b)
					} else {
						fmt.Fprintln(w, "  answer: none")
					}
					if t.Problem != "" {
						fmt.Fprintf(w, "  problem: %s\n", t.Problem)
					}
					if !t.Approved {
						fmt.Fprintln(w, "  (not approved: it does not run in earnest)")
					}
				}
			})
			if err == nil && failed > 0 {
				return apperr.New(apperr.Rejected, "%d of %d shell hook(s) could not run or timed out", failed, len(results))
			}
			return err
		},
	}
	c.Flags().StringVar(&tool, "tool", "echo", "tool name of a tool hook's sample payload")
	c.Flags().StringVar(&payload, "payload", "", "JSON object of payload fields to add or replace")
	return c
}

// testGatewayHooks hands a sample context of a gateway event to the
// gateway event hooks that listen to it, each in a process of its own as
// the gateway runs them, and shows how each took it.
func (r *runner) testGatewayHooks(cmd *cobra.Command, event, payload string) error {
	kv, _ := gatewayhooks.Sample(event)
	if payload != "" {
		var extra map[string]any
		if err := json.Unmarshal([]byte(payload), &extra); err != nil {
			return apperr.New(apperr.Invalid, "--payload must be a JSON object: %v", err)
		}
		maps.Copy(kv, extra)
	}
	return r.with(cmd, func(ctx context.Context, st *stack.Stack) error {
		h := gatewayhooks.New(gatewayhooks.Options{Home: st.Home, Bus: st.Bus, Logger: st.Logger(), Timeout: st.Config.HookTimeout(),
			Only: func(hk gatewayhooks.Hook) bool { _, ok := hk.Takes(event); return ok }})
		if err := h.Start(ctx); err != nil {
			return err
		}
		defer func() { _ = h.Stop(context.WithoutCancel(ctx)) }()
		results := h.Deliver(ctx, event, kv)
		if len(results) == 0 {
			return apperr.New(apperr.NotFound, "no gateway event hook in %s listens to %s, or none could load (see the warnings above, and `atrium hooks doctor`)",
				gatewayhooks.Dir(st.Home), event)
		}
		failed := 0
		for _, x := range results {
			if x.Error != "" {
				failed++
			}
		}
		err := r.print(results, func(w io.Writer) {
			for _, x := range results {
				fmt.Fprintf(w, "%s → gateway hook %s (%s)\n", event, x.Hook, x.Pattern)
				if x.Error != "" {
					fmt.Fprintf(w, "  failed after %s: %s\n", x.Elapsed.Round(time.Millisecond), x.Error)
				} else {
					fmt.Fprintf(w, "  handled in %s\n", x.Elapsed.Round(time.Millisecond))
				}
			}
		})
		if err == nil && failed > 0 {
			return apperr.New(apperr.Rejected, "%d of %d gateway hook(s) failed", failed, len(results))
		}
		return err
	})
}

// doctorFinding is one problem `hooks doctor` found.
type doctorFinding struct {
	Event   string `json:"event,omitempty"`
	Command string `json:"command,omitempty"`
	Problem string `json:"problem"`
}

func (r *runner) hooksDoctorCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the shell hooks (config, approvals, scripts, what the running plugin host really registered) and the gateway event hooks",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := r.hookEnv()
			if err != nil {
				return err
			}
			findings := []doctorFinding{}
			for _, w := range e.warns {
				findings = append(findings, doctorFinding{Problem: w})
			}
			rows, err := e.rows()
			if err != nil {
				return err
			}
			approvals, _ := e.allow.Load()
			hosts := plugins.LiveShellHosts(e.home)
			accept := plugins.AcceptHooks(e.cfg)
			for _, h := range rows {
				add := func(format string, a ...any) {
					findings = append(findings, doctorFinding{Event: h.Name, Command: h.Command, Problem: fmt.Sprintf(format, a...)})
				}
				if p := scriptProblem(e.home.Dir, h.Spec); p != "" {
					add("%s", p)
				}
				switch {
				case !h.Approved && !accept:
					add("not approved: it does not run (`atrium hooks approve`)")
				case h.Approved:
					for _, a := range approvals {
						if a.Event == h.Name && a.Command == h.Command && a.ScriptTime != nil {
							if now := shellhooks.ScriptTime(e.home.Dir, h.Command); now != nil && *now != *a.ScriptTime {
								add("its script changed since it was approved (%s, now %s): check it, then approve it again", *a.ScriptTime, *now)
							}
						}
					}
				}
				if (h.Approved || accept) && len(hosts) > 0 && len(h.RegisteredIn) == 0 {
					add("approved, but not registered in the running %s: it does not run there (is its config.yaml read? see logs/host.log)",
						strings.Join(hosts, ", "))
				}
			}
			for _, o := range e.webhookRows() {
				if len(hosts) > 0 && len(o.RegisteredIn) == 0 {
					findings = append(findings, doctorFinding{Event: strings.Join(o.Events, ","), Command: "POST " + o.URL,
						Problem: fmt.Sprintf("not registered in the running %s: its events wait in the log", strings.Join(hosts, ", "))})
				}
			}
			for _, l := range plugins.LiveShellHooks(e.home) {
				if !slices.ContainsFunc(rows, func(h plugins.HookStatus) bool { return h.Name == l.Item.Name && h.Command == l.Item.Command }) {
					findings = append(findings, doctorFinding{Event: l.Item.Name, Command: l.Item.Command,
						Problem: fmt.Sprintf("registered in %s (pid %d) but no longer configured: it runs until that process looks again", l.Process, l.PID)})
				}
			}
			// The gateway event hooks of <home>/hooks/: what the gateway
			// leaves out, and handlers that could not load (read, not run).
			found, skipped := gatewayhooks.Discover(gatewayhooks.Dir(e.home))
			for _, err := range skipped {
				findings = append(findings, doctorFinding{Event: "gateway hook", Problem: err.Error()})
			}
			for _, h := range found {
				if err := gatewayhooks.Check(cmd.Context(), "", h); err != nil {
					findings = append(findings, doctorFinding{Event: "gateway hook", Command: "hooks/" + h.Folder, Problem: err.Error()})
				}
			}
			out := map[string]any{"hooks": len(rows), "gateway_hooks": len(found), "hosts": hosts, "problems": findings}
			err = r.print(out, func(w io.Writer) {
				fmt.Fprintf(w, "%d shell hook(s) configured in %s\n", len(rows), e.home.ConfigPath())
				if len(found)+len(skipped) > 0 {
					fmt.Fprintf(w, "%d gateway event hook(s) in %s\n", len(found), gatewayhooks.Dir(e.home))
				}
				if len(hosts) == 0 {
					fmt.Fprintln(w, "no plugin host runs now: approved hooks are registered when a command that fires them starts one")
				} else {
					fmt.Fprintf(w, "live registry: %s\n", strings.Join(hosts, ", "))
				}
				for _, f := range findings {
					if f.Command != "" {
						fmt.Fprintf(w, "problem: %s → %s: %s\n", f.Event, f.Command, f.Problem)
					} else {
						fmt.Fprintf(w, "problem: %s\n", f.Problem)
					}
				}
				if len(findings) == 0 {
					fmt.Fprintln(w, "no problems found")
				}
			})
			if err == nil && len(findings) > 0 {
				return apperr.New(apperr.Rejected, "%d problem(s) with the hooks", len(findings))
			}
			return err
		},
	}
}

// scriptProblem says what is wrong with the program or script a hook
// runs, as far as can be seen without running it.
func scriptProblem(dir string, s shellhooks.Spec) string {
	script := shellhooks.ScriptPath(s.Command)
	if s.Dialect == shellhooks.Claude && !shellhooks.IsScript(script) {
		return "" // a shell command line: the shell finds its programs
	}
	if strings.Contains(script, "$") {
		return "" // the shell expands it
	}
	path := shellhooks.Resolve(dir, script)
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Sprintf("%s not found (looked for %s)", script, path)
	case info.IsDir():
		return fmt.Sprintf("%s is a folder", path)
	}
	words := strings.Fields(s.Command)
	if s.Dialect == shellhooks.Hermes && len(words) > 0 && words[0] == script && info.Mode()&0o111 == 0 {
		return fmt.Sprintf("%s is not executable (chmod +x it, or name its interpreter first)", path)
	}
	return ""
}
