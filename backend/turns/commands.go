package turns

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
	"atrium/backend/tools"
)

type switchKey struct{}

// command runs a slash command for the calling session and follows the
// conversation if the command moved it (/new, or a /compress that rotated).
func (l *Loop) command(ctx context.Context, name, args string, cc hooks.CommandContext) (Turn, error) {
	t := Turn{SessionID: cc.SessionID, Command: name}
	if err := l.preCommand(ctx, name, args, cc); err != nil {
		return t, err
	}
	if name == "undo" {
		if err := l.alone(cc.SessionID); err != nil {
			return t, err
		}
	}
	next := new(string)
	out, err := l.bus.RunCommand(context.WithValue(ctx, switchKey{}, next), name, args, cc)
	t.Output = out
	if err != nil {
		return t, err
	}
	if *next != "" {
		t.SessionID = *next
		return t, nil
	}
	if tip, err := l.Continuation(ctx, cc.SessionID); err == nil && tip != cc.SessionID {
		t.SessionID, t.Rotated = tip, true
		l.carryOn(cc.Platform, cc.SessionKey, cc.SessionID, tip)
	}
	return t, nil
}

// preCommand tells pre_command of a recognized command before its handler
// runs.
func (l *Loop) preCommand(ctx context.Context, name, args string, cc hooks.CommandContext) error {
	if _, known := l.bus.Commands().Lookup(name); !known || !l.bus.HasSync(hooks.PreCommand) {
		return nil
	}
	_, err := l.bus.CallSync(ctx, hooks.PreCommand, hooks.PreCommandPayload{Surface: cc.Platform, Command: name,
		AliasUsed: nil, ArgsRaw: args, SessionKey: cc.SessionKey, Platform: cc.Platform, SessionID: cc.SessionID})
	return err
}

// alone refuses to rewrite sessionID's transcript (/undo, /retry) while
// another turn runs in it, in any process of the profile (the command's
// own Send is one).
func (l *Loop) alone(sessionID string) error {
	if l.opts.Runs == nil {
		return nil
	}
	running, err := l.opts.Runs.Running(sessionID)
	if err != nil || len(running) <= 1 {
		return nil
	}
	return apperr.New(apperr.Conflict, "a turn is running in this session (in %s): wait for it to end, or stop it, then try again", running[0].Where())
}

// retry takes back the session's last exchange (as /undo does) and returns
// the person's message, for the turn that sends it again (the familiar
// /retry).
func (l *Loop) retry(ctx context.Context, args string, cc hooks.CommandContext) (string, error) {
	if strings.TrimSpace(args) != "" {
		return "", apperr.New(apperr.Invalid, "usage: /retry (it sends your last message again)")
	}
	if err := l.preCommand(ctx, "retry", args, cc); err != nil {
		return "", err
	}
	if err := l.alone(cc.SessionID); err != nil {
		return "", err
	}
	u, err := (&lifecycle{bus: l.bus, sessions: l.sessions, memory: l.opts.MemoryProvider}).undo(ctx, cc, 1)
	if err != nil {
		return "", err
	}
	return u.LastText, nil
}

// Continuation follows a compression chain from id to its live tip.
func (l *Loop) Continuation(ctx context.Context, id string) (string, error) {
	chain, err := l.sessions.Lineage(ctx, id)
	if err != nil {
		return "", err
	}
	return chain[len(chain)-1].ID, nil
}

// CommandOptions configure the lifecycle commands.
type CommandOptions struct {
	// MemoryProvider is memory.provider: /new and /exit tell it the session
	// ended (on_session_end) and /new that the conversation moved
	// (on_session_switch, reset).
	MemoryProvider string
	// Model says the model a turn would ask now, for /status ("" leaves
	// it out).
	Model func() string
	// SkillCommands are the skills' commands on a platform (name,
	// description), none a registered command's name, for /help (nil:
	// none).
	SkillCommands func(platform string) [][2]string
}

