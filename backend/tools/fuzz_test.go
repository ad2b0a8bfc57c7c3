package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzModelArguments feeds the tools what a model (or a prompt injected
// into what it read) could send: any command to the danger check, any
// patch text and any replacement to patch, any pattern to search_files.
// Nothing may panic or take long, a patch may write nothing outside its
// folder, and a check's verdict is one of the rules'.
func FuzzModelArguments(f *testing.F) {
	f.Add(`[{"id":"1","content":"a","status":"in_progress","parent":"2"},{"id":"2","content":"b","status":"pending","parent":"1"}]`, `[{"id":"1","status":"completed"}]`, "[7]", "x")
	f.Add("rm -rf /", "*** Begin Patch\n*** Update File: a.txt\n@@ one\n-two\n+2\n*** End Patch", "two", "t(w)o")
	f.Add("git push -f", "*** Begin Patch\n*** Add File: b/c.txt\n+x\n*** Move to: d\n*** End Patch", "", "[")
	f.Add(":(){ :|:& };:", "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n", "one\ntwo", "^$")
	f.Add("r\\m -r${IFS}x", "*** Begin Patch\n*** Update File: ../../outside\n@@\n+x\n*** End Patch", "\r\n", "(?i)ONE")
	keys := map[string]bool{"write to the profile's config.yaml, .env or store": true, "SQL DELETE without WHERE": true}
	for k := range needs {
		keys[k] = true
	}
	f.Fuzz(func(t *testing.T, command, patchText, old, pattern string) {
		start := time.Now()
		if d, found := Check(command, []string{"/p/config.yaml"}); found && !keys[d.Key] {
			t.Fatalf("Check(%q) = %+v: no such rule", command, d)
		}
		root := t.TempDir()
		dir := filepath.Join(root, "work")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Paths are the model's to choose, so a patch may name one outside
		// the folder; what is checked here is that nothing panics, and
		// that the file beside the folder is untouched when no path leaves it.
		sentinel := filepath.Join(root, "outside")
		if err := os.WriteFile(sentinel, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		c := &Call{Dir: dir}
		run := func(tool Tool, args map[string]any) {
			c.Args = args
			var m map[string]any
			if out := tool.Run(context.Background(), c); json.Unmarshal([]byte(out), &m) != nil {
				t.Fatalf("%s: no JSON object: %q", tool.Name, out)
			}
		}
		run(patchTool(), map[string]any{"mode": "patch", "patch": patchText})
		run(patchTool(), map[string]any{"path": "a.txt", "old_string": old, "new_string": "X", "replace_all": len(old)%2 == 0})
		run(searchFilesTool(), map[string]any{"pattern": pattern, "context": len(pattern) % 3})
		// The memory tool: any text as an entry, a part of one, or a
		// batch, against a file that may hold anything; the answer is a
		// JSON object and the file stays within its budget.
		m := Memory{Dir: root, MemoryChars: 200}
		if err := os.WriteFile(m.Path(TargetMemory), []byte(patchText), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range []map[string]any{{"action": "add", "content": old}, {"action": "replace", "old_text": pattern, "content": old},
			{"action": "remove", "old_text": pattern}, {"operations": command}} {
			out, done := m.Call(args, nil)
			var r map[string]any
			if json.Unmarshal([]byte(out), &r) != nil {
				t.Fatalf("memory %v: no JSON object: %q", args, out)
			}
			if r["success"] == true && len(done) > 0 {
				if entries, _ := m.Entries(TargetMemory); total(entries) > 200 && args["action"] != "remove" {
					t.Fatalf("memory %v: over the budget: %q", args, entries)
				}
			}
		}
		if _, err := m.Snapshot(); err != nil {
			t.Fatal(err)
		}
		// The task list: any text as its list (JSON or not), whole and
		// merged; the answer is JSON and the list stays within its bounds.
		var list Todos
		for _, args := range []map[string]any{{"todos": command}, {"todos": patchText, "merge": true}, {"todos": old, "merge": "true"}} {
			next, out := list.Call(args)
			var r map[string]any
			if json.Unmarshal([]byte(out), &r) != nil {
				t.Fatalf("todo %v: no JSON object: %q", args, out)
			}
			if len(next.Items) > maxTodoItems {
				t.Fatalf("todo: %d items", len(next.Items))
			}
			_ = next.Active()
			list = next
		}
		// The clarify tool: any text as its question, its choices (JSON or
		// not) and a batch, any answer; the model reads a JSON object.
		for _, args := range []map[string]any{{"question": old, "choices": command}, {"question": pattern, "questions": patchText},
			{"question": command, "choices": []any{old, map[string]any{"label": pattern}}, "multi_select": true}} {
			c, err := ParseClarify(args)
			out := Failure(fmt.Sprint(err))
			if err == nil {
				if len(c.Questions) == 0 || len(c.Questions) > MaxClarifyQuestions {
					t.Fatalf("clarify %v: %d questions", args, len(c.Questions))
				}
				answers := []ClarifyAnswer{{Text: pattern}, {Picked: []string{old}}}
				out = c.Result(answers[:len(pattern)%3%2+1], len(old)%2 == 0)
			}
			var r map[string]any
			if json.Unmarshal([]byte(out), &r) != nil {
				t.Fatalf("clarify %v: no JSON object: %q", args, out)
			}
		}
		// The web tools' guards: any text as a URL (resolved to a public
		// address), any page text; a refusal is a reason, a page is bounded.
		w := Web{LookupIP: func(context.Context, string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
		}}
		if why := w.unsafe(context.Background(), command); why != "" && !strings.HasPrefix(why, "Blocked") && why != "not an http or https URL" {
			t.Fatalf("unsafe(%q) = %q", command, why)
		}
		if why := w.carriesSecret(command + pattern); why != "" && !strings.HasPrefix(why, "Blocked: URL contains ") {
			t.Fatalf("carriesSecret(%q) = %q", command+pattern, why)
		}
		if page := pageText(patchText + old); utf8.RuneCountInString(page) > webPageChars+200 {
			t.Fatalf("a page of %d characters", utf8.RuneCountInString(page))
		}
		if !strings.Contains(patchText, "..") && !strings.Contains(patchText, "/") {
			if b, _ := os.ReadFile(sentinel); string(b) != "keep" {
				t.Fatalf("a file outside the folder changed: %q", b)
			}
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("took %v", took)
		}
	})
}
