package tools

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"atrium/backend/limits"
)

// The familiar agent's project context: the one kind of file a project
// keeps for AI agents that is found first (.hermes.md or HERMES.md, the
// AGENTS.md of the repository's folders down to the one the conversation
// works in, CLAUDE.md, the Cursor rules), read when the conversation
// starts and put into its system prompt within a budget, a file that would
// steer the model blocked; and the persona a person gives the profile
// (its SOUL.md), which opens the system prompt.

const (
	// ContextFileChars is a context file's budget when neither the
	// configuration (context_file_max_chars) nor the model's context
	// window says otherwise; a longer file keeps its first 70% and last
	// 20% of the budget.
	ContextFileChars = 20_000
	// A window's share of context files: 6% of it at 4 characters a
	// token, at most contextFileCeiling characters.
	contextWindowShare = 0.06
	contextFileCeiling = 500_000
	// contextRules is the most .cursor/rules/*.mdc files read.
	contextRules = 64
)

// ContextBudget is the characters a context file may take, as the familiar
// agent reckons them: configured (context_file_max_chars) when it is set,
// else 6% of the model's context window (tokens, 4 characters each),
// never under ContextFileChars nor over 500,000; ContextFileChars when
// the window is not known.
func ContextBudget(configured, window int) int {
	if configured > 0 {
		return configured
	}
	if window <= 0 {
		return ContextFileChars
	}
	return max(ContextFileChars, min(int(float64(window*4)*contextWindowShare), contextFileCeiling))
}

// ContextFiles is the system prompt's project context for a conversation
// working in dir ("" when there is none), as the familiar agent assembles
// it: the first kind found of .hermes.md/HERMES.md (the nearest, from dir
// up to its repository's top), the AGENTS.md chain (from the repository's
// top down to dir, each folder's AGENTS.override.md, AGENTS.md or
// agents.md), CLAUDE.md (dir's) and the Cursor rules (dir's .cursorrules
// and .cursor/rules/*.mdc), each file within budget characters (a chain
// of several AGENTS.md within budget too).
func ContextFiles(dir string, budget int) string {
	if dir == "" {
		return ""
	}
	if budget <= 0 {
		budget = ContextFileChars
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	section := hermesContext(dir, budget)
	if section == "" {
		section = agentsContext(dir, budget)
	}
	if section == "" {
		section = claudeContext(dir, budget)
	}
	if section == "" {
		section = cursorContext(dir, budget)
	}
	if section == "" {
		return ""
	}
	return "# Project Context\n\nThe following project context files have been loaded and should be followed:\n\n" + section
}

// SoulPrompt is the profile's persona for the top of its system prompt:
// its SOUL.md (path) as the familiar agent takes ~/.hermes/SOUL.md for its
// identity, within budget characters and blocked when it would steer the
// model; "" when there is none.
func SoulPrompt(path string, budget int) string {
	if path == "" {
		return ""
	}
	content, ok := contextFile(path)
	if !ok || content == "" {
		return ""
	}
	return truncateContext(scanContext(content, "SOUL.md"), "SOUL.md", path, budget)
}

// gitRoot is the nearest folder from dir up that holds .git (a folder, or
// the file a worktree has), "" when there is none.
func gitRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// hermesContext is the nearest .hermes.md or HERMES.md from dir up to its
// repository's top (dir's alone outside a repository: a file left in a
// parent like /tmp is no project's), its YAML frontmatter left out.
func hermesContext(dir string, budget int) string {
	root := gitRoot(dir)
	for d := dir; ; {
		for _, name := range []string{".hermes.md", "HERMES.md"} {
			p := filepath.Join(d, name)
			if info, err := os.Stat(p); err != nil || !info.Mode().IsRegular() {
				continue
			}
			content, _ := contextFile(p)
			if content = stripFrontmatter(content); content == "" {
				return ""
			}
			return contextSection(content, name, ".hermes.md", p, budget)
		}
		parent := filepath.Dir(d)
		if root == "" || d == root || parent == d {
			return ""
		}
		d = parent
	}
}

// stripFrontmatter is content without the YAML frontmatter it opens with,
// if any (content when nothing follows it).
func stripFrontmatter(content string) string {
	if !strings.HasPrefix(content, "---") {
		return content
	}
	end := strings.Index(content[3:], "\n---")
	if end < 0 {
		return content
	}
	if body := strings.TrimLeft(content[3+end+4:], "\n"); body != "" {
		return body
	}
	return content
}

// agentsChain is the folders whose AGENTS.md a conversation in dir
// reads: its repository's top first, dir last; dir alone outside one.
func agentsChain(dir string) []string {
	root := gitRoot(dir)
	rel, err := filepath.Rel(root, dir)
	if root == "" || root == dir || err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return []string{dir}
	}
	chain := []string{root}
	d := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, part)
		chain = append(chain, d)
	}
	return chain
}

