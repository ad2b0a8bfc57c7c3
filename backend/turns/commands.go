package turns

import (
	"context"
	"fmt"
	"strings"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
	"atrium/backend/sessions"
)

type switchKey struct{}

// command runs a slash command for the calling session and follows the
// conversation if the command moved it (/new, or a /compress that rotated).
func (l *Loop) command(ctx context.Context, name, args string, cc hooks.CommandContext) (Turn, error) {
	t := Turn{SessionID: cc.SessionID, Command: name}
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
	}
	return t, nil
}

// Continuation follows a compression chain from id to its live tip.
func (l *Loop) Continuation(ctx context.Context, id string) (string, error) {
	chain, err := l.sessions.Lineage(ctx, id)
	if err != nil {
		return "", err
	}
	return chain[len(chain)-1].ID, nil
}

func (l *Loop) registerCommands() error { return RegisterCommands(l.bus, l.sessions) }

// RegisterCommands adds the lifecycle commands the turn loop owns (/new,
// /exit, /help) to the bus's registry. Call it before plugins register, so
// no plugin can take their names. It is idempotent.
func RegisterCommands(bus *hooks.Bus, s *sessions.Service) error {
	c := &lifecycle{bus: bus, sessions: s}
	cmds := bus.Commands()
	for _, cmd := range []struct {
		name, desc string
		fn         hooks.ContextCommand
	}{
		{"new", "end this session and start a fresh one in the same conversation", c.cmdNew},
		{"exit", "end this session; /exit --delete deletes it", c.cmdExit},
		{"help", "list the commands", c.cmdHelp},
	} {
		if _, exists := cmds.Lookup(cmd.name); exists {
			continue
		}
		if err := cmds.RegisterBuiltin(cmd.name, cmd.desc, cmd.fn); err != nil {
			return err
		}
	}
	return nil
}

type lifecycle struct {
	bus      *hooks.Bus
	sessions *sessions.Service
}

func (l *lifecycle) cmdNew(ctx context.Context, _ string, cc hooks.CommandContext) (string, error) {
	old, err := l.sessions.Get(ctx, cc.SessionID)
	if err != nil {
		return "", err
	}
	if !old.Ended() {
		if _, _, err := l.sessions.End(ctx, old.ID, "new"); err != nil {
			return "", err
		}
	}
	next, err := l.sessions.Create(ctx, sessions.CreateParams{Title: old.Title, Source: old.Source})
	if err != nil {
		return "", err
	}
	if err := l.sessions.Reset(ctx, old.ID, next.ID, cc.Platform); err != nil {
		return "", err
	}
	if box, ok := ctx.Value(switchKey{}).(*string); ok {
		*box = next.ID
	}
	return "Started a new session; the previous one has ended and stays in your list.", nil
}

func (l *lifecycle) cmdExit(ctx context.Context, args string, cc hooks.CommandContext) (string, error) {
	switch strings.TrimSpace(args) {
	case "":
		s, changed, err := l.sessions.End(ctx, cc.SessionID, "exit")
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

func (l *lifecycle) cmdHelp(_ context.Context, _ string, _ hooks.CommandContext) (string, error) {
	var b strings.Builder
	for _, c := range l.bus.Commands().List() {
		owner := ""
		if c.Plugin != "" {
			owner = " (" + c.Plugin + ")"
		}
		fmt.Fprintf(&b, "/%s - %s%s\n", c.Name, c.Description, owner)
	}
	return strings.TrimRight(b.String(), "\n"), nil
}
