package proc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// ProtocolVersion is the version of docs/plugin-protocol.md this host speaks.
const ProtocolVersion = 1

// AtriumVersion is sent at the handshake; the build may override it.
var AtriumVersion = "dev"

// JSON-RPC 2.0 error codes used on the wire.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
	CodePluginError    = -32000 // the plugin's callback raised or returned an error
	CodeCancelled      = -32800 // the request was cancelled (answered at the host's cancel)
)

// CancelParams is the host's cancel notification: it no longer waits for
// request ID (its caller went away, or its time ran out), or for the
// event_done of observer event EventID (its bound ran out). Sent only to a
// plugin whose handshake said "cancel": true, which answers that request at
// once (CodeCancelled), or that event with its event_done (Cancelled), and
// may let the work end in the background; one that does not answer within
// CancelGrace is restarted, as any plugin is.
type CancelParams struct {
	ID      int64  `json:"id,omitempty"`
	EventID string `json:"event_id,omitempty"`
	Reason  string `json:"reason"`
}

// message is any JSON-RPC 2.0 message, in either direction.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// parseMessage decodes one stdout line of a plugin; anything but a JSON-RPC
// 2.0 object is an error that quotes at most 80 bytes of the line.
func parseMessage(line []byte) (message, error) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
		line = bytes.TrimSpace(line)
		more := ""
		if len(line) > 40 {
			line, more = line[:40], fmt.Sprintf("... (%d bytes)", len(line))
		}
		return message{}, fmt.Errorf("wrote a line on stdout that is not a JSON-RPC 2.0 message: %q%s", line, more)
	}
	return m, nil
}

// RPCError is a JSON-RPC error object. Data.traceback carries a Python
// traceback when the plugin's callback raised.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	msg := e.Message
	if tb := e.Traceback(); tb != "" {
		msg += "\n" + tb
	}
	return fmt.Sprintf("plugin error %d: %s", e.Code, msg)
}

// Traceback returns data.traceback, if any.
func (e *RPCError) Traceback() string {
	var d struct {
		Traceback string `json:"traceback"`
	}
	if len(e.Data) > 0 && json.Unmarshal(e.Data, &d) == nil {
		return d.Traceback
	}
	return ""
}

// InitializeParams is the host's `initialize` request.
type InitializeParams struct {
	ProtocolVersion int            `json:"protocol_version"`
	Name            string         `json:"name"`
	Settings        map[string]any `json:"settings"`
	WorkDir         string         `json:"work_dir"`
	AtriumVersion   string         `json:"atrium_version"`
}

// CommandInfo is a command a plugin registered at its handshake.
type CommandInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	ArgsHint    string `json:"args_hint,omitempty"`
}

// InitializeResult is the plugin's answer: what it registered. Hooks and
// Commands are all a plugin must answer; the rest is what the familiar
// Python plugin API registers beyond them (the runner fills it in).
type InitializeResult struct {
	ProtocolVersion int           `json:"protocol_version"`
	Hooks           []string      `json:"hooks"`
	Commands        []CommandInfo `json:"commands"`
	// Cancel: the plugin answers the cancel notification (CancelParams).
	Cancel bool `json:"cancel,omitempty"`
	// Configure: the plugin takes the configure notification
	// (ConfigureParams): a new callback timeout reaches it without a
	// restart.
	Configure bool `json:"configure,omitempty"`
	Extras
}

// Extras are a plugin's registrations beyond hooks and commands. Each is a
// capability on the hook bus, called with JSON through the `capability`
// request; Inert lists what the plugin registered that Atrium has no moment
// for (accepted, never called); UnknownHooks and Warnings are reported.
type Extras struct {
	Tools         []ToolInfo    `json:"tools,omitempty"`
	CLICommands   []CLIInfo     `json:"cli_commands,omitempty"`
	Middleware    []string      `json:"middleware,omitempty"`
	Sections      []SectionInfo `json:"system_prompt_sections,omitempty"`
	Memory        []NamedInfo   `json:"memory_providers,omitempty"`
	Engines       []NamedInfo   `json:"context_engines,omitempty"`
	Subscriptions []string      `json:"subscriptions,omitempty"`
	Skills        []SkillInfo   `json:"skills,omitempty"`
	Inert         []InertInfo   `json:"inert,omitempty"`
	UnknownHooks  []string      `json:"unknown_hooks,omitempty"`
	Warnings      []string      `json:"warnings,omitempty"`
}

