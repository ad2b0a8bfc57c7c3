package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// todoCall runs a call with args given as JSON, as the model sends them.
func todoCall(t *testing.T, list Todos, args string) (Todos, map[string]any) {
	t.Helper()
	var a map[string]any
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		t.Fatal(err)
	}
	next, out := list.Call(a)
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%s: not JSON: %s", args, out)
	}
	return next, r
}

func ids(t Todos) string {
	var out []string
	for _, it := range t.Items {
		s := it.ID + ":" + it.Status
		if it.Parent != "" {
			s += "<" + it.Parent
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// A list written whole: the familiar agent's shapes and repairs (the last
// of a repeated id where it stands, an item without id or description, a
// status it does not know), its summary, and a revision bumped by a change
// only.
func TestTodoWriteAndRead(t *testing.T) {
	t.Parallel()
	list, r := todoCall(t, Todos{}, `{"todos": [{"id": "1", "content": "read the code", "status": "completed"},
		{"id": "2", "content": "first try", "status": "pending"}, {"content": "no id", "status": "bogus"},
		{"id": "2", "content": "write the fix", "status": "in_progress"}, 7, {"id": "3", "status": "pending", "parent": "3"}]}`)
	want := []TodoItem{{ID: "1", Content: "read the code", Status: "completed"}, {ID: "?", Content: "no id", Status: "pending"},
		{ID: "2", Content: "write the fix", Status: "in_progress"}, {ID: "?", Content: "(invalid item)", Status: "pending"},
		{ID: "3", Content: "(no description)", Status: "pending"}}
	// The item in progress goes ahead of the pending ones written before it.
	want[1], want[2] = want[2], want[1]
	if !reflect.DeepEqual(list.Items, want) || list.Revision != 1 {
		t.Fatalf("items: %+v rev %d", list.Items, list.Revision)
	}
	if !reflect.DeepEqual(r["summary"], map[string]any{"total": 5.0, "pending": 3.0, "in_progress": 1.0, "completed": 1.0, "cancelled": 0.0}) ||
		r["revision"] != 1.0 || len(r["todos"].([]any)) != 5 {
		t.Fatalf("result: %v", r)
	}
	again, r := todoCall(t, list, `{}`)
	if !reflect.DeepEqual(again, list) || len(r["todos"].([]any)) != 5 {
		t.Fatalf("read: %v", r)
	}
	if _, r := todoCall(t, Todos{}, `{}`); fmt.Sprint(r["todos"]) != "[]" || r["revision"] != 0.0 {
		t.Fatalf("an empty list: %v", r)
	}
	same, _ := todoCall(t, list, `{"todos": [{"id": "1", "content": "read the code", "status": "completed"}, {"id": "2", "content": "write the fix", "status": "in_progress"},
		{"content": "no id", "status": "pending"}, 7, {"id": "3", "status": "pending"}]}`)
	if same.Revision != 1 {
		t.Fatalf("the same list again bumped the revision: %d (%s)", same.Revision, ids(same))
	}
}

// merge changes items by id and adds new ones at the end; a field left out
// stays; parent "" makes an item top-level; an item without id is skipped.
func TestTodoMerge(t *testing.T) {
	t.Parallel()
	list, _ := todoCall(t, Todos{}, `{"todos": [{"id": "a", "content": "plan", "status": "in_progress"}, {"id": "b", "content": "build", "status": "pending"},
		{"id": "c", "content": "unit tests", "status": "pending", "parent": "b"}]}`)
	list, _ = todoCall(t, list, `{"merge": true, "todos": [{"id": "a", "status": "completed"}, {"id": "c", "parent": ""}, {"id": "b", "status": "nonsense", "content": "build it"},
		{"content": "orphan"}, {"id": "d", "content": "ship", "status": "pending"}]}`)
	if got := ids(list); got != "a:completed b:pending c:pending d:pending" || list.Items[1].Content != "build it" || list.Revision != 2 {
		t.Fatalf("merged: %s %+v", got, list)
	}
	// Merge as text, the way some models send it.
	list, _ = todoCall(t, list, `{"merge": "true", "todos": "[{\"id\": \"d\", \"status\": \"in_progress\"}]"}`)
	if got := ids(list); got != "a:completed d:in_progress b:pending c:pending" {
		t.Fatalf("as text: %s", got)
	}
	for _, bad := range []string{`{"todos": "not json"}`, `{"todos": 3}`, `{"todos": {"id": "x"}}`} {
		next, r := todoCall(t, list, bad)
		if r["error"] == nil || !reflect.DeepEqual(next, list) {
			t.Errorf("%s: %v", bad, r)
		}
	}
}

// Subtasks: a parent that is not in the list, or a loop of parents, makes
// a top-level item; a list with subtasks keeps its order; the reminder
// after a compaction lists what is left to do, under parents still open.
func TestTodoSubtasksAndReminder(t *testing.T) {
	t.Parallel()
	list, _ := todoCall(t, Todos{}, `{"todos": [{"id": "1", "content": "release", "status": "pending"},
		{"id": "1.1", "content": "changelog", "status": "completed", "parent": "1"}, {"id": "1.2", "content": "tag", "status": "in_progress", "parent": "1"},
		{"id": "x", "content": "loop x", "status": "pending", "parent": "y"}, {"id": "y", "content": "loop y", "status": "pending", "parent": "x"},
		{"id": "z", "content": "lost", "status": "cancelled", "parent": "nowhere"}, {"id": "2", "content": "done", "status": "completed"}]}`)
	if got := ids(list); got != "1:pending 1.1:completed<1 1.2:in_progress<1 x:pending y:pending<x z:cancelled 2:completed" {
		t.Fatalf("parents: %s", got)
	}
	want := "[Your task list, kept across the compaction of this conversation; the todo tool reads and changes it]\n" +
		"- [ ] 1. release (pending)\n  - [>] 1.2. tag (in_progress)\n- [ ] x. loop x (pending)\n  - [ ] y. loop y (pending)"
	if got := list.Active(); got != want {
		t.Fatalf("reminder:\n%s\nwant:\n%s", got, want)
	}
	done, _ := todoCall(t, list, `{"todos": [{"id": "1", "content": "release", "status": "completed"}]}`)
	if done.Active() != "" {
		t.Fatalf("nothing left: %q", done.Active())
	}
}

// Bounds: an item's description and the list's length; a kept list read
// back, a broken or huge file refused.
func TestTodoBoundsAndFile(t *testing.T) {
	t.Parallel()
	var items []string
	for i := range 300 {
		items = append(items, fmt.Sprintf(`{"id": "%d", "content": "step %d", "status": "pending"}`, i, i))
	}
	items[0] = `{"id": "0", "content": "` + strings.Repeat("é", 5000) + `", "status": "pending"}`
	list, _ := todoCall(t, Todos{}, `{"todos": [`+strings.Join(items, ",")+`]}`)
	if len(list.Items) != 256 || list.Items[255].ID != "255" || len([]rune(list.Items[0].Content)) != 4000 || !strings.HasSuffix(list.Items[0].Content, "… [truncated]") {
		t.Fatalf("bounds: %d items, first %d runes", len(list.Items), len([]rune(list.Items[0].Content)))
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "s.todo.json")
	if _, found, err := LoadTodos(path); found || err != nil {
		t.Fatalf("none yet: %v %v", found, err)
	}
	if err := list.Save(path); err != nil {
		t.Fatal(err)
	}
	if back, found, err := LoadTodos(path); !found || err != nil || !reflect.DeepEqual(back, list) {
		t.Fatalf("read back: %v %v", found, err)
	}
	if err := os.WriteFile(path, []byte("{broken"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadTodos(path); err == nil {
		t.Fatal("a broken file read as a list")
	}
	if err := os.WriteFile(path, make([]byte, maxTodoFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadTodos(path); err == nil || !strings.Contains(err.Error(), "over the 4 MiB limit for a task list") {
		t.Fatalf("huge: %v", err)
	}
}
