package tools

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"atrium/backend/limits"
)

// The familiar agent's project context: the files a project keeps for AI
// agents (AGENTS.md, the Cursor rules) and the persona a person gives it
// (SOUL.md), read from the folder the conversation works in when it
// starts and put into its system prompt, each within a budget, a file that
// would steer the model blocked.

const (
	// contextFileChars is a context file's budget (AGENTS.md counts all
	// of its copies together): its first 70% and last 20% are kept.
	contextFileChars = 20_000
	// A walk for AGENTS.md visits at most contextEntries entries,
	// contextDepth folders deep, and reads at most contextFiles of them.
	contextEntries = 10_000
	contextDepth   = 6
	contextFiles   = 64
)

// skippedContextDirs are folders a walk for AGENTS.md does not enter
// (besides hidden ones).
var skippedContextDirs = map[string]bool{"node_modules": true, "__pycache__": true, "venv": true, ".venv": true}

// ContextFiles is the system prompt's project context for a conversation
// working in dir, as the familiar agent assembles it ("" when there is
// none): AGENTS.md (with the AGENTS.md files below it, when dir has one),
// .cursorrules and .cursor/rules/*.mdc, and SOUL.md from dir, else soul
// (the profile's).
func ContextFiles(dir, soul string) string {
	if dir == "" {
		return ""
	}
	var sections []string
	if agents := agentsFiles(dir); len(agents) > 0 {
		var b strings.Builder
		for _, p := range agents {
			content, ok := contextFile(p)
			if !ok || content == "" {
				continue
			}
			rel, _ := filepath.Rel(dir, p)
			fmt.Fprintf(&b, "## %s\n\n%s\n\n", filepath.ToSlash(rel), scanContext(content, filepath.ToSlash(rel)))
		}
		if b.Len() > 0 {
			sections = append(sections, truncateContext(b.String(), "AGENTS.md"))
		}
	}
	var rules strings.Builder
	if content, ok := contextFile(filepath.Join(dir, ".cursorrules")); ok && content != "" {
		fmt.Fprintf(&rules, "## .cursorrules\n\n%s\n\n", scanContext(content, ".cursorrules"))
	}
	if mdc, _ := filepath.Glob(filepath.Join(dir, ".cursor", "rules", "*.mdc")); len(mdc) > 0 {
		sort.Strings(mdc)
		for _, p := range mdc[:min(len(mdc), contextFiles)] {
			if content, ok := contextFile(p); ok && content != "" {
				name := ".cursor/rules/" + filepath.Base(p)
				fmt.Fprintf(&rules, "## %s\n\n%s\n\n", name, scanContext(content, name))
			}
		}
	}
	if rules.Len() > 0 {
		sections = append(sections, truncateContext(rules.String(), ".cursorrules"))
	}
	for _, p := range []string{filepath.Join(dir, "SOUL.md"), filepath.Join(dir, "soul.md"), soul} {
		if p == "" {
			continue
		}
		content, ok := contextFile(p)
		if !ok {
			continue
		}
		if content != "" {
			sections = append(sections, "## SOUL.md\n\nIf SOUL.md is present, embody its persona and tone. Avoid stiff, generic replies; "+
				"follow its guidance unless higher-priority instructions override it.\n\n"+truncateContext(scanContext(content, "SOUL.md"), "SOUL.md"))
		}
		break
	}
	if len(sections) == 0 {
		return ""
	}
	return "# Project Context\n\nThe following project context files have been loaded and should be followed:\n\n" + strings.Join(sections, "\n")
}

// agentsFiles are dir's AGENTS.md and, when it has one, every AGENTS.md
// below it (any case), the shallowest first, in a bounded walk that enters
// no hidden folder and follows no link to a folder.
func agentsFiles(dir string) []string {
	top := ""
	for _, name := range []string{"AGENTS.md", "agents.md"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err == nil && info.Mode().IsRegular() {
			top = name
			break
		}
	}
	if top == "" {
		return nil
	}
	var found []string
	_, _ = walkBounded(dir, contextEntries, contextDepth, func(name string) bool { return strings.HasPrefix(name, ".") || skippedContextDirs[name] },
		func(path string, d fs.DirEntry) bool {
			if strings.EqualFold(d.Name(), "agents.md") && d.Type().IsRegular() {
				found = append(found, path)
			}
			return len(found) < contextFiles
		})
	depth := func(p string) int { return strings.Count(p, string(filepath.Separator)) }
	sort.SliceStable(found, func(i, j int) bool { return depth(found[i]) < depth(found[j]) })
	return found
}

// contextFile is a context file's text, trimmed; false when it is not
// there or cannot be read (over 1 MB, not a regular file).
func contextFile(path string) (string, bool) {
	b, err := limits.ReadFile(path, 1<<20, "a context file")
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(strings.ToValidUTF8(strings.TrimPrefix(string(b), "\ufeff"), "\uFFFD")), true
}

// scanContext is content, or the familiar agent's notice in its place when
// it would steer the model (contextThreat): a cloned project's file goes
// into the prompt word for word.
func scanContext(content, name string) string {
	if what := contextThreat(content); what != "" {
		return fmt.Sprintf("[BLOCKED: %s contained potential prompt injection (%s). Content not loaded.]", name, what)
	}
	return content
}

// truncateContext keeps a context file's first 70% and last 20% of its
// budget, and says so in the middle, as the familiar agent does.
func truncateContext(content, name string) string {
	n := utf8.RuneCountInString(content)
	if n <= contextFileChars {
		return content
	}
	r := []rune(content)
	head, tail := contextFileChars*7/10, contextFileChars*2/10
	return string(r[:head]) + fmt.Sprintf("\n\n[...truncated %s: kept %d+%d of %d chars. Use file tools to read the full file.]\n\n", name, head, tail, n) +
		string(r[n-tail:])
}