// ToolInfo is a tool a plugin registered (register_tool).
type ToolInfo struct {
	Name        string          `json:"name"`
	Toolset     string          `json:"toolset,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"` // OpenAI function schema: name, description, parameters
	Description string          `json:"description,omitempty"`
	Emoji       string          `json:"emoji,omitempty"`
	Override    bool            `json:"override,omitempty"`
	// OverrideAllowed: the plugin may shadow another's tool
	// (allow_tool_override, or a bundled plugin).
	OverrideAllowed bool     `json:"override_allowed,omitempty"`
	RequiresEnv     []string `json:"requires_env,omitempty"`
	HasCheck        bool     `json:"has_check,omitempty"`
	IsAsync         bool     `json:"is_async,omitempty"`
}

// CLIInfo is a command line command (register_cli_command): `atrium NAME`.
type CLIInfo struct {
	Name        string `json:"name"`
	Help        string `json:"help,omitempty"`
	Description string `json:"description,omitempty"`
}

// SectionInfo is a system prompt section; Static is its text when it is
// not computed per session.
type SectionInfo struct {
	ID       string  `json:"id"`
	Position string  `json:"position,omitempty"`
	MaxChars int     `json:"max_chars,omitempty"`
	Static   *string `json:"static,omitempty"`
}

// SkillInfo is a skill a plugin ships (register_skill): its SKILL.md.
type SkillInfo struct {
	Name        string `json:"name"`
	Path        string `json:"path"`
	Description string `json:"description,omitempty"`
}

// NamedInfo names a memory provider or a context engine.
type NamedInfo struct {
	Name string `json:"name"`
}

// InertInfo is a registration Atrium accepts but never calls, and why.
type InertInfo struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// CapabilityParams is the host's `capability` request: call method of the
// plugin's capability kind/name with params.
type CapabilityParams struct {
	Kind   string          `json:"kind"`
	Name   string          `json:"name"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// EventParams is the `event` notification for an observer hook.
type EventParams struct {
	Hook       string          `json:"hook"`
	EventID    string          `json:"event_id"`
	Seq        int64           `json:"seq"`
	Redelivery bool            `json:"redelivery"`
	CreatedAt  time.Time       `json:"created_at"`
	Payload    json.RawMessage `json:"payload"`
}

// EventDoneParams is the plugin's `event_done` notification.
type EventDoneParams struct {
	EventID   string `json:"event_id"`
	Error     string `json:"error,omitempty"`
	Traceback string `json:"traceback,omitempty"`
	// Cancelled: the answer to a cancel of the event (the callbacks may
	// still run; what they do is not reported).
	Cancelled bool `json:"cancelled,omitempty"`
}

// PreLLMCallParams is the `pre_llm_call` request.
type PreLLMCallParams struct {
	Payload json.RawMessage `json:"payload"`
}

// CommandParams is the `command` request.
type CommandParams struct {
	Name       string `json:"name"`
	Args       string `json:"args"`
	SessionID  string `json:"session_id"`
	SessionKey string `json:"session_key"`
	Platform   string `json:"platform"`
	Source     any    `json:"source"`
}

// LogParams is the optional plugin→host `log` notification.
type LogParams struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// ConfigureParams is the configure notification (host → plugin): what the
// plugin's ATRIUM_PLUGIN_CONTEXT says that changed while it runs.
type ConfigureParams struct {
	HookTimeout float64 `json:"hook_timeout"` // seconds; 0: unbounded
}
