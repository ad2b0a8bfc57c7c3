package tools

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// delegate_task's arguments are read as the familiar agent reads them: a
// goal, or tasks (a list, or the JSON text of one); a task without its own
// toolsets takes the top-level ones; an empty batch beside a goal is one
// task.
func TestParseDelegation(t *testing.T) {
	got, problem := ParseDelegation(map[string]any{"goal": "fix it", "context": "in /src", "toolsets": []any{"terminal", "file"}}, 3)
	if problem != "" || !reflect.DeepEqual(got, []DelegateTask{{Goal: "fix it", Context: "in /src", Toolsets: []string{"terminal", "file"}}}) {
		t.Fatalf("%+v %q", got, problem)
	}
	got, problem = ParseDelegation(map[string]any{"goal": "ignored", "context": "ignored too", "toolsets": []any{"web"},
		"tasks": []any{map[string]any{"goal": "a", "context": "ca"}, map[string]any{"goal": "b", "toolsets": "file"}}}, 3)
	if problem != "" || !reflect.DeepEqual(got, []DelegateTask{{Goal: "a", Context: "ca", Toolsets: []string{"web"}}, {Goal: "b", Toolsets: []string{"file"}}}) {
		t.Fatalf("%+v %q", got, problem)
	}
	got, problem = ParseDelegation(map[string]any{"tasks": `[{"goal": "from text"}]`}, 3)
	if problem != "" || len(got) != 1 || got[0].Goal != "from text" {
		t.Fatalf("%+v %q", got, problem)
	}
	if _, problem := ParseDelegation(map[string]any{"tasks": []any{"a", "b"}}, 3); problem != "Task 0 must be an object with a 'goal'." {
		t.Fatal(problem)
	}
	if _, problem := ParseDelegation(map[string]any{"tasks": []any{map[string]any{"goal": "a"}, map[string]any{"goal": "b"}}}, 1); !strings.HasPrefix(problem,
		"Too many tasks: 2 provided, but max_concurrent_children is 1.") {
		t.Fatal(problem)
	}
	if _, problem := ParseDelegation(map[string]any{"tasks": `{"goal": "an object"}`}, 3); problem != "tasks must be a JSON array of task objects." {
		t.Fatal(problem)
	}
}

// The delegation toolset offers delegate_task, as all and hermes-* do;
// the tools no subagent has are named once.
func TestTheDelegationToolset(t *testing.T) {
	for _, list := range [][]string{{"delegation"}, {"all"}, {"hermes-cli"}, {"delegate_task"}} {
		if on, warnings := Listed(list); !on[DelegateTool] || len(warnings) != 0 {
			t.Errorf("%v: %v %v", list, on, warnings)
		}
	}
	if on, _ := Listed([]string{"terminal", "file"}); on[DelegateTool] {
		t.Error("terminal and file offer delegate_task")
	}
	if !slices.Equal(BlockedForSubagents, []string{DelegateTool, ClarifyTool, MemoryTool, "send_message", "execute_code"}) {
		t.Error(BlockedForSubagents)
	}
}
