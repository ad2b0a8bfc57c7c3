// Package shellhooks runs the commands config.yaml's hooks: section names
// at Atrium's hook moments, in the two shapes the ecosystem already writes:
// the familiar agent's (hooks: {pre_tool_call: [{command, timeout, matcher,
// fail_closed}]}) and Claude Code's settings (hooks: {PreToolUse: [{matcher,
// hooks: [{type: command, command, timeout}]}]}). A command gets the hook's
// payload as one JSON object on stdin and may answer on stdout; each
// (event, command) pair runs only once the user approved it (the allowlist,
// allowlist.go). Registration on the hook bus is register.go: observer
// hooks through the durable log, synchronous ones in line.
package shellhooks

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"atrium/backend/hooks"
	"atrium/backend/limits"
)

// Dialect is the shape a hook was written in.
type Dialect string

const (
	// Hermes is the familiar agent's shape: the command is split like a
	// shell would and run without one.
	Hermes Dialect = "hermes"
	// Claude is Claude Code's settings shape: the command is a shell
	// command line, run by /bin/sh -c as Claude Code runs it.
	Claude Dialect = "claude"
)

// Timeouts of a hook command, in seconds as configured.
const (
	DefaultTimeout = 60 * time.Second
	MaxTimeout     = 300 * time.Second
)

// Spec is one configured hook: a command at one event.
type Spec struct {
	// Event is the Atrium hook it runs at.
	Event string `json:"event"`
	// Name is the event as configured: Event itself, or Claude Code's
	// name (PreToolUse). Consent is given per (Name, Command).
	Name    string        `json:"name"`
	Command string        `json:"command"`
	Matcher string        `json:"matcher,omitempty"`
	Timeout time.Duration `json:"timeout"`
	// FailClosed: a pre_tool_call hook that cannot answer (not found,
	// timed out, unreadable output) blocks the call instead of letting it
	// run.
	FailClosed bool    `json:"fail_closed"`
	Dialect    Dialect `json:"dialect"`

	match Matcher // Matcher, compiled
}

// ClaudeEvents maps Claude Code's hook event names onto Atrium's hooks.
// SessionStart runs in line at a turn that begins the context anew
// (pre_llm_call with session_start), not from the log as on_session_start:
// Claude Code adds its output to the session's context, which an observer
// cannot. Stop runs in line when the turn is about to end (pre_turn_end),
// so it can keep the agent going as in Claude Code. Notification is the
// one Atrium has: a person is asked to approve a tool call. PermissionRequest
// runs in line just before that question (pre_approval_decision): its allow
// or deny answers in the person's place.
var ClaudeEvents = map[string]string{
	"SessionStart":       hooks.PreLLMCall,
	"SessionEnd":         hooks.OnSessionFinalize,
	"PreCompact":         hooks.PreCompaction,
	"PostCompact":        hooks.PostCompaction,
	"PreToolUse":         hooks.PreToolCall,
	"PostToolUse":        hooks.PostToolCall,
	"PostToolUseFailure": hooks.PostToolCall,
	"UserPromptSubmit":   hooks.PreLLMCall,
	"Stop":               hooks.PreTurnEnd,
	"SubagentStart":      hooks.SubagentStart,
	"SubagentStop":       hooks.SubagentStop,
	"Notification":       hooks.PreApprovalRequest,
	"PermissionRequest":  hooks.PreApprovalDecide,
}

// StartSources are the sources of Claude Code's SessionStart that Atrium
// has (see sessions.StartStartup).
var StartSources = []string{"startup", "clear", "compact"}

// notifyPermission is the notification_type of Claude Code's Notification
// that Atrium sends: a tool call waits for a person's approval.
const notifyPermission = "permission_prompt"

// ClaudeForeign are Claude Code's hook events that Atrium has no moment
// for: a hook configured for one is reported, not registered.
var ClaudeForeign = map[string]string{
	"TaskCreated":   "Atrium has no task list",
	"TaskCompleted": "Atrium has no task list",
	"TeammateIdle":  "Atrium has no agent teams",
}

// toolEvents are the hooks about one tool call, where a matcher applies.
var toolEvents = []string{hooks.PreToolCall, hooks.PostToolCall, hooks.TransformToolRes, hooks.PreApprovalDecide}

// reserved are keys under hooks: that are not events.
var reserved = []string{"event_retention_days", "output_spill", "outbound"}

