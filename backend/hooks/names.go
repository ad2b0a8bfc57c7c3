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
	// Observer hooks fire after commit, off the caller's path; results are ignored.
	Observer Kind = iota
	// Sync hooks are called in line and their results are used (pre_llm_call).
	Sync
)

// Stable hook names. They never change once shipped.
const (
	OnSessionStart    = "on_session_start"
	OnSessionEnd      = "on_session_end"
	OnSessionFinalize = "on_session_finalize"
	OnSessionReset    = "on_session_reset"
	OnSessionDelete   = "on_session_delete"
	OnSessionRestore  = "on_session_restore"
	PostCompaction    = "post_compaction"
	PreLLMCall        = "pre_llm_call"
	PostLLMCall       = "post_llm_call"
	PreToolCall       = "pre_tool_call"
	PostToolCall      = "post_tool_call"
)

var table = map[string]Kind{
	OnSessionStart:    Observer,
	OnSessionEnd:      Observer,
	OnSessionFinalize: Observer,
	OnSessionReset:    Observer,
	OnSessionDelete:   Observer,
	OnSessionRestore:  Observer,
	PostCompaction:    Observer,
	PreLLMCall:        Sync,
	PostLLMCall:       Observer,
	PreToolCall:       Observer,
	PostToolCall:      Observer,
}

// Names lists every known hook, sorted.
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
	k, ok := table[name]
	if !ok {
		return 0, apperr.New(apperr.Invalid, "unknown hook %q (known: %v)", name, Names())
	}
	return k, nil
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
}

// SessionReset is the payload of on_session_reset (/new).
type SessionReset struct {
	OldSessionID string `json:"old_session_id"`
	SessionID    string `json:"session_id"`
	Platform     string `json:"platform"`
}

// SessionLifecycle is the payload of on_session_start, on_session_end and
// on_session_finalize.
type SessionLifecycle struct {
	SessionID string `json:"session_id"`
	Platform  string `json:"platform,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Turn      int    `json:"turn,omitempty"`
}

// LLMCall is the payload of pre_llm_call (called synchronously) and
// post_llm_call.
type LLMCall struct {
	SessionID           string           `json:"session_id"`
	UserMessage         string           `json:"user_message"`
	ConversationHistory []map[string]any `json:"conversation_history,omitempty"`
	IsFirstTurn         bool             `json:"is_first_turn"`
	Model               string           `json:"model"`
	Platform            string           `json:"platform"`
	AssistantMessage    string           `json:"assistant_message,omitempty"`
}

// ToolCallPayload is the payload of pre_tool_call and post_tool_call.
type ToolCallPayload struct {
	SessionID  string `json:"session_id"`
	ToolName   string `json:"tool_name"`
	ToolCallID string `json:"tool_call_id"`
	Arguments  string `json:"arguments"`
	Result     string `json:"result,omitempty"`
	ResultSize int    `json:"result_size,omitempty"`
	Error      string `json:"error,omitempty"`
}
