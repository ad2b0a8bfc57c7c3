package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/atomicfile"
	"atrium/backend/sessions"
)

// transcriptLine is one message of a hook transcript, in the shape Claude
// Code's transcripts have, so the scripts written for them read it
// unchanged: a type, ids chained by parentUuid, a time and the message,
// whose content is the person's text as a string, and otherwise a list of
// blocks (the assistant's text and tool_use, the tool's tool_result).
type transcriptLine struct {
	Type       string            `json:"type"`
	UUID       string            `json:"uuid"`
	ParentUUID *string           `json:"parentUuid"`
	SessionID  string            `json:"sessionId"`
	Timestamp  string            `json:"timestamp"`
	Message    transcriptMessage `json:"message"`
}

type transcriptMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// transcriptEntry is m as a Claude Code transcript has it.
func transcriptEntry(m sessions.Message) (string, transcriptMessage) {
	switch {
	case m.Role == "assistant" && m.ToolCallID != "":
		var input any
		if json.Unmarshal([]byte(m.Content), &input) != nil {
			input = map[string]any{}
		}
		return "assistant", transcriptMessage{"assistant", []map[string]any{{"type": "tool_use", "id": m.ToolCallID, "name": m.ToolName, "input": input}}}
	case m.Role == "assistant":
		return "assistant", transcriptMessage{"assistant", []map[string]any{{"type": "text", "text": m.Content}}}
	case m.Role == "tool":
		// Claude Code files a tool's result under the user's turn.
		return "user", transcriptMessage{"user", []map[string]any{{"type": "tool_result", "tool_use_id": m.ToolCallID, "content": m.Content}}}
	}
	return m.Role, transcriptMessage{m.Role, m.Content}
}

// HookTranscript writes the session's active transcript as JSONL to
// <sessions>/<id>.jsonl, a sidecar file (removed with the session), and
// returns its path: what a Claude Code shaped shell hook reads at
// transcript_path. A session that no longer exists has none ("").
func (s *Stack) HookTranscript(ctx context.Context, id string) (string, error) {
	msgs, err := s.Sessions.Messages(ctx, id, false)
	if apperr.Is(err, apperr.NotFound) || apperr.Is(err, apperr.Invalid) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	dir := s.Home.SessionsDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, id+".jsonl")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	var parent *string
	for _, m := range msgs {
		typ, msg := transcriptEntry(m)
		uuid := id + "-" + strconv.FormatInt(m.ID, 10)
		if err := enc.Encode(transcriptLine{Type: typ, UUID: uuid, ParentUUID: parent, SessionID: id,
			Timestamp: m.CreatedAt.UTC().Format(time.RFC3339Nano), Message: msg}); err != nil {
			return "", err
		}
		parent = &uuid
	}
	if err := atomicfile.Write(path, buf.Bytes(), 0o600, nil); err != nil {
		return "", err
	}
	// Deleted meanwhile: its sidecars were removed already, so this one
	// would stay behind.
	if _, err := s.Sessions.Get(ctx, id); apperr.Is(err, apperr.NotFound) {
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return "", rerr
		}
		return "", nil
	}
	return path, nil
}