// agentsContext is the AGENTS.md chain: each folder's first of
// AGENTS.override.md (a person's own, usually not committed),
// AGENTS.md and agents.md that has text, a copy of one read higher up
// left out, labelled by its path from dir.
func agentsContext(dir string, budget int) string {
	var sections []string
	seen := map[string]bool{}
	for _, d := range agentsChain(dir) {
		for _, name := range []string{"AGENTS.override.md", "AGENTS.md", "agents.md"} {
			p := filepath.Join(d, name)
			content, _ := contextFile(p)
			if content == "" {
				continue
			}
			if !seen[content] {
				seen[content] = true
				label := name
				if d != dir {
					if rel, err := filepath.Rel(dir, p); err == nil {
						label = filepath.ToSlash(rel)
					}
				}
				sections = append(sections, contextSection(content, label, label, p, budget))
			}
			break
		}
	}
	switch len(sections) {
	case 0:
		return ""
	case 1:
		return sections[0]
	}
	return truncateContext(strings.Join(sections, "\n\n"), "AGENTS.md (directory chain)", filepath.Join(dir, "AGENTS.md"), budget)
}

// claudeContext is dir's CLAUDE.md (or claude.md).
func claudeContext(dir string, budget int) string {
	for _, name := range []string{"CLAUDE.md", "claude.md"} {
		p := filepath.Join(dir, name)
		if content, _ := contextFile(p); content != "" {
			return contextSection(content, name, "CLAUDE.md", p, budget)
		}
	}
	return ""
}

// cursorContext is dir's .cursorrules and .cursor/rules/*.mdc, one after
// the other within one budget.
func cursorContext(dir string, budget int) string {
	paths := []string{filepath.Join(dir, ".cursorrules")}
	if mdc, _ := filepath.Glob(filepath.Join(dir, ".cursor", "rules", "*.mdc")); len(mdc) > 0 {
		sort.Strings(mdc)
		paths = append(paths, mdc[:min(len(mdc), contextRules)]...)
	}
	var b strings.Builder
	for i, p := range paths {
		content, _ := contextFile(p)
		if content == "" {
			continue
		}
		label := ".cursorrules"
		if i > 0 {
			label = ".cursor/rules/" + filepath.Base(p)
		}
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", label, scanContext(content, label))
	}
	if b.Len() == 0 {
		return ""
	}
	return truncateContext(b.String(), ".cursorrules", paths[0], budget)
}

// contextSection is one file's section under its label, blocked when it
// would steer the model and within budget (name says which file a
// truncation is of, path where to read it whole).
func contextSection(content, label, name, path string, budget int) string {
	return truncateContext("## "+label+"\n\n"+scanContext(content, label), name, path, budget)
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

// truncateContext keeps the first 70% and the last 20% of budget
// characters of a longer content, and says in the middle where to read
// the rest (path), as the familiar agent does; the log says it too.
func truncateContext(content, name, path string, budget int) string {
	n := utf8.RuneCountInString(content)
	if n <= budget {
		return content
	}
	slog.Warn("context file truncated: trim it, or set context_file_max_chars", "file", name, "chars", n, "budget", budget)
	r := []rune(content)
	head, tail := int(float64(budget)*0.7), int(float64(budget)*0.2)
	return string(r[:head]) + fmt.Sprintf("\n\n[...truncated %s: kept %d+%d of %d chars. The middle is omitted — "+
		"if you need the full instructions, read the complete file with the read_file tool: %s]\n\n", name, head, tail, n, path) +
		string(r[n-tail:])
}