// RegisterCommands adds the lifecycle commands the turn loop owns (/new
// and the familiar /reset, /exit, /status, /title, /help) to the bus's
// registry. Call it before plugins register, so
// no plugin can take their names. It is idempotent.
func RegisterCommands(bus *hooks.Bus, s *sessions.Service, o CommandOptions) error {
	c := &lifecycle{bus: bus, sessions: s, memory: o.MemoryProvider, model: o.Model, skills: o.SkillCommands}
	cmds := bus.Commands()
	for _, cmd := range []struct {
		name, desc, hint string
		fn               hooks.ContextCommand
	}{
		{"new", "end this session and start a fresh one in the same conversation", "", c.cmdNew},
		{"reset", "the same as /new", "", c.cmdNew},
		{"exit", "end this session; --delete also deletes it", "[--delete]", c.cmdExit},
		{"status", "this session: its id, title, messages, context and model", "", c.cmdStatus},
		{"undo", "take back your last message and what answered it (N: the last N)", "[N]", c.cmdUndo},
		{"retry", "send your last message again, its answer taken back", "", c.cmdRetry},
		{"title", "show this session's title, or set it", "[TITLE]", c.cmdTitle},
		{"help", "list the commands", "", c.cmdHelp},
	} {
		if _, exists := cmds.Lookup(cmd.name); exists {
			continue
		}
		if err := cmds.RegisterBuiltinHint(cmd.name, cmd.desc, cmd.hint, cmd.fn); err != nil {
			return err
		}
	}
	return nil
}

type lifecycle struct {
	bus      *hooks.Bus
	sessions *sessions.Service
	memory   string
	model    func() string
	skills   func(platform string) [][2]string
}

// tellMemory tells the memory provider about a session boundary; a failure
// is logged, never the command's.
func (l *lifecycle) tellMemory(ctx context.Context, cc hooks.CommandContext, sessionID, method string, args []any, kwargs map[string]any) {
	c, ok := l.bus.MemoryProvider(l.memory)
	if !ok {
		return
	}
	call := hooks.MemoryCall{Args: args, Kwargs: kwargs, SessionID: sessionID, Platform: cc.Platform, SessionKey: cc.SessionKey,
		AgentContext: AgentContextOf(cc)}
	if cc.Source != nil {
		call.UserID = cc.Source.UserID
	}
	if _, err := l.bus.CallMemory(ctx, c, method, call); err != nil {
		slog.Warn("memory provider call failed", "provider", c.Name, "method", method, "error", err)
	}
}

// endEngine tells the context engine a session ended (on_session_end with
// its messages): the plugin's runner calls the session's copy, if it
// started one, and drops it (after /new the next session gets a fresh copy,
// which is what on_session_reset gives in the familiar API). A failure is
// logged.
func (l *lifecycle) endEngine(ctx context.Context, cc hooks.CommandContext, sessionID string) {
	c, ok := l.bus.ContextEngine()
	if !ok {
		return
	}
	call := hooks.EngineCall{Args: []any{sessionID, l.transcript(ctx, sessionID)}, SessionID: sessionID, Platform: cc.Platform,
		SessionKey: cc.SessionKey}
	l.bus.TellEngine(ctx, c, "on_session_end", call)
}

func (l *lifecycle) transcript(ctx context.Context, id string) []map[string]any {
	ms, err := l.sessions.Messages(ctx, id, false)
	if err != nil {
		return []map[string]any{}
	}
	return storedPayload(ms)
}

func (l *lifecycle) cmdNew(ctx context.Context, _ string, cc hooks.CommandContext) (string, error) {
	old, err := l.sessions.Get(ctx, cc.SessionID)
	if err != nil {
		return "", err
	}
	next, err := l.sessions.Create(ctx, sessions.CreateParams{Title: old.Title, Source: old.Source,
		Platform: old.Platform, SenderID: old.SenderID, SenderName: old.SenderName})
	if err != nil {
		return "", err
	}
	if !old.Ended() {
		l.tellMemory(ctx, cc, old.ID, "on_session_end", []any{l.transcript(ctx, old.ID)}, nil)
		l.endEngine(ctx, cc, old.ID)
		if _, _, err := l.sessions.EndWith(ctx, old.ID, "new", sessions.EndInfo{Platform: cc.Platform, NewSessionID: next.ID}); err != nil {
			return "", err
		}
	}
	if err := l.sessions.Reset(ctx, old.ID, next.ID, cc.Platform); err != nil {
		return "", err
	}
	l.tellMemory(ctx, cc, next.ID, "on_session_switch", []any{next.ID}, map[string]any{"parent_session_id": old.ID,
		"reset": true, "rewound": false})
	if box, ok := ctx.Value(switchKey{}).(*string); ok {
		*box = next.ID
	}
	return "Started a new session; the previous one has ended and stays in your list.", nil
}

