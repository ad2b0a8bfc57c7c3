package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"unicode/utf8"

	"atrium/backend/atomicfile"
	"atrium/backend/limits"
)

// The task list, as the familiar agent's todo tool keeps it: the model
// plans a task of several steps as a list (ids it chooses, a status each,
// subtasks under a parent), reads it back with no arguments, and changes
// it whole or by id (merge). One list per conversation, kept beside it (a
// compacted conversation goes on with its list); every change bumps a
// revision.

// TodoTool is the task list's tool name (and its toolset's).
const TodoTool = "todo"

// The statuses of a task.
const (
	TodoPending    = "pending"
	TodoInProgress = "in_progress"
	TodoCompleted  = "completed"
	TodoCancelled  = "cancelled"
)

var todoStatuses = []string{TodoPending, TodoInProgress, TodoCompleted, TodoCancelled}

// Bounds of a list: it is read back into the conversation after a
// compaction, so neither an item nor the list may grow without end.
const (
	maxTodoContent = 4000
	maxTodoItems   = 256
	maxTodoFile    = 4 << 20
	todoClipped    = "… [truncated]"
)

// TodoItem is one task.
type TodoItem struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	Status  string `json:"status"`
	Parent  string `json:"parent,omitempty"` // the task this one is a step of
}

// Todos is a conversation's task list; its order is its priority.
type Todos struct {
	Items    []TodoItem `json:"todos"`
	Revision int        `json:"revision"`
}

// TodoDescription and TodoParameters are the tool as the model is offered
// it, in the familiar agent's arguments.
const (
	TodoDescription = "Keep a task list for work of three steps or more, or when the user asks for several things. " +
		"Write the whole plan as todos (each {id, content, status}, status pending, in_progress, completed or cancelled; " +
		"parent makes an item a step of another); call with no arguments to read it back. The order is the priority, " +
		"and only one item is in_progress at a time. With merge true, items are changed by id and new ones added; " +
		"without, the list is replaced. Mark an item completed only once the work is done and checked; if something " +
		"fails, cancel it and add what replaces it. For 'all N' tasks, list every one. Every call answers the whole list."
	TodoParameters = `{"type":"object","properties":{` +
		`"todos":{"type":"array","description":"The items to write.","items":{"type":"object","properties":{` +
		`"id":{"type":"string"},"content":{"type":"string","description":"What the task is"},` +
		`"status":{"type":"string","enum":["pending","in_progress","completed","cancelled"]},` +
		`"parent":{"type":"string","description":"The id of the item this one is a step of (leave out for a top-level item)."}},` +
		`"required":["id","content","status"]}},` +
		`"merge":{"type":"boolean","description":"true: change items by id and add new ones; false (the default): replace the list.","default":false}},` +
		`"required":[]}`
)

// Call runs one call of the tool with the model's arguments: it answers the
// list as it is then (and a summary by status), and the list to keep.
func (t Todos) Call(args map[string]any) (Todos, string) {
	c := &Call{Args: args}
	raw, write := args["todos"]
	if write && raw != nil {
		items, ok := list(raw)
		if _, isText := raw.(string); isText && !ok {
			return t, `{"error":"todos must be a list of objects; the text sent is not one"}`
		}
		if !ok {
			return t, fmt.Sprintf(`{"error":"todos must be a list, not %s"}`, jsonKind(raw))
		}
		t = t.write(items, c.boolean("merge"))
	}
	return t, t.result()
}

func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case string:
		return "text"
	case float64, int, int64, json.Number:
		return "a number"
	case bool:
		return "a switch"
	}
	return "that"
}

func (t Todos) result() string {
	counts := map[string]int{}
	for _, it := range t.Items {
		counts[it.Status]++
	}
	items := t.Items
	if items == nil {
		items = []TodoItem{}
	}
	b, _ := json.Marshal(map[string]any{"todos": items, "revision": t.Revision, "summary": map[string]int{"total": len(t.Items),
		TodoPending: counts[TodoPending], TodoInProgress: counts[TodoInProgress], TodoCompleted: counts[TodoCompleted], TodoCancelled: counts[TodoCancelled]}})
	return string(b)
}

// write replaces the list with list, or (merge) changes its items by id
// and adds the new ones at its end.
func (t Todos) write(list []any, merge bool) Todos {
	before := slices.Clone(t.Items)
	var items []TodoItem
	if !merge {
		for _, raw := range lastByID(list) {
			items = append(items, todoItem(raw))
		}
	} else {
		items = slices.Clone(t.Items)
		at := map[string]int{}
		for i, it := range items {
			at[it.ID] = i
		}
		for _, raw := range lastByID(list) {
			o, _ := raw.(map[string]any)
			id := strings.TrimSpace(text(o["id"]))
			if id == "" {
				continue // nothing to merge it with
			}
			i, ok := at[id]
			if !ok {
				at[id] = len(items)
				items = append(items, todoItem(raw))
				continue
			}
			if c := strings.TrimSpace(text(o["content"])); c != "" {
				items[i].Content = clipTodo(c)
			}
			if s := strings.ToLower(strings.TrimSpace(text(o["status"]))); slices.Contains(todoStatuses, s) {
				items[i].Status = s
			}
			if p, ok := o["parent"]; ok {
				if p := strings.TrimSpace(text(p)); p != id {
					items[i].Parent = p
				}
			}
		}
	}
	items = activeFirst(items)
	if len(items) > maxTodoItems {
		items = items[:maxTodoItems] // the head: the order is the priority
	}
	orphanLoops(items)
	if !slices.Equal(items, before) {
		t.Revision++
	}
	t.Items = items
	return t
}

