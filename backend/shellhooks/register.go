package shellhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"atrium/backend/hooks"
)

// SubscriberPrefix starts the bus subscriber name of a hook command:
// "shell:" and the command. One command is one subscriber, whatever
// events it takes: its observer events reach it in commit order, and a
// command that hangs holds back no other.
const SubscriberPrefix = "shell:"

// Subscriber is the bus subscriber name of command.
func Subscriber(command string) string { return SubscriberPrefix + command }

// Transcripts writes a session's JSONL export for Claude Code hooks and
// returns its path ("" when the session has none).
type Transcripts func(ctx context.Context, sessionID string) (string, error)

// Options configure a Registry.
type Options struct {
	Bus         *hooks.Bus
	Env         Env
	Transcripts Transcripts // nil: transcript_path is ""
	Logger      *slog.Logger
}

// Registered is one hook registered on the bus here.
type Registered struct {
	Event      string `json:"event"`
	Name       string `json:"name"`
	Command    string `json:"command"`
	Matcher    string `json:"matcher,omitempty"`
	Subscriber string `json:"subscriber"`
}

// Registry keeps the shell hooks registered on one bus in line with the
// specs it is given.
type Registry struct {
	o     Options
	log   *slog.Logger
	group hooks.Group[Registered]
}

// NewRegistry makes an empty registry.
func NewRegistry(o Options) *Registry {
	lg := o.Logger
	if lg == nil {
		lg = slog.Default()
	}
	return &Registry{o: o, log: lg}
}

// Apply registers exactly specs (unregistering what it registered before,
// when they changed) and returns the subscriber names in use. A spec the
// bus refuses is reported in the error; the others are registered.
func (r *Registry) Apply(specs []Spec) ([]string, error) {
	b, _ := json.Marshal(specs)
	_, err := r.group.Replace(string(b), func() ([]*hooks.Context, []Registered, error) {
		var ctxs []*hooks.Context
		var regs []Registered
		byCmd := map[string]*hooks.Context{}
		var errs []error
		for _, s := range specs {
			sub := Subscriber(s.Command)
			c := byCmd[sub]
			if c == nil {
				c = r.o.Bus.Plugin(sub)
				byCmd[sub] = c
				ctxs = append(ctxs, c)
			}
			kind, err := hooks.Lookup(s.Event)
			if err == nil {
				if kind == hooks.Sync {
					err = c.RegisterSync(s.Event, r.syncHandler(s))
				} else {
					err = c.RegisterHook(s.Event, r.observer(s))
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("shell hook %s (%s): %w", s.Name, s.Command, err))
				continue
			}
			regs = append(regs, Registered{Event: s.Event, Name: s.Name, Command: s.Command, Matcher: s.Matcher, Subscriber: sub})
		}
		return ctxs, regs, errors.Join(errs...)
	})
	return r.group.Names(), err
}

// Registered lists what is registered here.
func (r *Registry) Registered() []Registered { return r.group.Items() }

// Close unregisters everything.
func (r *Registry) Close() { r.group.Close() }

// run runs s for one payload, unless its matcher leaves the tool out.
func (r *Registry) run(ctx context.Context, s Spec, raw json.RawMessage) (Outcome, bool, error) {
	var p map[string]any
	if err := json.Unmarshal(raw, &p); err != nil {
		return Outcome{}, false, fmt.Errorf("payload of %s: %w", s.Event, err)
	}
	if ok, _ := Applies(s, p); !ok {
		return Outcome{}, false, nil
	}
	transcript := ""
	if s.Dialect == Claude && r.o.Transcripts != nil {
		if sid := SessionOf(p); sid != "" {
			path, err := r.o.Transcripts(ctx, sid)
			if err != nil {
				r.log.Warn("shell hook transcript", "session", sid, "error", err)
			}
			transcript = path
		}
	}
	stdin, err := Stdin(s, r.o.Env, p, transcript)
	if err != nil {
		return Outcome{}, false, err
	}
	// A hook answers by its own deadline, inside the bus's callback
	// bound: one that hangs fails open (or closed, with fail_closed) by
	// its own rule, not by the bus's.
	s.Timeout = r.o.Bus.Within(s.Timeout)
	return Run(ctx, s, r.o.Env, stdin), true, nil
}

// Applies reports whether s runs for payload p, and when it does not, why:
// a tool its matcher leaves out; for Claude Code's SessionStart, a turn
// that does not begin the context anew or a source its matcher leaves out;
// for its Stop, a delegate child's turn (Claude Code's Stop is the main
// agent's); for PostToolUse a tool call that did not succeed, for
// PostToolUseFailure one that did not fail (a blocked call ran neither).
func Applies(s Spec, p map[string]any) (bool, string) {
	if s.Dialect == Claude {
		switch s.Name {
		case "SessionStart":
			src, _ := p["session_start"].(string)
			if src == "" {
				return false, "this turn does not begin the session's context anew (session_start is empty)"
			}
			if s.Matcher != "" && !s.Matches(src) {
				return false, fmt.Sprintf("its matcher leaves out source %q", src)
			}
			return true, ""
		case "Notification":
			if s.Matcher != "" && !s.Matches(notifyPermission) {
				return false, fmt.Sprintf("its matcher leaves out notification type %q", notifyPermission)
			}
			return true, ""
		case "Stop":
			if p["agent_context"] == "subagent" {
				return false, "Stop is the main agent's, and this is a delegate child's turn"
			}
		case "PostToolUse", "PostToolUseFailure":
			want := map[string]string{"PostToolUse": "ok", "PostToolUseFailure": "error"}[s.Name]
			if st, _ := p["status"].(string); st != want {
				return false, fmt.Sprintf("%s is for a tool call whose status is %q; this one's is %q", s.Name, want, st)
			}
		}
	}
	if s.Matcher != "" {
		tool, _ := p["tool_name"].(string)
		if !s.Matches(tool) {
			return false, fmt.Sprintf("its matcher leaves out tool %q", tool)
		}
	}
	return true, ""
}

func (r *Registry) syncHandler(s Spec) hooks.SyncHandler {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		o, ran, err := r.run(ctx, s, raw)
		if err != nil || !ran {
			return nil, err
		}
		a, note := Answer(s, o)
		if note != "" {
			r.log.Warn("shell hook", "event", s.Name, "command", s.Command, "problem", note)
		}
		if a == nil {
			return nil, nil
		}
		return a, nil
	}
}

func (r *Registry) observer(s Spec) hooks.Handler {
	return func(ctx context.Context, ev hooks.Event) error {
		o, ran, err := r.run(ctx, s, ev.Payload)
		if err != nil || !ran {
			return err
		}
		switch {
		case o.Err != "":
			return errors.New(o.Err)
		case o.TimedOut:
			return fmt.Errorf("timed out after %s", s.Timeout.Round(time.Millisecond))
		case o.ExitCode != 0:
			return fmt.Errorf("exited %d: %s", o.ExitCode, clip(strings.TrimSpace(o.Stderr), 400))
		}
		return nil
	}
}
