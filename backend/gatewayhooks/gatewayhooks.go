// Package gatewayhooks runs the familiar agent's gateway event hooks: a
// folder of <profile home>/hooks/ with a HOOK.yaml (the events it listens
// to) and a handler.py whose handle(event_type, context) the gateway calls
// at its lifecycle points (gateway:startup, session:start, agent:start,
// agent:step, agent:end, command:<name>, ...). As there, placing the two
// files is the opt-in (there is no enable list), they run only while this
// process runs the gateway, with the gateway's environment and the person's
// HOME, and a hook that fails is logged and never holds up or breaks a
// conversation.
//
// Each hook runs in a Python process of its own under the plugin process
// host (the plugin runner, in its gateway-hook mode), so a hook that hangs
// or crashes is bounded and restarted like a plugin. Events are handed to a
// queue and delivered in order, off the conversation's path; a full queue
// drops the newest event, logged.
package gatewayhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"

	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/limits"
	"atrium/backend/plugins/proc"
	pyrunner "atrium/backend/plugins/runner"
)

// Files of a hook folder.
const (
	ManifestFile = "HOOK.yaml"
	HandlerFile  = "handler.py"
)

// PluginPrefix names a hook's process on the bus: a hook's subscriptions are
// not an inter-plugin event's subscribers (stack.PluginServices skips them).
const PluginPrefix = "gateway-hook:"

// QueueSize bounds the events waiting for delivery.
const QueueSize = 1024

// Hook is one folder of the hooks directory.
type Hook struct {
	Folder      string   `json:"folder"` // the folder's name
	Name        string   `json:"name"`   // HOOK.yaml's name (the folder's when it has none)
	Description string   `json:"description,omitempty"`
	Events      []string `json:"events"` // exact names, or prefix:* (command:*)
	Dir         string   `json:"dir"`
}

// Plugin is the hook's name on the bus.
func (h Hook) Plugin() string { return PluginPrefix + h.Folder }

// Takes tells which of the hook's declared events matches event: the name
// itself, or a prefix wildcard ("command:*" for "command:model").
func (h Hook) Takes(event string) (pattern string, ok bool) {
	for _, p := range h.Events {
		if p == event {
			return p, true
		}
		if prefix, wild := strings.CutSuffix(p, "*"); wild && strings.HasPrefix(event, prefix) {
			return p, true
		}
	}
	return "", false
}

// Dir is the hooks directory of home.
func Dir(home config.Home) string { return filepath.Join(home.Dir, "hooks") }

// Discover lists the hooks of dir, by folder name. A folder without both
// files is left out silently, as there; one whose HOOK.yaml is not a
// mapping with a non-empty list of event names (or is past the manifest
// bounds) is left out with a reason in skipped. A missing dir has none.
func Discover(dir string) (found []Hook, skipped []error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			skipped = append(skipped, fmt.Errorf("gateway hooks: %w", err))
		}
		return nil, skipped
	}
	for _, e := range entries {
		d := filepath.Join(dir, e.Name())
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		if !isFile(filepath.Join(d, ManifestFile)) || !isFile(filepath.Join(d, HandlerFile)) {
			continue
		}
		h, err := read(d)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		found = append(found, h)
	}
	return found, skipped
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// read parses a hook folder's HOOK.yaml within the manifest bounds.
func read(dir string) (h Hook, err error) {
	label := filepath.Join(filepath.Base(dir), ManifestFile)
	data, err := limits.ReadFS(os.DirFS(dir), ManifestFile, label, limits.ManifestBytes, "a "+ManifestFile)
	if err == nil {
		err = limits.CheckYAMLDepth(data, limits.YAMLDepth, label)
	}
	if err != nil {
		return Hook{}, fmt.Errorf("gateway hook %s skipped: %w", filepath.Base(dir), err)
	}
	defer func() { // the YAML library's panics on odd input are a skipped hook
		if r := recover(); r != nil {
			h, err = Hook{}, fmt.Errorf("gateway hook %s skipped: %s: the YAML parser could not read it (%v)", filepath.Base(dir), label, r)
		}
	}()
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil || raw == nil {
		return Hook{}, fmt.Errorf("gateway hook %s skipped: %s is not a mapping", filepath.Base(dir), label)
	}
	list, _ := raw["events"].([]any)
	h = Hook{Folder: filepath.Base(dir), Dir: dir}
	for _, v := range list {
		s, ok := v.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return Hook{}, fmt.Errorf("gateway hook %s skipped: %s: every event is a name (agent:start, command:*), not %v", h.Folder, label, limits.Echo(fmt.Sprint(v)))
		}
		if !slices.Contains(h.Events, s) {
			h.Events = append(h.Events, s)
		}
	}
	if len(h.Events) == 0 {
		return Hook{}, fmt.Errorf("gateway hook %s skipped: %s names no events", h.Folder, label)
	}
	h.Name, _ = raw["name"].(string)
	if h.Name == "" {
		h.Name = h.Folder
	}
	h.Description, _ = raw["description"].(string)
	return h, nil
}

