package hooks

// Payloads of the hooks the turn loop and the session store fire. They carry
// every argument the familiar Python plugin API lists for the hook, always
// (null when unknown, [] for an empty history), so a callback that declares
// one never misses it; Atrium's own earlier field names stay beside them.
// Fields are only ever added.

// SessionStart is the payload of on_session_start (the first turn).
type SessionStart struct {
	SessionID  string  `json:"session_id"`
	Model      *string `json:"model"`
	Platform   string  `json:"platform"`
	SessionKey string  `json:"session_key"`
}

// SessionEnd is the payload of on_session_end, fired after every turn,
// finished or not.
type SessionEnd struct {
	SessionID      string  `json:"session_id"`
	TaskID         string  `json:"task_id"`
	TurnID         string  `json:"turn_id"`
	Completed      bool    `json:"completed"`
	Failed         bool    `json:"failed"`
	Interrupted    bool    `json:"interrupted"`
	TurnExitReason string  `json:"turn_exit_reason"`
	Model          *string `json:"model"`
	Platform       string  `json:"platform"`
	SessionKey     string  `json:"session_key"`
}

// LoopStopped is the payload of agent_loop_stopped: a turn was interrupted
// mid-run. SessionKey, Platform, Reason and InvalidationReason are the
// familiar API's; the ids are Atrium's.
type LoopStopped struct {
	SessionKey         string `json:"session_key"`
	Platform           string `json:"platform"`
	Reason             string `json:"reason"`
	InvalidationReason string `json:"invalidation_reason"`
	SessionID          string `json:"session_id"`
	TaskID             string `json:"task_id"`
	TurnID             string `json:"turn_id"`
}

// SessionFinalize is the payload of on_session_finalize (a session ended:
// /exit, /new, sessions end, rotation by compaction).
type SessionFinalize struct {
	SessionID    string  `json:"session_id"`
	Platform     *string `json:"platform"`
	Reason       string  `json:"reason"`
	OldSessionID *string `json:"old_session_id"`
	NewSessionID *string `json:"new_session_id"`
}

// SessionReset is the payload of on_session_reset (/new): SessionID is the
// new session, as NewSessionID.
type SessionReset struct {
	OldSessionID string `json:"old_session_id"`
	SessionID    string `json:"session_id"`
	NewSessionID string `json:"new_session_id"`
	Platform     string `json:"platform"`
	Reason       string `json:"reason"`
}

// LLMCall is the payload of pre_llm_call, called in line before the turn's
// first model call.
type LLMCall struct {
	SessionID           string           `json:"session_id"`
	TaskID              string           `json:"task_id"`
	TurnID              string           `json:"turn_id"`
	UserMessage         string           `json:"user_message"`
	ConversationHistory []map[string]any `json:"conversation_history"`
	IsFirstTurn         bool             `json:"is_first_turn"`
	Model               string           `json:"model"`
	Platform            string           `json:"platform"`
	ParentSessionID     *string          `json:"parent_session_id"`
	SenderID            *string          `json:"sender_id"`
	SessionKey          string           `json:"session_key"`
	// SessionStart (Atrium's own) says why this turn begins the session's
	// context anew: "startup" (its first turn), "clear" (the first turn of
	// a session /new started), "compact" (the first turn after a summary
	// replaced part of it); "" for any other turn.
	SessionStart string `json:"session_start"`
}

// PostLLMCallPayload is the payload of post_llm_call (after the reply is stored):
// assistant_response, and Atrium's earlier assistant_message beside it.
type PostLLMCallPayload struct {
	SessionID           string           `json:"session_id"`
	TaskID              string           `json:"task_id"`
	TurnID              string           `json:"turn_id"`
	UserMessage         string           `json:"user_message"`
	AssistantResponse   string           `json:"assistant_response"`
	AssistantMessage    string           `json:"assistant_message"`
	ConversationHistory []map[string]any `json:"conversation_history"`
	IsFirstTurn         bool             `json:"is_first_turn"`
	Model               string           `json:"model"`
	Platform            string           `json:"platform"`
	SessionKey          string           `json:"session_key"`
}

// TransformLLMOutputPayload is the payload of transform_llm_output.
type TransformLLMOutputPayload struct {
	ResponseText string `json:"response_text"`
	SessionID    string `json:"session_id"`
	TaskID       string `json:"task_id"`
	TurnID       string `json:"turn_id"`
	Model        string `json:"model"`
	Platform     string `json:"platform"`
	SessionKey   string `json:"session_key"`
}

// ToolCallPayload is the payload of pre_tool_call: args as an object, and
// Atrium's earlier arguments (the JSON text) beside it.
type ToolCallPayload struct {
	ToolName        string           `json:"tool_name"`
	Args            map[string]any   `json:"args"`
	Arguments       string           `json:"arguments"`
	TaskID          string           `json:"task_id"`
	SessionID       string           `json:"session_id"`
	ToolCallID      string           `json:"tool_call_id"`
	TurnID          string           `json:"turn_id"`
	APIRequestID    *string          `json:"api_request_id"`
	MiddlewareTrace []map[string]any `json:"middleware_trace"`
	SessionKey      string           `json:"session_key"`
}

