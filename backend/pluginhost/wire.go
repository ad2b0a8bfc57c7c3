package pluginhost

import (
	"encoding/json"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
)

// The local channel's wire format: one JSON object per line. A client
// sends one request and reads one response per connection.
type request struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// cancelNote is the one line a client may send after its request: it
// stopped waiting, and why (the cause of its context). A client that
// closes the connection without it stopped waiting too.
type cancelNote struct {
	Cancel string `json:"cancel"`
}

type response struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *wireError      `json:"error,omitempty"`
}

// wireError carries an apperr code, so exit codes survive the socket.
type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func toWire(err error) *wireError {
	code := apperr.CodeOf(err)
	if code == "" {
		code = apperr.Internal
	}
	return &wireError{Code: string(code), Message: err.Error()}
}

func (w *wireError) err() error {
	return apperr.New(apperr.Code(w.Code), "%s", w.Message)
}

// Methods.
const (
	mHello          = "hello"
	mPoke           = "poke"
	mWait           = "wait"
	mCallSync       = "call_sync"
	mCommands       = "commands"
	mRunCommand     = "run_command"
	mCapabilities   = "capabilities"
	mCallCapability = "call_capability"
	mStatus         = "status"
	mSyncHooks      = "sync_hooks"
	mSync           = "sync"
	mHandover       = "handover"
	mStop           = "stop"
)

type waitParams struct {
	Seq     int64 `json:"seq"`
	Timeout int64 `json:"timeout_ms"` // the client's bound; 0 = the host's hook timeout
}

type callSyncParams struct {
	Hook    string          `json:"hook"`
	Payload json.RawMessage `json:"payload"`
}

// syncResult is one plugin's answer to a synchronous hook. Results says the
// value is a hooks.Results (a plugin with several callbacks answers with
// all of them); ErrorKind keeps what a control hook decides on
// ("timed_out", "skipped").
type syncResult struct {
	Plugin    string          `json:"plugin"`
	Value     json.RawMessage `json:"value,omitempty"`
	Results   bool            `json:"results,omitempty"`
	Error     string          `json:"error,omitempty"`
	ErrorKind string          `json:"error_kind,omitempty"`
}

type commandInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	ArgsHint    string `json:"args_hint,omitempty"`
	Plugin      string `json:"plugin"`
}

type runCommandParams struct {
	Name    string               `json:"name"`
	Args    string               `json:"args"`
	Context hooks.CommandContext `json:"context"`
}

type runCommandResult struct {
	Output string `json:"output"`
}

type capabilitiesParams struct {
	Kind string `json:"kind"`
}

type callCapabilityParams struct {
	Plugin string          `json:"plugin"`
	Kind   string          `json:"kind"`
	Name   string          `json:"name"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// PluginState is one plugin as the host runs it.
type PluginState struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	PID      int    `json:"pid,omitempty"`
	Restarts int    `json:"restarts,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Status is the host's Info and its plugins.
type Status struct {
	Info
	Plugins []PluginState `json:"plugins"`
}

func ms(d time.Duration) int64 { return d.Milliseconds() }