// checkScript reads a handler.py without running it: a syntax error, or no
// top-level handle (a function, an assignment or an import of that name),
// is printed and the exit code is 3.
const checkScript = `import ast, sys
path = sys.argv[1]
try:
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
except SyntaxError as e:
    print("syntax error at line %s: %s" % (e.lineno, e.msg)); sys.exit(3)
except (OSError, UnicodeDecodeError, ValueError) as e:
    print("cannot be read: %s" % e); sys.exit(3)
names = set()
for n in tree.body:
    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
        names.add(n.name)
    elif isinstance(n, ast.Assign):
        names.update(t.id for t in n.targets if isinstance(t, ast.Name))
    elif isinstance(n, ast.ImportFrom):
        names.update(a.asname or a.name for a in n.names)
if "handle" not in names:
    print("has no handle(event_type, context) function"); sys.exit(3)
`

// Check reads a hook's handler.py with python without running it, and
// says what would keep it from loading that can be seen so: a syntax
// error, no handle. What its import does when it runs is seen only by the
// gateway (its log).
func Check(ctx context.Context, python string, h Hook) error {
	if python == "" {
		python = "python3"
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, python, "-I", "-c", checkScript, filepath.Join(h.Dir, HandlerFile)).CombinedOutput()
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		return fmt.Errorf("%s/%s %s", h.Folder, HandlerFile, clip(out))
	}
	return fmt.Errorf("%s/%s could not be checked with %s: %v %s", h.Folder, HandlerFile, python, err, clip(out))
}