func (l *lifecycle) cmdExit(ctx context.Context, args string, cc hooks.CommandContext) (string, error) {
	switch strings.TrimSpace(args) {
	case "":
		if cur, err := l.sessions.Get(ctx, cc.SessionID); err == nil && !cur.Ended() {
			l.tellMemory(ctx, cc, cc.SessionID, "on_session_end", []any{l.transcript(ctx, cc.SessionID)}, nil)
			l.endEngine(ctx, cc, cc.SessionID)
		}
		s, changed, err := l.sessions.EndWith(ctx, cc.SessionID, "exit", sessions.EndInfo{Platform: cc.Platform})
		if err != nil {
			return "", err
		}
		_ = s
		if !changed {
			return "This session had already ended.", nil
		}
		return "Session ended.", nil
	case "--delete":
		res, err := l.sessions.DeleteCurrent(ctx, cc.SessionID, false)
		if err != nil {
			return "", err
		}
		return describeDelete(res), nil
	}
	return "", apperr.New(apperr.Invalid, "usage: /exit [--delete]")
}

// describeDelete says in plain words what /exit --delete did.
func describeDelete(res sessions.Result) string {
	more := ""
	if n := len(res.AffectedIDs) - 1; n > 0 {
		more = fmt.Sprintf(" (with %d linked session(s))", n)
	}
	if res.Trashed && res.PurgeAfter != nil {
		return fmt.Sprintf("Moved this session%s to the trash; you can restore it until %s.", more, res.PurgeAfter.Local().Format("2 Jan 2006"))
	}
	return "Deleted this session" + more + "."
}

// cmdStatus says what this session is, as the familiar gateway's /status
// does: its id and title, where and when it started, its messages and the
// context they take (estimated), and the model a turn asks now.
func (l *lifecycle) cmdStatus(ctx context.Context, _ string, cc hooks.CommandContext) (string, error) {
	s, err := l.sessions.Get(ctx, cc.SessionID)
	if err != nil {
		return "", err
	}
	title := s.Title
	if title == "" {
		title = "(no title)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Session %s: %s\n", s.ID, title)
	where := s.Platform
	if where == "" {
		where = s.Source
	}
	fmt.Fprintf(&b, "Started %s on %s; last active %s\n", s.StartedAt.Local().Format("2 Jan 2006 15:04"), where,
		s.LastActivityAt.Local().Format("2 Jan 2006 15:04"))
	fmt.Fprintf(&b, "%d messages, about %d tokens of context", s.MessageCount, s.TokenCount)
	if s.ChainRoot != nil && *s.ChainRoot != s.ID {
		fmt.Fprintf(&b, " (it continues %s, compacted)", *s.ChainRoot)
	}
	if s.Ended() {
		fmt.Fprintf(&b, "\nEnded (%s)", s.EndReason)
	}
	if l.model != nil {
		if m := l.model(); m != "" {
			fmt.Fprintf(&b, "\nModel: %s", m)
		}
	}
	return b.String(), nil
}

// cmdUndo takes back the last N exchanges (the familiar /undo N).
func (l *lifecycle) cmdUndo(ctx context.Context, args string, cc hooks.CommandContext) (string, error) {
	n := 1
	if a := strings.TrimSpace(args); a != "" {
		v, err := strconv.Atoi(a)
		if err != nil || v < 1 || v > 1000 {
			return "", apperr.New(apperr.Invalid, "usage: /undo [N]: N, the exchanges to take back, 1 to 1000, not %q", clip(a, 20))
		}
		n = v
	}
	u, err := l.undo(ctx, cc, n)
	if err != nil {
		return "", err
	}
	what := "your last message"
	if u.Exchanges > 1 {
		what = fmt.Sprintf("your last %d messages", u.Exchanges)
	}
	return fmt.Sprintf("Took back %s and what answered (%d messages; they stay in the store, out of the conversation): %q", what, u.Messages, clip(u.LastText, 80)), nil
}

