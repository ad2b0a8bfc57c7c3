package tools

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The delegate_task tool: the model hands one task, or up to
// delegation.max_concurrent_children of them run side by side, to
// subagents that start with a fresh conversation of their own, and reads
// back only each one's closing summary. Its arguments, its limits and its
// result are the familiar agent's, so a model (or a skill) written for
// that agent delegates unchanged: goal, context and toolsets, or tasks;
// max_iterations. This file reads the arguments and words what the
// subagent is told; running the subagents is the turn loop's.

// DelegateTool is the tool's name; its toolset is "delegation".
const DelegateTool = "delegate_task"

// DelegateToolset is the toolset that offers DelegateTool.
const DelegateToolset = "delegation"

// Defaults of config.yaml's delegation block, as the familiar agent has
// them.
const (
	DefaultDelegateIterations = 50  // delegation.max_iterations
	DefaultDelegateChildren   = 3   // delegation.max_concurrent_children
	DefaultChildTimeoutSecs   = 600 // delegation.child_timeout_seconds
)

// BlockedForSubagents are the tools a subagent is never offered, as the
// familiar agent strips them: no delegating further, no questions to a
// person nobody shows them to, no writes to the shared memory, no messages
// to other chats, no scripts in place of reasoning (send_message and
// execute_code are not Atrium's own, but a plugin may offer them).
var BlockedForSubagents = []string{DelegateTool, ClarifyTool, MemoryTool, "send_message", "execute_code"}

// DelegateDescription and DelegateParameters are the tool as the model is
// offered it.
const DelegateDescription = "Hand work to subagents that each start with a fresh conversation, their own terminal " +
	"session and their own tools, and get back only each one's final summary: their tool calls and the output they " +
	"read never enter your context.\n\n" +
	"Either 'goal' (one task, with optional 'context' and 'toolsets') or 'tasks' (several, run at the same time; " +
	"at most delegation.max_concurrent_children, 3 unless configured) is required.\n\n" +
	"Use it for work that needs reasoning over a lot of material (debugging, reviewing code, research), for work " +
	"whose intermediate output would flood your context, and for independent pieces that can run side by side. " +
	"Do not use it for a single tool call (call the tool), or for anything that needs the user: subagents cannot ask.\n\n" +
	"A subagent knows nothing of this conversation: put every path, error message and constraint it needs in " +
	"'context'. Subagents cannot call delegate_task, clarify, memory, send_message or execute_code. " +
	"The result is always a list, one entry per task, in the order given."

const DelegateParameters = `{"type":"object","properties":{` +
	`"goal":{"type":"string","description":"What the subagent is to achieve: specific and self-contained, since it knows nothing of your conversation."},` +
	`"context":{"type":"string","description":"What the subagent needs to know: file paths, error messages, how the project is laid out, constraints."},` +
	`"toolsets":{"type":"array","items":{"type":"string"},"description":"The toolsets the subagent may use, among yours (default: all of yours). For example ['terminal', 'file'] for code, ['web'] for research."},` +
	`"tasks":{"type":"array","items":{"type":"object","properties":{` +
	`"goal":{"type":"string","description":"The task's goal"},` +
	`"context":{"type":"string","description":"The task's own context"},` +
	`"toolsets":{"type":"array","items":{"type":"string"},"description":"The task's own toolsets"}},"required":["goal"]},` +
	`"description":"Several tasks, run at the same time, each by a subagent of its own. When given, the top-level goal and context are not used."},` +
	`"max_iterations":{"type":"integer","description":"The most rounds of tool calls each subagent may make (default: delegation.max_iterations, 50). Lower it for simple tasks."}` +
	`},"required":[]}`

// DelegateTask is one task to hand to a subagent.
type DelegateTask struct {
	Goal     string
	Context  string
	Toolsets []string // nil: the parent's own
}