// Parse reads config.yaml's hooks: section (every key but Atrium's own
// settings) into specs, in a stable order: events sorted, each event's
// entries as written. What cannot run is left out with a warning that says
// why; nothing in it is an error, so a broken entry never stops the others.
func Parse(section map[string]any) ([]Spec, []string) {
	var specs []Spec
	var warns []string
	warn := func(format string, a ...any) { warns = append(warns, fmt.Sprintf(format, a...)) }
	names := make([]string, 0, len(section))
	for k := range section {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		entries := section[name]
		if slices.Contains(reserved, name) || entries == nil {
			continue
		}
		list, ok := entries.([]any)
		if !ok {
			warn("hooks.%s must be a list of hook definitions; got %s", name, kindOf(entries))
			continue
		}
		if event, ok := ClaudeEvents[name]; ok {
			for i, raw := range list {
				specs = append(specs, parseClaude(name, event, i, raw, warn)...)
			}
			continue
		}
		if why, ok := ClaudeForeign[name]; ok {
			warn("hooks.%s: Claude Code's %s has no moment in Atrium (%s), so this hook would never run; it is not registered", name, name, why)
			continue
		}
		if !hooks.Known(name) {
			switch {
			case hooks.Foreign(name):
				warn("hooks.%s: Atrium has no %s moment, so this hook would never run; it is not registered", name, name)
			default:
				warn("unknown hook event %q in hooks:%s", name, suggest(name))
			}
			continue
		}
		for i, raw := range list {
			if s, ok := parseHermes(name, i, raw, warn); ok {
				specs = append(specs, s)
			}
		}
	}
	return specs, warns
}

func parseHermes(event string, i int, raw any, warn func(string, ...any)) (Spec, bool) {
	at := fmt.Sprintf("hooks.%s[%d]", event, i)
	m, ok := raw.(map[string]any)
	if !ok {
		warn("%s must be a mapping with a 'command' key; got %s", at, kindOf(raw))
		return Spec{}, false
	}
	cmd, _ := m["command"].(string)
	if strings.TrimSpace(cmd) == "" {
		warn("%s is missing a non-empty 'command' field", at)
		return Spec{}, false
	}
	s := Spec{Event: event, Name: event, Command: strings.TrimSpace(cmd), Dialect: Hermes}
	if mt, has := m["matcher"]; has && mt != nil {
		str, ok := mt.(string)
		switch {
		case !ok:
			warn("%s.matcher must be a string regex; ignoring it", at)
		case !slices.Contains(toolEvents, event):
			warn("%s.matcher %q is ignored: a matcher applies only to %s; the hook runs at every %s", at, str, strings.Join(toolEvents, ", "), event)
		default:
			s.Matcher = strings.TrimSpace(str)
		}
	}
	s.Timeout = timeoutOf(at, m["timeout"], warn)
	fc, has := m["fail_closed"]
	if !has {
		fc, has = m["failClosed"]
	}
	if has && fc != nil {
		b, ok := fc.(bool)
		switch {
		case !ok:
			warn("%s.fail_closed must be true or false (got %v); the hook fails open", at, fc)
		case b && event != hooks.PreToolCall:
			warn("%s.fail_closed is ignored: only a pre_tool_call hook can block; this one fails open", at)
		default:
			s.FailClosed = b
		}
	}
	s.compile(warn, at)
	return s, true
}

func parseClaude(name, event string, i int, raw any, warn func(string, ...any)) []Spec {
	at := fmt.Sprintf("hooks.%s[%d]", name, i)
	m, ok := raw.(map[string]any)
	if !ok {
		warn("%s must be a mapping with a 'hooks' list; got %s", at, kindOf(raw))
		return nil
	}
	matcher := ""
	if mt, has := m["matcher"]; has && mt != nil {
		if str, ok := mt.(string); ok {
			matcher = strings.TrimSpace(str)
		} else {
			warn("%s.matcher must be a string; ignoring it", at)
		}
	}
	if matcher == "*" {
		matcher = ""
	}
	if name == "SessionStart" && matcher != "" {
		// Its matcher is the start's source: startup, clear (/new) or
		// compact; Atrium has no "resume" (a session is continued, never
		// resumed into a new one).
		mt, err := CompileMatcher(matcher, Claude)
		if err == nil && !slices.ContainsFunc(StartSources, mt.Matches) {
			warn("%s.matcher %q: Atrium starts a session's context only as Claude Code's \"startup\", \"clear\" or \"compact\" (it has no \"resume\"), so this hook would never run; it is not registered", at, matcher)
			return nil
		}
	}
	if name == "Notification" && matcher != "" {
		// Its matcher is the notification's type: Atrium notifies only
		// that a person is asked to approve a tool call.
		mt, err := CompileMatcher(matcher, Claude)
		if err == nil && !mt.Matches(notifyPermission) {
			warn("%s.matcher %q: Atrium's only notification is %q (a tool call waits for a person's approval), so this hook would never run; it is not registered", at, matcher, notifyPermission)
			return nil
		}
	}
	if matcher != "" && name != "SessionStart" && name != "Notification" && !slices.Contains(toolEvents, event) {
		warn("%s.matcher %q is ignored: Atrium matches only tool names (PreToolUse, PostToolUse)", at, matcher)
		matcher = ""
	}
	list, ok := m["hooks"].([]any)
	if !ok {
		warn("%s.hooks must be a list of {type: command, command: ...}", at)
		return nil
	}
	var out []Spec
	for j, h := range list {
		hat := fmt.Sprintf("%s.hooks[%d]", at, j)
		hm, ok := h.(map[string]any)
		if !ok {
			warn("%s must be a mapping; got %s", hat, kindOf(h))
			continue
		}
		if t, _ := hm["type"].(string); t != "" && t != "command" {
			warn("%s: type %q is not run by Atrium (only command hooks are)", hat, t)
			continue
		}
		cmd, _ := hm["command"].(string)
		if strings.TrimSpace(cmd) == "" {
			warn("%s is missing a non-empty 'command' field", hat)
			continue
		}
		s := Spec{Event: event, Name: name, Command: strings.TrimSpace(cmd), Matcher: matcher, Dialect: Claude}
		s.Timeout = timeoutOf(hat, hm["timeout"], warn)
		s.compile(warn, at)
		out = append(out, s)
	}
	return out
}