// cmdRetry is /retry outside a turn loop's Send (which runs it: retry),
// where there is no turn to send the message again in.
func (l *lifecycle) cmdRetry(context.Context, string, hooks.CommandContext) (string, error) {
	return "", apperr.New(apperr.Rejected, "/retry runs in a conversation, where a message can be sent again")
}

// undo takes back the last n exchanges of the session and tells the memory
// provider the transcript was cut (on_session_switch, rewound: the same
// session).
func (l *lifecycle) undo(ctx context.Context, cc hooks.CommandContext, n int) (sessions.Undone, error) {
	u, err := l.sessions.Undo(ctx, cc.SessionID, n)
	if err != nil {
		return u, err
	}
	l.tellMemory(ctx, cc, cc.SessionID, "on_session_switch", []any{cc.SessionID}, map[string]any{"reset": false, "rewound": true})
	return u, nil
}

// cmdTitle shows this session's title, or sets it (the familiar /title).
func (l *lifecycle) cmdTitle(ctx context.Context, args string, cc hooks.CommandContext) (string, error) {
	title := strings.TrimSpace(args)
	if title == "" {
		s, err := l.sessions.Get(ctx, cc.SessionID)
		if err != nil {
			return "", err
		}
		if s.Title == "" {
			return "This session has no title yet; /title TITLE gives it one.", nil
		}
		return "Title: " + s.Title, nil
	}
	s, err := l.sessions.Rename(ctx, cc.SessionID, title)
	if err != nil {
		return "", err
	}
	return "Title set: " + s.Title, nil
}

func (l *lifecycle) cmdHelp(_ context.Context, _ string, cc hooks.CommandContext) (string, error) {
	var b strings.Builder
	for _, c := range l.bus.Commands().List() {
		owner := ""
		if c.Plugin != "" {
			owner = " (" + c.Plugin + ")"
		}
		hint := ""
		if c.ArgsHint != "" {
			hint = " " + c.ArgsHint
		}
		fmt.Fprintf(&b, "/%s%s - %s%s\n", c.Name, hint, c.Description, owner)
	}
	out := strings.TrimRight(b.String(), "\n")
	if l.skills == nil {
		return out, nil
	}
	// A skill's command runs it: its SKILL.md is sent in the person's
	// place.
	var skills []string
	for _, sc := range l.skills(cc.Platform) {
		desc := []rune(strings.Join(strings.Fields(sc[1]), " "))
		if len(desc) > 80 {
			desc = append(desc[:77], []rune("...")...)
		}
		skills = append(skills, fmt.Sprintf("/%s [instruction] - %s", sc[0], string(desc)))
	}
	if len(skills) > 0 {
		out += "\n\nSkills:\n" + strings.Join(skills, "\n")
		if _, taken := l.bus.Commands().Lookup("skill"); !taken {
			out += "\n/skill NAME [instruction] - run a skill by its name (one named as a command too)"
		}
	}
	return out, nil
}

// skillCommand is the message a person's /<name> sends in their place when
// name is no command of the registry but a skill's offered on their
// platform (tools.Skills.Invocation): the skill's SKILL.md, and args as
// their instruction. /skill NAME [instruction] runs the skill NAME, also
// one whose own command a registered one takes.
func (l *Loop) skillCommand(ctx context.Context, name, args string, cc hooks.CommandContext) (string, bool) {
	if l.opts.Machine == nil {
		return "", false
	}
	if _, known := l.bus.Commands().Lookup(name); known {
		return "", false
	}
	if name == "skill" {
		// /skill NAME [instruction], as the familiar agent runs a skill
		// whose own command a built-in one takes.
		name, args, _ = strings.Cut(strings.TrimSpace(args), " ")
		if name == "" {
			return "", false
		}
	}
	msg, granted, ok := l.opts.Machine().Skills.Invocation(ctx, tools.SkillCommand(name), args, cc.Platform, l.opts.AskSecret)
	l.skillEnv.Add(cc.SessionKey, granted...)
	return msg, ok
}