// ParseDelegation reads delegate_task's arguments: the tasks to run, or
// the error the model reads, in the familiar agent's words. maxChildren is
// delegation.max_concurrent_children. As there, tasks given as a JSON
// text are read as the list it holds, an empty tasks list beside a goal is
// no batch, and a task without its own toolsets takes the top-level ones.
func ParseDelegation(args map[string]any, maxChildren int) ([]DelegateTask, string) {
	if maxChildren <= 0 {
		maxChildren = DefaultDelegateChildren
	}
	toolsets, bad := stringList(args["toolsets"])
	if bad {
		return nil, "toolsets must be a list of toolset names."
	}
	raw := args["tasks"]
	if s, ok := raw.(string); ok {
		s = strings.TrimSpace(s)
		if s == "" {
			raw = nil
		} else {
			var parsed any
			if err := json.Unmarshal([]byte(s), &parsed); err != nil {
				return nil, "tasks must be a JSON array of task objects; received a string that could not be parsed as JSON."
			}
			if _, ok := parsed.([]any); !ok {
				return nil, "tasks must be a JSON array of task objects."
			}
			raw = parsed
		}
	}
	var out []DelegateTask
	switch list := raw.(type) {
	case nil:
	case []any:
		if len(list) > maxChildren {
			return nil, fmt.Sprintf("Too many tasks: %d provided, but max_concurrent_children is %d. Either reduce the task count, "+
				"split into multiple delegate_task calls, or increase delegation.max_concurrent_children in config.yaml.", len(list), maxChildren)
		}
		for i, item := range list {
			m, ok := item.(map[string]any)
			if !ok {
				return nil, fmt.Sprintf("Task %d must be an object with a 'goal'.", i)
			}
			goal, _ := m["goal"].(string)
			if strings.TrimSpace(goal) == "" {
				return nil, fmt.Sprintf("Task %d is missing a 'goal'.", i)
			}
			context, _ := m["context"].(string)
			own, bad := stringList(m["toolsets"])
			if bad {
				return nil, fmt.Sprintf("Task %d: toolsets must be a list of toolset names.", i)
			}
			if len(own) == 0 {
				own = toolsets
			}
			out = append(out, DelegateTask{Goal: goal, Context: context, Toolsets: own})
		}
	default:
		return nil, "tasks must be a JSON array of task objects."
	}
	if len(out) > 0 {
		return out, ""
	}
	goal, _ := args["goal"].(string)
	if strings.TrimSpace(goal) == "" {
		return nil, "Provide either 'goal' (single task) or 'tasks' (batch)."
	}
	context, _ := args["context"].(string)
	return []DelegateTask{{Goal: goal, Context: context, Toolsets: toolsets}}, ""
}

// stringList reads a list of names (an empty or missing one is nil); bad
// says it is something else.
func stringList(v any) (out []string, bad bool) {
	switch l := v.(type) {
	case nil:
		return nil, false
	case string: // one name, as a model sometimes sends it
		if strings.TrimSpace(l) == "" {
			return nil, false
		}
		return []string{l}, false
	case []any:
		for _, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil, true
			}
			if strings.TrimSpace(s) != "" {
				out = append(out, s)
			}
		}
		return out, false
	}
	return nil, true
}

// SubagentPrompt is the system prompt a subagent starts with: its task,
// what it was told, and what its summary is to say. Its first message is
// the goal itself.
func SubagentPrompt(goal, context string) string {
	var b strings.Builder
	b.WriteString("You are a subagent: another agent handed you one task, and you work on it alone.\n\nYOUR TASK:\n")
	b.WriteString(goal)
	if strings.TrimSpace(context) != "" {
		b.WriteString("\n\nCONTEXT:\n")
		b.WriteString(context)
	}
	b.WriteString("\n\nDo the task with the tools you have. Nobody can answer questions: decide for yourself. " +
		"When you are done, answer with a short summary for the agent that handed you the task:\n" +
		"- what you did\n- what you found or achieved\n- the files you created or changed\n- any problem you met\n\n" +
		"That answer is all it will read of your work: complete, but brief.")
	return b.String()
}