func timeoutOf(at string, v any, warn func(string, ...any)) time.Duration {
	if v == nil {
		return DefaultTimeout
	}
	secs, ok := Number(v)
	if !ok {
		warn("%s.timeout must be a number of seconds (got %v); using %d", at, v, int(DefaultTimeout/time.Second))
		return DefaultTimeout
	}
	switch {
	case secs < 1:
		warn("%s.timeout must be at least 1 second; using %d", at, int(DefaultTimeout/time.Second))
		return DefaultTimeout
	case secs > MaxTimeout.Seconds():
		warn("%s.timeout %gs is above the most, %d s; using that", at, secs, int(MaxTimeout/time.Second))
		return MaxTimeout
	}
	return time.Duration(secs * float64(time.Second))
}

// Number reads a YAML number (limits.YAMLNumber), for the webhooks'
// settings too.
var Number = limits.YAMLNumber

var namesOnly = regexp.MustCompile(`^[A-Za-z0-9_|-]+$`)

// Matcher picks the tool calls a hook (or a webhook target) takes.
type Matcher struct {
	expr  string
	re    *regexp.Regexp // nil: a list of names, or the expression taken literally
	names []string       // Claude Code's list of names, "Edit|Write"
}

// CompileMatcher prepares expr ("" takes every tool). The familiar agent's
// is a regular expression the whole tool name must match; Claude Code's
// is a list of names or else a regular expression found anywhere in the
// name. An expression that does not compile is returned with its error
// and matches that exact tool name.
func CompileMatcher(expr string, d Dialect) (Matcher, error) {
	m := Matcher{expr: expr}
	if expr == "" {
		return m, nil
	}
	if d == Claude && namesOnly.MatchString(expr) {
		m.names = strings.Split(expr, "|")
		return m, nil
	}
	full := expr
	if d == Hermes {
		full = `^(?:` + expr + `)$`
	}
	re, err := regexp.Compile(full)
	m.re = re
	return m, err
}

// Matches tells whether a call of tool is taken.
func (m Matcher) Matches(tool string) bool {
	switch {
	case m.expr == "":
		return true
	case m.names != nil:
		return slices.Contains(m.names, tool)
	case m.re != nil:
		return m.re.MatchString(tool)
	}
	return tool == m.expr
}

// compile prepares s's matcher, warning about one that does not compile.
func (s *Spec) compile(warn func(string, ...any), at string) {
	var err error
	if s.match, err = CompileMatcher(s.Matcher, s.Dialect); err != nil {
		warn("%s.matcher %q is not a valid regular expression (%v); it matches that exact tool name", at, s.Matcher, err)
	}
}

// Matches tells whether the hook runs for a call of tool (always, without
// a matcher).
func (s Spec) Matches(tool string) bool { return s.match.Matches(tool) }

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "nothing"
	}
	return "a number"
}

// suggest names the closest hook Atrium fires, or lists them all.
func suggest(name string) string {
	best, dist := "", 1<<30
	for _, n := range append(hooks.Names(), slices.Sorted(maps.Keys(ClaudeEvents))...) {
		if d := distance(strings.ToLower(name), strings.ToLower(n)); d < dist {
			best, dist = n, d
		}
	}
	if dist <= max(2, len(name)/3) {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return fmt.Sprintf(" (known: %s)", strings.Join(hooks.Names(), ", "))
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
