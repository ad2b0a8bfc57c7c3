package hooks

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"atrium/backend/apperr"
)

// Source is the identity a gateway adapter derived for the caller. It is
// identity, not authorisation: a sensitive command decides from the stable
// ids (UserID, ChatID) and refuses by default when Source is nil, which it is
// on local surfaces (the command line, the desktop, the dashboard).
type Source struct {
	UserID   string `json:"user_id,omitempty"`
	ChatID   string `json:"chat_id,omitempty"`
	ThreadID string `json:"thread_id,omitempty"`
	ChatType string `json:"chat_type,omitempty"`
	UserName string `json:"user_name,omitempty"`
	// PerUser: the conversation is the sender's own inside a shared chat
	// (the familiar group_sessions_per_user): its key ends in their id.
	PerUser bool `json:"-"`
}

// CommandContext tells a command which session called it.
type CommandContext struct {
	SessionID  string  `json:"session_id"`
	SessionKey string  `json:"session_key"` // <platform>:<chat_type>:<chat_id>[:<thread_id>][:<user_id>] or <platform>:<session_id>
	Platform   string  `json:"platform"`    // cli, desktop, dashboard, or a gateway's name
	Source     *Source `json:"source"`      // nil on local surfaces
}

// LocalContext builds the context of a local surface.
func LocalContext(platform, sessionID string) CommandContext {
	return CommandContext{SessionID: sessionID, SessionKey: platform + ":" + sessionID, Platform: platform}
}

// GatewayContext builds the context of a gateway message.
func GatewayContext(platform, sessionID string, src Source) CommandContext {
	key := platform + ":" + src.ChatType + ":" + src.ChatID
	if src.ThreadID != "" {
		key += ":" + src.ThreadID
	}
	if src.PerUser && src.UserID != "" {
		key += ":" + src.UserID
	}
	return CommandContext{SessionID: sessionID, SessionKey: key, Platform: platform, Source: &src}
}

// Handler shapes a command may have.
type (
	// PlainCommand gets the raw argument string only, as commands always did.
	PlainCommand func(args string) (string, error)
	// ContextCommand also gets the calling session's context and a ctx that
	// carries the timeout.
	ContextCommand func(ctx context.Context, args string, cc CommandContext) (string, error)
)

// Command is a registered slash command.
type Command struct {
	Name        string
	Description string
	ArgsHint    string // e.g. "<file>": shown in /help and the composer
	Plugin      string // "" for built-ins
	fn          ContextCommand
}

// Commands is the name-keyed registry of slash commands. It knows no domain
// package: each built-in is registered by the package that owns what it does.
type Commands struct {
	mu      sync.RWMutex
	byName  map[string]*Command
	builtin map[string]bool
	remote  Remote // the plugin host, for a client: its plugin commands
}

func (c *Commands) setRemote(r Remote) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remote = r
}

func (c *Commands) remoteOf() Remote {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.remote
}

// NewCommands makes an empty registry.
func NewCommands() *Commands {
	return &Commands{byName: map[string]*Command{}, builtin: map[string]bool{}}
}

// NormalizeCommand lower-cases a name, strips a leading '/' and turns
// spaces into '-', as the familiar plugin API does.
func NormalizeCommand(name string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(strings.TrimSpace(name), "/")), " ", "-")
}

