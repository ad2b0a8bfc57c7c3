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
)

// transcriptLine is one message of a hook transcript, in the shape Claude
// Code's transcripts have: a type, ids, a time and the message.
type transcriptLine struct {
	Type      string            `json:"type"`
	UUID      string            `json:"uuid"`
	SessionID string            `json:"sessionId"`
	Timestamp string            `json:"timestamp"`
	Message   transcriptMessage `json:"message"`
}

type transcriptMessage struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolName   string `json:"tool_name,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
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
	for _, m := range msgs {
		typ := m.Role
		if typ == "tool" {
			typ = "user" // Claude Code files tool results under the user's turn
		}
		if err := enc.Encode(transcriptLine{Type: typ, UUID: id + "-" + strconv.FormatInt(m.ID, 10), SessionID: id,
			Timestamp: m.CreatedAt.UTC().Format(time.RFC3339Nano),
			Message:   transcriptMessage{Role: m.Role, Content: m.Content, ToolName: m.ToolName, ToolCallID: m.ToolCallID}}); err != nil {
			return "", err
		}
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
