// Package hooks is Atrium's hook bus: the table of hook names, the plugin
// registration API, the durable event log and its after-commit delivery.
// It knows no domain package: services append events through their own
// transaction with Bus.EnqueueTx, so an event commits or rolls back with the
// change it reports.
package hooks

import (
	"sort"
	"time"

	"atrium/backend/apperr"
)

// Kind says how a hook is called.
type Kind int

const (
	// Observer hooks fire after commit, off the caller's path, from the
	// durable log; results are ignored.
	Observer Kind = iota
	// Sync hooks are called in line (CallSync) and bounded by the callback
	// timeout; what their answers mean is the hook's Role.
	Sync
)

// Role says what the answers of a Sync hook mean.
type Role int

const (
	// RoleObserve: answers are ignored (pre_command, pre_api_request,
	// post_api_request, api_request_error, and every Observer hook).
	RoleObserve Role = iota
	// RoleContext: a string or {"context": ...} is added to the user turn as
	// sent to the model (pre_llm_call).
	RoleContext
	// RoleControl: {"action": "block"|"approve"|"modify", ...} decides
	// whether and how a tool runs; the hook fails closed (pre_tool_call).
	RoleControl
	// RoleTransform: the first string answer replaces the value
	// (transform_tool_result, transform_llm_output).
	RoleTransform
	// RoleDispatch: {"action": "skip"|"rewrite"|"allow", ...} decides
	// whether and how an incoming gateway message is routed
	// (pre_gateway_dispatch); it fails open.
	RoleDispatch
	// RoleContinue: {"action": "continue", "message"} keeps the turn going
	// with message as the next instruction, {"action": "stop"} ends it
	// whatever else was answered (pre_turn_end); it fails open.
	RoleContinue
	// RoleDecide: {"action": "allow", "args"?} or {"action": "deny",
	// "message", "interrupt"?} answers in place of the person who would be
	// asked to approve a tool call; any deny wins; no answer asks the person
	// (pre_approval_decision). A callback that fails decides nothing.
	RoleDecide
)

// Stable hook names. They never change once shipped.
const (
	OnSessionStart     = "on_session_start"
	OnSessionEnd       = "on_session_end"
	OnSessionFinalize  = "on_session_finalize"
	OnSessionReset     = "on_session_reset"
	OnSessionDelete    = "on_session_delete"
	OnSessionRestore   = "on_session_restore"
	PostCompaction     = "post_compaction"
	PreCompaction      = "pre_compaction"
	PreLLMCall         = "pre_llm_call"
	PostLLMCall        = "post_llm_call"
	PreToolCall        = "pre_tool_call"
	PostToolCall       = "post_tool_call"
	TransformToolRes   = "transform_tool_result"
	TransformLLMOutput = "transform_llm_output"
	TransformTermOut   = "transform_terminal_output"
	PreAPIRequest      = "pre_api_request"
	PostAPIRequest     = "post_api_request"
	APIRequestError    = "api_request_error"
	PreCommand         = "pre_command"
	SubagentStart      = "subagent_start"
	SubagentStop       = "subagent_stop"
	PreGatewayDispatch = "pre_gateway_dispatch"
	PreTurnEnd         = "pre_turn_end"
	PreVerify          = "pre_verify"
	PreApprovalRequest = "pre_approval_request"
	PostApprovalResp   = "post_approval_response"
	PreApprovalDecide  = "pre_approval_decision"
	AgentLoopStopped   = "agent_loop_stopped"
)

type hookInfo struct {
	kind Kind
	role Role
}

var table = map[string]hookInfo{
	OnSessionStart:     {Observer, RoleObserve},
	OnSessionEnd:       {Observer, RoleObserve},
	OnSessionFinalize:  {Observer, RoleObserve},
	OnSessionReset:     {Observer, RoleObserve},
	OnSessionDelete:    {Observer, RoleObserve},
	OnSessionRestore:   {Observer, RoleObserve},
	PostCompaction:     {Observer, RoleObserve},
	PostLLMCall:        {Observer, RoleObserve},
	PostToolCall:       {Observer, RoleObserve},
	SubagentStart:      {Observer, RoleObserve},
	SubagentStop:       {Observer, RoleObserve},
	PreApprovalRequest: {Observer, RoleObserve},
	PostApprovalResp:   {Observer, RoleObserve},
	AgentLoopStopped:   {Observer, RoleObserve},
	PreLLMCall:         {Sync, RoleContext},
	PreToolCall:        {Sync, RoleControl},
	TransformToolRes:   {Sync, RoleTransform},
	TransformLLMOutput: {Sync, RoleTransform},
	TransformTermOut:   {Sync, RoleTransform},
	PreAPIRequest:      {Sync, RoleObserve},
	PostAPIRequest:     {Sync, RoleObserve},
	APIRequestError:    {Sync, RoleObserve},
	PreCommand:         {Sync, RoleObserve},
	PreGatewayDispatch: {Sync, RoleDispatch},
	PreCompaction:      {Sync, RoleObserve},
	PreTurnEnd:         {Sync, RoleContinue},
	PreVerify:          {Sync, RoleContinue},
	PreApprovalDecide:  {Sync, RoleDecide},
}