func validName(n string) bool {
	if n == "" || len(n) > 32 {
		return false
	}
	for _, r := range n {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// adapt turns any supported handler shape into a ContextCommand.
func adapt(handler any) (ContextCommand, error) {
	switch h := handler.(type) {
	case ContextCommand:
		return h, nil
	case func(context.Context, string, CommandContext) (string, error):
		return h, nil
	case PlainCommand:
		return func(_ context.Context, args string, _ CommandContext) (string, error) { return h(args) }, nil
	case func(string) (string, error):
		return func(_ context.Context, args string, _ CommandContext) (string, error) { return h(args) }, nil
	case func(string) string:
		return func(_ context.Context, args string, _ CommandContext) (string, error) { return h(args), nil }, nil
	case func(CommandContext, string) (string, error):
		return func(_ context.Context, args string, cc CommandContext) (string, error) { return h(cc, args) }, nil
	}
	return nil, apperr.New(apperr.Invalid, "unsupported command handler type %T: use func(args string) (string, error) or func(ctx, args string, cc hooks.CommandContext) (string, error)", handler)
}

func (c *Commands) add(name, description, argsHint, plugin string, handler any, builtin bool) error {
	n := NormalizeCommand(name)
	if !validName(n) {
		return apperr.New(apperr.Invalid, "invalid command name %q: letters, digits, '-' or '_', at most 32", name)
	}
	if handler == nil {
		return apperr.New(apperr.Invalid, "command /%s has no handler", n)
	}
	fn, err := adapt(handler)
	if err != nil {
		return fmt.Errorf("command /%s: %w", n, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.builtin[n] {
		return apperr.New(apperr.Conflict, "command /%s is built in; a plugin cannot shadow it", n)
	}
	if old, ok := c.byName[n]; ok {
		return apperr.New(apperr.Conflict, "command /%s is already registered by %s", n, ownerName(old.Plugin))
	}
	c.byName[n] = &Command{Name: n, Description: description, ArgsHint: strings.TrimSpace(argsHint), Plugin: plugin, fn: fn}
	if builtin {
		c.builtin[n] = true
	}
	return nil
}

func ownerName(p string) string {
	if p == "" {
		return "atrium"
	}
	return "plugin " + p
}

// RegisterBuiltin adds a built-in command; plugins can never take its name.
func (c *Commands) RegisterBuiltin(name, description string, handler any) error {
	return c.add(name, description, "", "", handler, true)
}

// RegisterBuiltinHint is RegisterBuiltin with an arguments hint.
func (c *Commands) RegisterBuiltinHint(name, description, argsHint string, handler any) error {
	return c.add(name, description, argsHint, "", handler, true)
}

// Register adds a plugin command.
func (c *Commands) Register(plugin, name, description string, handler any) error {
	return c.RegisterHint(plugin, name, description, "", handler)
}

// RegisterHint adds a plugin command with an arguments hint ("<file>"),
// shown in /help and the composer.
func (c *Commands) RegisterHint(plugin, name, description, argsHint string, handler any) error {
	if strings.TrimSpace(plugin) == "" {
		return apperr.New(apperr.Invalid, "command %q: plugin name is empty", name)
	}
	return c.add(name, description, argsHint, plugin, handler, false)
}

// Unregister removes a plugin's command (plugin unload).
func (c *Commands) Unregister(plugin, name string) {
	n := NormalizeCommand(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cmd, ok := c.byName[n]; ok && cmd.Plugin == plugin && !c.builtin[n] {
		delete(c.byName, n)
	}
}

// List returns the commands sorted by name: those registered here and, for
// a client, the plugin commands of the profile's plugin host (a host that
// cannot be reached within a few seconds adds none).
func (c *Commands) List() []Command {
	c.mu.RLock()
	out := make([]Command, 0, len(c.byName))
	for _, cmd := range c.byName {
		out = append(out, *cmd)
	}
	remote := c.remote
	c.mu.RUnlock()
	if remote != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		more, _ := remote.Commands(ctx)
		cancel()
		for _, m := range more {
			if _, local := c.Lookup(m.Name); !local {
				out = append(out, Command{Name: m.Name, Description: m.Description, ArgsHint: m.ArgsHint, Plugin: m.Plugin})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup finds a command by (normalised) name.
func (c *Commands) Lookup(name string) (Command, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	cmd, ok := c.byName[NormalizeCommand(name)]
	if !ok {
		return Command{}, false
	}
	return *cmd, true
}

// ParseCommand splits "/name rest of args" into its name and raw arguments.
// ok is false when the line is not a slash command.
func ParseCommand(line string) (name, args string, ok bool) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "/") || len(line) < 2 {
		return "", "", false
	}
	head, rest, _ := strings.Cut(line[1:], " ")
	return NormalizeCommand(head), strings.TrimSpace(rest), true
}

// Run calls a command once, never retried, bounded by timeout (0: none),
// with panics turned into errors.
func (c *Commands) Run(ctx context.Context, timeout TimeoutFunc, name, args string, cc CommandContext) (string, error) {
	cmd, ok := c.Lookup(name)
	if !ok {
		if remote := c.remoteOf(); remote != nil {
			return c.runRemote(ctx, remote, timeout(), name, args, cc)
		}
		return "", apperr.New(apperr.NotFound, "unknown command /%s (try /help)", NormalizeCommand(name))
	}
	cctx := ctx
	cancel := func() {}
	if d := timeout(); d > 0 {
		cctx, cancel = context.WithTimeout(ctx, d)
	}
	defer cancel()
	type answer struct {
		out string
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- answer{err: apperr.New(apperr.Internal, "command /%s panicked: %v", cmd.Name, p)}
			}
		}()
		out, err := cmd.fn(cctx, args, cc)
		ch <- answer{out, err}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			return a.out, fmt.Errorf("/%s: %w", cmd.Name, a.err)
		}
		return a.out, nil
	case <-cctx.Done():
		if ctx.Err() != nil {
			return "", apperr.Wrap(apperr.Rejected, context.Cause(ctx), "command /%s stopped: its caller stopped waiting", cmd.Name)
		}
		return "", apperr.Wrap(apperr.Rejected, cctx.Err(), "command /%s did not answer in time", cmd.Name)
	}
}

// TimeoutFunc supplies the bound in force for a call.
type TimeoutFunc func() time.Duration

// runRemote runs a command on the plugin host. The host bounds it by its
// own timeout; this bound (a little longer) only covers a host that stops
// answering.
func (c *Commands) runRemote(ctx context.Context, remote Remote, timeout time.Duration, name, args string, cc CommandContext) (string, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout+2*time.Second)
		defer cancel()
	}
	// The host's errors already name the command.
	return remote.RunCommand(ctx, NormalizeCommand(name), args, cc)
}
