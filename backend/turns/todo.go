package turns

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"atrium/backend/apperr"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/tools"
)

// The task list (the todo tool) of a conversation: kept beside its
// session in the profile's sessions/ folder (<id>.todo.json, a sidecar
// file: it goes with the session when it is deleted or moved), so that
// every surface and every process sees the same list. A conversation that
// compaction continued in another session goes on with its list, and is
// reminded of what is left to do at its next turn, as the familiar agent
// reminds the model after a compression.

var todoSpec = llm.ToolSpec{Name: tools.TodoTool, Description: tools.TodoDescription, Parameters: tools.TodoParameters}

// maxTodoAncestry bounds the walk up a chain of compactions to the list.
const maxTodoAncestry = 64

// todoPath is where sessionID's list is kept ("" without a sessions
// folder: then in this process only).
func (l *Loop) todoPath(sessionID string) string {
	if dir := l.sessions.SessionsDir(); dir != "" {
		return filepath.Join(dir, sessionID+".todo.json")
	}
	return ""
}

// todos keeps lists in the process when there is no sessions folder.
var todosInProcess sync.Map // session id -> tools.Todos

// loadTodos is sessionID's list, and the session it was kept for (an
// ancestor's, when compaction continued the conversation since; "" when
// there is none).
func (l *Loop) loadTodos(ctx context.Context, sessionID string) (tools.Todos, string, error) {
	id := sessionID
	for range maxTodoAncestry {
		if path := l.todoPath(id); path != "" {
			t, found, err := tools.LoadTodos(path)
			if err != nil || found {
				return t, id, err
			}
		} else if t, ok := todosInProcess.Load(id); ok {
			return t.(tools.Todos), id, nil
		}
		s, err := l.sessions.Get(ctx, id)
		if err != nil || s.Relation != sessions.RelationCompression || s.ParentSessionID == nil {
			return tools.Todos{}, "", nil
		}
		id = *s.ParentSessionID
	}
	return tools.Todos{}, "", nil
}

func (l *Loop) saveTodos(ctx context.Context, sessionID string, t tools.Todos) error {
	path := l.todoPath(sessionID)
	if path == "" {
		todosInProcess.Store(sessionID, t)
		return nil
	}
	if err := t.Save(path); err != nil {
		return err
	}
	// Deleted for good meanwhile: its sidecars were removed already, so
	// this one would stay behind.
	if _, err := l.sessions.Get(ctx, sessionID); apperr.Is(err, apperr.NotFound) {
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return rerr
		}
	}
	return nil
}

// runTodo runs the todo tool on the conversation's list.
func (l *Loop) runTodo(ctx context.Context, sessionID string, args map[string]any) (result, errType, errMsg string) {
	t, from, err := l.loadTodos(ctx, sessionID)
	if err != nil {
		slog.Warn("the task list cannot be read; the call starts a new one", "session_id", sessionID, "error", err)
	}
	next, out := t.Call(args)
	if next.Revision != t.Revision || (from != sessionID && len(next.Items) > 0) {
		if err := l.saveTodos(ctx, sessionID, next); err != nil {
			b, _ := json.Marshal(map[string]string{"error": "the task list could not be kept: " + err.Error()})
			return string(b), "tool_error", err.Error()
		}
	}
	return toolOutcome(out)
}

// todoReminder is what is left to do of the list a compacted conversation
// carried over ("" when it carried none, or was reminded already): kept
// for the continuation from then on, so it is said once. A session no
// compaction continued has nothing carried over, and is not looked at: the
// turn's start costs no file and no row for it.
func (l *Loop) todoReminder(ctx context.Context, sess sessions.Session, offered bool) string {
	if !offered || sess.Relation != sessions.RelationCompression || sess.ParentSessionID == nil {
		return ""
	}
	t, from, err := l.loadTodos(ctx, sess.ID)
	if err != nil || from == "" || from == sess.ID {
		return ""
	}
	if err := l.saveTodos(ctx, sess.ID, t); err != nil {
		slog.Warn("the task list could not be kept for the continued conversation", "session_id", sess.ID, "error", err)
	}
	return t.Active()
}
