package turns

import (
	"context"
	"log/slog"

	"atrium/backend/llm"
	"atrium/backend/tools"
)

// The curated memory (MEMORY.md, USER.md) in a turn: its snapshot in the
// system prompt, frozen when the conversation starts, and the memory tool,
// whose writes the memory provider mirrors (on_memory_write). A scheduled
// run and a delegated subagent have neither, as with the familiar agent:
// their prompts are not the user's and would corrupt what is kept about
// them. Nor does a platform whose toolsets leave the memory tool out.

var notesSpec = llm.ToolSpec{Name: tools.MemoryTool, Description: tools.MemoryDescription, Parameters: tools.MemoryParameters}

// notes is the curated memory a turn may use (nil: none).
func (l *Loop) notes(tc *turnCtx) *tools.Memory {
	if tc.agentCtx != "primary" || !tc.machine.Memory.On() {
		return nil
	}
	return &tc.machine.Memory
}

// notesPrompt is the memory's part of a new conversation's system prompt:
// the files as they are now ("" when they are empty, or the conversation
// has no memory). Memory goes with its tool: where toolsets (or a
// platform's own list) leave the memory tool out, the files are not shown
// either, so a chat platform can be kept from seeing what is kept about
// the owner. The tool's own description says when to use it.
func (l *Loop) notesPrompt(tc *turnCtx) string {
	m := l.notes(tc)
	if m == nil || !tc.offered[tools.MemoryTool] {
		return ""
	}
	snapshot, err := m.Snapshot()
	if err != nil {
		slog.Warn("memory file left out of the system prompt", "error", err)
	}
	return snapshot
}

// runNotes runs the memory tool, and tells the memory provider of each
// entry it added or replaced, as the familiar agent mirrors them.
func (l *Loop) runNotes(ctx context.Context, tc *turnCtx, sessionID, callID string, args map[string]any) (result, errType, errMsg string) {
	m := l.notes(tc)
	if m == nil {
		return `{"success":false,"error":"There is no memory in this conversation."}`, "tool_error", "no memory"
	}
	out, wrote := m.Call(args, &tc.memFailures)
	for _, w := range wrote {
		if w.Action != "add" && w.Action != "replace" {
			continue
		}
		l.callMemory(ctx, tc, "on_memory_write", []any{w.Action, w.Target, w.Content}, map[string]any{"metadata": map[string]any{
			"write_origin": "assistant_tool", "execution_context": "foreground", "session_id": sessionID,
			"parent_session_id": tc.parentID, "platform": tc.platform, "tool_name": tools.MemoryTool,
			"task_id": tc.taskID, "tool_call_id": callID}})
	}
	return toolOutcome(out)
}