// todoItem makes an item of what the model sent, whatever it sent.
func todoItem(raw any) TodoItem {
	o, ok := raw.(map[string]any)
	if !ok {
		return TodoItem{ID: "?", Content: "(invalid item)", Status: TodoPending}
	}
	it := TodoItem{ID: strings.TrimSpace(text(o["id"])), Content: clipTodo(strings.TrimSpace(text(o["content"]))),
		Status: strings.ToLower(strings.TrimSpace(text(o["status"]))), Parent: strings.TrimSpace(text(o["parent"]))}
	if it.ID == "" {
		it.ID = "?"
	}
	if it.Content == "" {
		it.Content = "(no description)"
	}
	if !slices.Contains(todoStatuses, it.Status) {
		it.Status = TodoPending
	}
	if it.Parent == it.ID {
		it.Parent = ""
	}
	return it
}

func clipTodo(s string) string {
	if utf8.RuneCountInString(s) <= maxTodoContent {
		return s
	}
	return string([]rune(s)[:maxTodoContent-utf8.RuneCountInString(todoClipped)]) + todoClipped
}

// lastByID keeps, of items sharing an id, the last one, where it stands;
// items without an id (or not objects) are each kept.
func lastByID(list []any) []any {
	last := map[string]int{}
	for i, raw := range list {
		if o, ok := raw.(map[string]any); ok {
			if id := strings.TrimSpace(text(o["id"])); id != "" {
				last[id] = i
			}
		}
	}
	var out []any
	for i, raw := range list {
		if o, ok := raw.(map[string]any); ok {
			if id := strings.TrimSpace(text(o["id"])); id != "" && last[id] != i {
				continue
			}
		}
		out = append(out, raw)
	}
	return out
}

// activeFirst moves the item in progress ahead of the pending items
// written before it (the plan's next step is the one being done); a list
// with subtasks keeps the order it was written in.
func activeFirst(items []TodoItem) []TodoItem {
	if slices.ContainsFunc(items, func(it TodoItem) bool { return it.Parent != "" }) {
		return items
	}
	active := slices.IndexFunc(items, func(it TodoItem) bool { return it.Status == TodoInProgress })
	if active < 0 {
		return items
	}
	pending := slices.IndexFunc(items[:active], func(it TodoItem) bool { return it.Status == TodoPending })
	if pending < 0 {
		return items
	}
	out := slices.Clone(items)
	it := out[active]
	out = slices.Delete(out, active, active+1)
	return slices.Insert(out, pending, it)
}

// orphanLoops makes top-level items of those whose parent is not in the
// list, or whose parents lead back to them.
func orphanLoops(items []TodoItem) {
	at := map[string]int{}
	for i, it := range items {
		at[it.ID] = i
	}
	for i := range items {
		if _, ok := at[items[i].Parent]; items[i].Parent != "" && !ok {
			items[i].Parent = ""
		}
	}
	for i := range items {
		seen := map[string]bool{items[i].ID: true}
		for p := items[i].Parent; p != ""; p = items[at[p]].Parent {
			if seen[p] {
				items[i].Parent = ""
				break
			}
			seen[p] = true
		}
	}
}

// Active is the list as a conversation is reminded of it after a
// compaction: the items still to do (pending, in progress), each under its
// parent (kept, with its own status, while a step of it is to do); "" when
// nothing is left to do.
func (t Todos) Active() string {
	marks := map[string]string{TodoCompleted: "[x]", TodoInProgress: "[>]", TodoPending: "[ ]", TodoCancelled: "[~]"}
	kids := map[string][]TodoItem{}
	var roots []TodoItem
	for _, it := range t.Items {
		if it.Parent != "" {
			kids[it.Parent] = append(kids[it.Parent], it)
		} else {
			roots = append(roots, it)
		}
	}
	var render func(it TodoItem, depth int, out *[]string) bool
	render = func(it TodoItem, depth int, out *[]string) bool {
		var below []string
		todo := false
		for _, k := range kids[it.ID] {
			todo = render(k, depth+1, &below) || todo
		}
		if it.Status != TodoPending && it.Status != TodoInProgress && !todo {
			return false
		}
		*out = append(*out, fmt.Sprintf("%s- %s %s. %s (%s)", strings.Repeat("  ", depth), marks[it.Status], it.ID, it.Content, it.Status))
		*out = append(*out, below...)
		return true
	}
	var lines []string
	for _, it := range roots {
		render(it, 0, &lines)
	}
	if len(lines) == 0 {
		return ""
	}
	return "[Your task list, kept across the compaction of this conversation; the todo tool reads and changes it]\n" + strings.Join(lines, "\n")
}

// LoadTodos reads a list kept at path (found: whether there is one; an
// empty file, as a power cut may leave one, is none).
func LoadTodos(path string) (t Todos, found bool, err error) {
	b, err := limits.ReadFile(path, maxTodoFile, "a task list")
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(b) == 0 {
		return Todos{}, false, nil
	}
	if err != nil {
		return Todos{}, false, err
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return Todos{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return t, true, nil
}

// Save keeps the list at path, replaced whole. It is a planning aid the
// familiar agent keeps in memory only: not synced, its last change may be
// lost at a power cut (a sync was most of a call's cost).
func (t Todos) Save(path string) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return atomicfile.WriteUnsynced(path, b, 0o600)
}