// ToolResultPayload is the payload of post_tool_call and
// transform_tool_result. Status is "ok", "error" or "blocked".
type ToolResultPayload struct {
	ToolName     string         `json:"tool_name"`
	Args         map[string]any `json:"args"`
	Arguments    string         `json:"arguments"`
	TaskID       string         `json:"task_id"`
	SessionID    string         `json:"session_id"`
	ToolCallID   string         `json:"tool_call_id"`
	TurnID       string         `json:"turn_id"`
	Result       string         `json:"result"`
	ResultSize   int            `json:"result_size"`
	DurationMS   int64          `json:"duration_ms"`
	Status       string         `json:"status"`
	ErrorType    *string        `json:"error_type"`
	ErrorMessage *string        `json:"error_message"`
	Error        string         `json:"error,omitempty"`
	SessionKey   string         `json:"session_key"`
}

// TerminalOutput is the payload of transform_terminal_output: a terminal
// command's output before the model reads it, in the familiar agent's
// names (returncode, env_type). The first string answered replaces the
// output (still bounded to the terminal's limit afterwards).
type TerminalOutput struct {
	Command    string `json:"command"`
	Output     string `json:"output"`
	Returncode int    `json:"returncode"`
	TaskID     string `json:"task_id"`
	EnvType    string `json:"env_type"`
	SessionID  string `json:"session_id"`
	ToolCallID string `json:"tool_call_id"`
	TurnID     string `json:"turn_id"`
	SessionKey string `json:"session_key"`
}

// APIRequest is the payload of pre_api_request, post_api_request and
// api_request_error: one model call's envelope, ids, usage and timing.
type APIRequest struct {
	SessionID         string         `json:"session_id"`
	TaskID            string         `json:"task_id"`
	TurnID            string         `json:"turn_id"`
	APIRequestID      string         `json:"api_request_id"`
	APICallCount      int            `json:"api_call_count"`
	Model             string         `json:"model"`
	Provider          string         `json:"provider"`
	Platform          string         `json:"platform"`
	APIMode           string         `json:"api_mode"`
	StartedAt         float64        `json:"started_at"` // Unix seconds
	MessageCount      int            `json:"message_count"`
	ToolCount         int            `json:"tool_count"`
	ApproxInputTokens int            `json:"approx_input_tokens"`
	Request           map[string]any `json:"request"`
	// After the call (null before it).
	EndedAt                *float64       `json:"ended_at"`
	APIDuration            *float64       `json:"api_duration"` // seconds
	DurationMS             *int64         `json:"duration_ms"`
	Usage                  map[string]any `json:"usage"`
	FinishReason           *string        `json:"finish_reason"`
	Response               map[string]any `json:"response"`
	AssistantContentChars  *int           `json:"assistant_content_chars"`
	AssistantToolCallCount *int           `json:"assistant_tool_call_count"`
	ContextLength          int            `json:"context_length"`
	Error                  map[string]any `json:"error"` // api_request_error: {type, message}
	StatusCode             *int           `json:"status_code"`
	Retryable              *bool          `json:"retryable"`
	SessionKey             string         `json:"session_key"`
	// BaseURL is the provider's API root ("" for the offline provider).
	BaseURL string `json:"base_url"`
	// RetryCount is the attempt's place among a call's retries (0 the
	// first attempt), MaxRetries agent.api_max_retries (a prompt over the
	// context is compacted and sent as a new request, at 0).
	RetryCount int `json:"retry_count"`
	MaxRetries int `json:"max_retries"`
	// Reason classifies an api_request_error as the familiar API does:
	// auth, billing, rate_limit, overloaded, server_error, timeout,
	// context_overflow, payload_too_large, model_not_found, format_error or
	// unknown ("" before and after a successful call).
	Reason string `json:"reason,omitempty"`
}

// PreCommandPayload is the payload of pre_command, called in line before a
// slash command's handler (its answer is ignored).
type PreCommandPayload struct {
	Surface    string  `json:"surface"`
	Command    string  `json:"command"`
	AliasUsed  *string `json:"alias_used"`
	ArgsRaw    string  `json:"args_raw"`
	SessionKey string  `json:"session_key"`
	Platform   string  `json:"platform"`
	SessionID  string  `json:"session_id"`
}

// SubagentStartPayload is the payload of subagent_start: a delegate child
// session was created for a task.
type SubagentStartPayload struct {
	ParentSessionID  string  `json:"parent_session_id"`
	ParentTurnID     *string `json:"parent_turn_id"`
	ParentSubagentID *string `json:"parent_subagent_id"`
	ChildSessionID   string  `json:"child_session_id"`
	ChildSubagentID  string  `json:"child_subagent_id"`
	ChildRole        *string `json:"child_role"`
	ChildGoal        string  `json:"child_goal"`
	Profile          string  `json:"profile"`
}

// SubagentStopPayload is the payload of subagent_stop: a delegate child
// session ended.
type SubagentStopPayload struct {
	ParentSessionID string  `json:"parent_session_id"`
	ParentTurnID    *string `json:"parent_turn_id"`
	ChildSessionID  string  `json:"child_session_id"`
	ChildSubagentID string  `json:"child_subagent_id"`
	ChildRole       *string `json:"child_role"`
	ChildGoal       string  `json:"child_goal"`
	ChildStatus     string  `json:"child_status"`
	ChildSummary    *string `json:"child_summary"`
	DurationMS      int64   `json:"duration_ms"`
	Reason          string  `json:"reason"`
	Profile         string  `json:"profile"`
}

// Str is a pointer to s, for the nullable fields of payloads.
func Str(s string) *string { return &s }

// StrOrNil is nil for "", else a pointer to s.
func StrOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