// clip is a program's output for one line of a report.
func clip(out []byte) string {
	s := strings.Join(strings.Fields(string(out)), " ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

// Options configure Hooks.
type Options struct {
	Home   config.Home
	Bus    *hooks.Bus
	Logger *slog.Logger
	// Python runs the hooks (default python3).
	Python string
	// Timeout bounds one handler call (default hooks.DefaultTimeout).
	Timeout time.Duration
	// Tune adjusts the process host (tests).
	Tune func(*proc.Host)
	// Only, when set, picks the hooks to start (`hooks test` starts those
	// of one event).
	Only func(Hook) bool
}

// Hooks are the gateway hooks one gateway runs.
type Hooks struct {
	o   Options
	log *slog.Logger

	mu      sync.Mutex
	host    *proc.Host
	hooks   []Hook
	queue   chan event
	done    chan struct{}
	running bool
}

type event struct {
	name string
	ctx  map[string]any
}

// New makes the hooks of a gateway (Start runs them).
func New(o Options) *Hooks {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Python == "" {
		o.Python = "python3"
	}
	if o.Timeout <= 0 {
		o.Timeout = hooks.DefaultTimeout
	}
	return &Hooks{o: o, log: o.Logger}
}

// Start discovers the hooks and starts a process for each; a hook that
// cannot start is logged and left out (Running lists the others). It never
// fails: a broken hook must not keep the gateway from starting.
func (h *Hooks) Start(ctx context.Context) error {
	found, skipped := Discover(Dir(h.o.Home))
	if h.o.Only != nil {
		found = slices.DeleteFunc(found, func(hk Hook) bool { return !h.o.Only(hk) })
	}
	for _, err := range skipped {
		h.log.Warn("[hooks] " + err.Error())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running {
		return nil
	}
	h.host = proc.NewHost(h.o.Bus, h.log)
	if h.o.Tune != nil {
		h.o.Tune(h.host)
	}
	runner := ""
	if len(found) > 0 {
		path, err := pyrunner.WriteTo(filepath.Join(h.o.Home.Dir, "cache", "runner"))
		if err != nil {
			h.log.Warn("[hooks] gateway hooks not started: the runner cannot be written", "error", err)
			found = nil
		}
		runner = path
	}
	// Started side by side: an interpreter takes a moment to start, and
	// the gateway's adapters wait for them.
	loaded := make([]bool, len(found))
	var wg sync.WaitGroup
	for i, hk := range found {
		wg.Go(func() {
			spec, err := h.spec(hk, runner)
			if err == nil {
				_, err = h.host.Start(ctx, spec)
			}
			if err != nil {
				h.log.Warn("[hooks] gateway hook not loaded", "hook", hk.Folder, "error", err)
				_ = h.host.Remove(context.Background(), spec.Name)
				return
			}
			h.log.Info("[hooks] gateway hook loaded", "hook", hk.Folder, "events", strings.Join(hk.Events, ","))
			loaded[i] = true
		})
	}
	wg.Wait()
	h.hooks = nil
	for i, hk := range found {
		if loaded[i] {
			h.hooks = append(h.hooks, hk)
		}
	}
	h.queue, h.done, h.running = make(chan event, QueueSize), make(chan struct{}), true
	go h.deliver(h.queue, h.done, slices.Clone(h.hooks))
	return nil
}

// spec is a hook's process: the runner on its folder, in its gateway-hook
// mode, with the gateway's whole environment and HOME (it runs with the
// gateway's access, as there).
func (h *Hooks) spec(hk Hook, runner string) (proc.Spec, error) {
	ctxJSON, err := json.Marshal(map[string]any{
		"plugin_id": hk.Plugin(), "profile": h.o.Home.Profile, "hermes_home": h.o.Home.Dir,
		"hooks": []string{}, "hook_timeout": h.o.Timeout.Seconds(),
		"gateway_hook": map[string]any{"events": hk.Events, "name": hk.Name},
	})
	if err != nil {
		return proc.Spec{}, err
	}
	own := map[string]string{"ATRIUM_PLUGIN_NAME": hk.Plugin(), "ATRIUM_PLUGIN_DIR": hk.Dir, "ATRIUM_HOME": h.o.Home.Dir,
		"HERMES_HOME": h.o.Home.Dir, "ATRIUM_PROFILE": h.o.Home.Profile, "ATRIUM_PLUGIN_CONTEXT": string(ctxJSON)}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); own[k] == "" && !strings.HasPrefix(k, "HERMES_SESSION_") {
			env = append(env, kv)
		}
	}
	for k, v := range own {
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	work := filepath.Join(h.o.Home.Dir, "plugins-data", "gateway-hooks", hk.Folder)
	return proc.Spec{Name: hk.Plugin(), Dir: hk.Dir, Argv: []string{h.o.Python, runner, hk.Dir}, Env: env, WorkDir: work,
		Timeout: h.o.Timeout}, nil
}

// Emit hands event to the hooks that listen to it, off the caller's path.
// ctx is the event's context (its keys as the familiar agent documents
// them); it is not changed.
func (h *Hooks) Emit(name string, ctx map[string]any) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.running || !slices.ContainsFunc(h.hooks, func(hk Hook) bool { _, ok := hk.Takes(name); return ok }) {
		return
	}
	select {
	case h.queue <- event{name: name, ctx: ctx}:
	default:
		h.log.Warn("[hooks] gateway hook queue full; event dropped", "event", name, "queued", QueueSize)
	}
}

func (h *Hooks) deliver(queue <-chan event, done chan<- struct{}, list []Hook) {
	defer close(done)
	for ev := range queue {
		for _, hk := range list {
			if pattern, ok := hk.Takes(ev.name); ok {
				if err := h.call(context.Background(), hk, pattern, ev); err != nil {
					h.log.Warn("[hooks] gateway hook failed", "hook", hk.Folder, "event", ev.name, "error", err)
				}
			}
		}
	}
}

// call hands ev to one hook and waits for its handler.
func (h *Hooks) call(ctx context.Context, hk Hook, pattern string, ev event) error {
	// The host bounds the call by Timeout and ends a process that overran
	// it (CancelGrace, then a kill): waiting that long here keeps the next
	// event from reaching a process on its way out.
	ctx, cancel := context.WithTimeout(ctx, h.o.Timeout+proc.CancelGrace+5*time.Second)
	defer cancel()
	raw, err := h.o.Bus.CallCapability(ctx, hk.Plugin(), hooks.CapSubscription, pattern, "deliver",
		map[string]any{"payload": map[string]any{"event_type": ev.name, "context": ev.ctx}})
	if err != nil {
		return err
	}
	var res struct {
		Errors []string `json:"errors"`
	}
	if json.Unmarshal(raw, &res) == nil && len(res.Errors) > 0 {
		return fmt.Errorf("handle raised %s", strings.Join(res.Errors, "; "))
	}
	return nil
}

// Result is how one hook took an event Deliver handed it.
type Result struct {
	Hook    string        `json:"hook"`    // its folder
	Pattern string        `json:"pattern"` // the event name it listens to that matched
	Error   string        `json:"error,omitempty"`
	Elapsed time.Duration `json:"elapsed"`
}

// Deliver hands event to each running hook that listens to it and waits
// for their handlers, in order (`hooks test`).
func (h *Hooks) Deliver(ctx context.Context, name string, kv map[string]any) []Result {
	var out []Result
	for _, hk := range h.Running() {
		pattern, ok := hk.Takes(name)
		if !ok {
			continue
		}
		start := time.Now()
		r := Result{Hook: hk.Folder, Pattern: pattern}
		if err := h.call(ctx, hk, pattern, event{name: name, ctx: kv}); err != nil {
			r.Error = err.Error()
		}
		r.Elapsed = time.Since(start)
		out = append(out, r)
	}
	return out
}

// IsEvent says whether name is one of the gateway's events (command:<name>
// for any command).
func IsEvent(name string) bool {
	_, ok := Sample(name)
	return ok
}

// Sample is a context for event with every key the familiar agent documents
// for it, filled with test values.
func Sample(name string) (map[string]any, bool) {
	who := map[string]any{"platform": "test", "user_id": "test-user"}
	with := func(kv map[string]any) map[string]any {
		out := maps.Clone(who)
		maps.Copy(out, kv)
		return out
	}
	agent := with(map[string]any{"chat_id": "test-chat", "thread_id": "", "chat_type": "dm", "session_id": "test-session",
		"message": "a test message"})
	reaction := with(map[string]any{"reaction": "thumbsup", "item_user_id": "test-bot", "item_type": "message",
		"channel_id": "test-chat", "message_ts": "1700000000.000100", "team_id": "T0", "event_ts": "1700000000.000200", "raw_event": map[string]any{}})
	switch {
	case name == "gateway:startup":
		return map[string]any{"platforms": []string{"test"}}, true
	case name == "session:start":
		return with(map[string]any{"session_id": "test-session", "session_key": "test:dm:test-chat"}), true
	case name == "session:end", name == "session:reset":
		return with(map[string]any{"session_key": "test:dm:test-chat"}), true
	case name == "session:compress":
		return map[string]any{"platform": "test", "session_id": "test-session-2", "old_session_id": "test-session", "in_place": false,
			"compression_count": 1}, true
	case name == "agent:start":
		return agent, true
	case name == "agent:step":
		return with(map[string]any{"session_id": "test-session", "iteration": 1, "tool_names": []string{"echo"}}), true
	case name == "agent:end":
		end := maps.Clone(agent)
		end["response"] = "a test response"
		return end, true
	case name == "reaction:added", name == "reaction:removed":
		return reaction, true
	case strings.HasPrefix(name, "command:") && len(name) > len("command:") && !strings.Contains(name, "*"):
		return with(map[string]any{"command": strings.TrimPrefix(name, "command:"), "args": ""}), true
	}
	return nil, false
}

// Stop delivers what is queued (bounded by ctx), then stops the processes.
func (h *Hooks) Stop(ctx context.Context) error {
	h.mu.Lock()
	if !h.running {
		h.mu.Unlock()
		return nil
	}
	h.running = false
	close(h.queue)
	done, host := h.done, h.host
	h.mu.Unlock()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("gateway hooks: events still queued: %w", ctx.Err())
	}
	if serr := host.Stop(context.Background()); serr != nil && err == nil {
		err = serr
	}
	return err
}

// Running lists the hooks running now.
func (h *Hooks) Running() []Hook {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.hooks)
}
