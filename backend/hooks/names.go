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
// added, never renamed.
type SessionDelete struct {
	SessionID   string   `json:"session_id"`
	Reason      string   `json:"reason"`
	Profile     string   `json:"profile"`
	DeletedIDs  []string `json:"deleted_ids"`
	SessionsDir string   `json:"sessions_dir,omitempty"`
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