// ForeignHooks are hook names of the familiar Python plugin API for moments
// Atrium does not have (kanban boards, streaming tokens, skills...). A plugin may register them: the callback
// is kept and reported as inert, never called, and never an error.
var ForeignHooks = []string{
	"on_stream_start", "on_stream_delta", "on_stream_end", "on_interim_message",
	"transform_api_error_classification", "on_skill_lifecycle",
	"on_room_member_activity",
	"pre_transcription", "kanban_task_claimed", "kanban_task_completed", "kanban_task_blocked",
	"on_kanban_worker_spawned", "on_kanban_worker_exited", "on_kanban_worker_stale_claim",
	"on_kanban_task_updated", "on_kanban_dispatch_tick", "gateway_platform_event", "pre_tts_synthesis",
	"pre_auxiliary_call", "post_auxiliary_call",
}

// TelemetrySchemaVersion is sent as telemetry_schema_version in every
// payload, as the familiar plugin API does.
const TelemetrySchemaVersion = "hermes.observer.v1"

// Names lists every hook Atrium fires, sorted.
func Names() []string {
	out := make([]string, 0, len(table))
	for n := range table {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns a hook's kind, or an invalid error for an unknown name.
func Lookup(name string) (Kind, error) {
	h, ok := table[name]
	if !ok {
		return 0, apperr.New(apperr.Invalid, "unknown hook %q (known: %v)", name, Names())
	}
	return h.kind, nil
}

// RoleOf is what a hook's answers mean (RoleObserve for an unknown name).
func RoleOf(name string) Role { return table[name].role }

// Known reports whether Atrium fires the hook.
func Known(name string) bool {
	_, ok := table[name]
	return ok
}

// Foreign reports whether name is a hook of the familiar plugin API that
// Atrium has no moment for (see ForeignHooks).
func Foreign(name string) bool {
	for _, f := range ForeignHooks {
		if f == name {
			return true
		}
	}
	return false
}

// Delete reasons of on_session_delete.
const (
	ReasonDelete        = "delete"
	ReasonArchive       = "archive"
	ReasonEmptySweep    = "empty_sweep"
	ReasonPrune         = "prune"
	ReasonGhostPrune    = "ghost_prune"
	ReasonProfileRepair = "profile_repair"
)

// SessionDelete is the payload of on_session_delete. Fields are only ever
// added, never renamed. Restorable is true when the rows went to the trash
// (they can be restored until PurgeAfter, an RFC 3339 time in UTC with a
// "+00:00" offset); a later purge of the trash fires nothing more.
type SessionDelete struct {
	SessionID   string   `json:"session_id"`
	Reason      string   `json:"reason"`
	Profile     string   `json:"profile"`
	DeletedIDs  []string `json:"deleted_ids"`
	SessionsDir string   `json:"sessions_dir,omitempty"`
	Restorable  bool     `json:"restorable"`
	PurgeAfter  *string  `json:"purge_after"`
}

// Restore reasons of on_session_restore.
const (
	RestoreTrash   = "trash"   // restored from the trash
	RestoreArchive = "archive" // unarchived
)

// SessionRestore is the payload of on_session_restore: sessions came back
// into the user's view. RestoredIDs lists every row restored, the requested
// one included.
type SessionRestore struct {
	SessionID   string   `json:"session_id"`
	RestoredIDs []string `json:"restored_ids"`
	Reason      string   `json:"reason"`
	Profile     string   `json:"profile"`
}

// DefaultTimeout is plugins.hook_callback_timeout when unset.
const DefaultTimeout = 30 * time.Second

// MaxTimeout caps plugins.hook_callback_timeout.
const MaxTimeout = 600 * time.Second

// NormalizeTimeout applies the contract: <= 0 disables the bound (returned as
// 0), anything above 600 s is capped.
func NormalizeTimeout(d time.Duration) time.Duration {
	switch {
	case d <= 0:
		return 0
	case d > MaxTimeout:
		return MaxTimeout
	}
	return d
}

// PreCompactionPayload is the payload of pre_compaction, called in line
// once a compaction is planned and will be written, before it is: the
// transcript is still as it was (its post_compaction follows, unless the
// write fails). Attempts that change nothing call nothing. Answers are
// ignored. Reason is "manual" for /compact and `atrium compact`, else what
// triggered it; Focus is the hint given for the summary (/compress FOCUS,
// `atrium compact --focus`); Messages and BeforeTokens describe the
// transcript now.
type PreCompactionPayload struct {
	SessionID    string  `json:"session_id"`
	Kind         string  `json:"kind"`
	Reason       string  `json:"reason"`
	Focus        string  `json:"focus"`
	Messages     int     `json:"messages"`
	BeforeTokens int     `json:"before_tokens"`
	Platform     *string `json:"platform"`
}

// PostCompactionPayload is the payload of post_compaction. Unknown numbers
// are null, never a made-up 0.
type PostCompactionPayload struct {
	SessionID        string `json:"session_id"`
	OldSessionID     string `json:"old_session_id"`
	Kind             string `json:"kind"`
	Reason           string `json:"reason"`
	BeforeTokens     *int   `json:"before_tokens"`
	AfterTokens      *int   `json:"after_tokens"`
	MessagesRemoved  *int   `json:"messages_removed"`
	MessagesReplaced *int   `json:"messages_replaced,omitempty"` // prune_tool_results: outputs replaced by stubs
	// Platform is the surface whose turn or command caused it (cli,
	// desktop, telegram, cron, ...); null when unknown.
	Platform *string `json:"platform"`
}

// TurnEndPayload is the payload of pre_turn_end (Atrium's own), called in
// line when the model has answered with text and the turn is about to end:
// the reply is stored and its post_llm_call committed, on_session_end not
// yet. UserMessage is what the model answered (the person's message, or the
// feedback a continuation gave it); Continues counts the times this turn has
// gone on already (Claude Code's stop_hook_active is Continues > 0).
// AgentContext is "primary", "subagent" (a delegate child's turn) or "cron".
type TurnEndPayload struct {
	SessionID         string `json:"session_id"`
	TaskID            string `json:"task_id"`
	TurnID            string `json:"turn_id"`
	UserMessage       string `json:"user_message"`
	AssistantResponse string `json:"assistant_response"`
	Continues         int    `json:"continues"`
	Model             string `json:"model"`
	Platform          string `json:"platform"`
	SessionKey        string `json:"session_key"`
	AgentContext      string `json:"agent_context"`
	// The familiar pre_verify's names, so a callback written for it reads
	// its arguments here: attempt (= continues), final_response (= the
	// reply), coding (the turn's tools changed files) and changed_paths
	// (those files: written, patched, moved or deleted).
	Attempt       int      `json:"attempt"`
	FinalResponse string   `json:"final_response"`
	Coding        bool     `json:"coding"`
	ChangedPaths  []string `json:"changed_paths"`
}

// Approval choices of post_approval_response.
const (
	ChoiceOnce    = "once"    // the person let the call run
	ChoiceSession = "session" // ... and later asks of the same rule in this conversation
	ChoiceAlways  = "always"  // ... and later asks of the same rule anywhere in the profile, from now on
	ChoiceDeny    = "deny"    // refused, or the asking failed
	ChoiceTimeout = "timeout" // nobody answered in time (the call was not run)
	// The reviewing model of approvals.mode: smart decided in the
	// person's place (surface "smart", decided_by "aux_llm").
	ChoiceSmartApprove = "smart_approve"
	ChoiceSmartDeny    = "smart_deny"
)

// DecidedByGuardian is an approval's decided_by when the reviewing model
// of approvals.mode: smart decided it, as the familiar agent says.
const DecidedByGuardian = "aux_llm"

// ApprovalPayload is the payload of pre_approval_decision (a hook may answer
// in place of the person, who is asked only when none did; Atrium's own, for
// Claude Code's PermissionRequest), of pre_approval_request (a person is
// about to be asked whether a tool call a plugin flagged may run) and of
// post_approval_response (what came of it), in the familiar API's shape:
// Command is the call as text (the tool's name and its arguments),
// Description what the plugin said, PatternKey and PatternKeys the rule the
// answer's "session" or "always" covers (plugin_rule:<rule_key>, or
// plugin_rule:<tool> when the plugin named no rule_key), Surface where the person is asked ("cli" on a terminal,
// "gateway" on a chat platform, "desktop", "dashboard", "cron"), Choice
// ("once", "session", "always", "deny" or "timeout") only after the answer. The rest is Atrium's own.
type ApprovalPayload struct {
	Command     string         `json:"command"`
	Description string         `json:"description"`
	PatternKey  string         `json:"pattern_key"`
	PatternKeys []string       `json:"pattern_keys"`
	SessionKey  string         `json:"session_key"`
	Surface     string         `json:"surface"`
	Choice      string         `json:"choice,omitempty"`
	Approved    *bool          `json:"approved,omitempty"`
	Error       string         `json:"error,omitempty"`
	DecidedBy   string         `json:"decided_by,omitempty"`
	RequestID   string         `json:"request_id"`
	SessionID   string         `json:"session_id"`
	TaskID      string         `json:"task_id"`
	TurnID      string         `json:"turn_id"`
	ToolName    string         `json:"tool_name"`
	Args        map[string]any `json:"args"`
	ToolCallID  string         `json:"tool_call_id"`
	Platform    string         `json:"platform"`
}
