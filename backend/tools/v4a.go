package tools

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// A V4A patch, the format the familiar agent's patch tool takes in
// mode='patch' (and OpenAI's apply_patch): files added, deleted, updated
// by hunks of context, removed and added lines, and moved.
type v4aFile struct {
	kind   string // add, delete, update
	path   string
	moveTo string
	add    []string  // an added file's lines
	hunks  []v4aHunk // an update's
}

type v4aHunk struct {
	hint     string // the text after @@, a line to find first
	old, new []string
}

func parseV4A(text string) ([]v4aFile, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i == len(lines) || strings.TrimSpace(lines[i]) != "*** Begin Patch" {
		return nil, errors.New("a V4A patch starts with '*** Begin Patch'")
	}
	i++
	var files []v4aFile
	var cur *v4aFile
	ended := false
	for ; i < len(lines) && !ended; i++ {
		l := lines[i]
		head := strings.TrimSpace(l)
		switch {
		case head == "*** End Patch":
			ended = true
			continue
		case head == "*** End of File":
			continue
		case strings.HasPrefix(head, "*** Add File:"), strings.HasPrefix(head, "*** Delete File:"), strings.HasPrefix(head, "*** Update File:"):
			kind := strings.ToLower(strings.Fields(head)[1])
			p := strings.TrimSpace(head[strings.Index(head, ":")+1:])
			if p == "" {
				return nil, fmt.Errorf("line %d: %q names no file", i+1, head)
			}
			files = append(files, v4aFile{kind: kind, path: p})
			cur = &files[len(files)-1]
			continue
		case strings.HasPrefix(head, "*** Move to:"):
			if cur == nil || cur.kind != "update" {
				return nil, fmt.Errorf("line %d: '*** Move to:' follows no '*** Update File:'", i+1)
			}
			cur.moveTo = strings.TrimSpace(head[len("*** Move to:"):])
			continue
		}
		if cur == nil {
			if head == "" {
				continue
			}
			return nil, fmt.Errorf("line %d: %q comes before any '*** Add File:', '*** Update File:' or '*** Delete File:'", i+1, l)
		}
		switch cur.kind {
		case "add":
			if !strings.HasPrefix(l, "+") && l != "" {
				return nil, fmt.Errorf("line %d: an added file's lines start with '+'", i+1)
			}
			if l != "" || i+1 < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "***") {
				cur.add = append(cur.add, strings.TrimPrefix(l, "+"))
			}
		case "delete":
			if head != "" {
				return nil, fmt.Errorf("line %d: a deleted file has no lines", i+1)
			}
		case "update":
			if strings.HasPrefix(l, "@@") {
				cur.hunks = append(cur.hunks, v4aHunk{hint: strings.TrimSpace(strings.Trim(strings.TrimSpace(l), "@"))})
				continue
			}
			if len(cur.hunks) == 0 {
				cur.hunks = append(cur.hunks, v4aHunk{})
			}
			h := &cur.hunks[len(cur.hunks)-1]
			switch {
			case strings.HasPrefix(l, "+"):
				h.new = append(h.new, l[1:])
			case strings.HasPrefix(l, "-"):
				h.old = append(h.old, l[1:])
			default:
				c := strings.TrimPrefix(l, " ")
				h.old, h.new = append(h.old, c), append(h.new, c)
			}
		}
	}
	if !ended {
		return nil, errors.New("the patch has no '*** End Patch' line")
	}
	if len(files) == 0 {
		return nil, errors.New("the patch changes no file")
	}
	return files, nil
}

// trimBlankEdges drops context lines the model left blank at a hunk's ends
// (a trailing newline of the patch text, most often).
func (h *v4aHunk) trimBlankEdges() {
	for len(h.old) > 0 && len(h.new) > 0 && h.old[len(h.old)-1] == "" && h.new[len(h.new)-1] == "" {
		h.old, h.new = h.old[:len(h.old)-1], h.new[:len(h.new)-1]
	}
}

// applyV4A checks every file of the patch before it writes any.
func applyV4A(c *Call, text string) patchResult {
	files, err := parseV4A(text)
	if err != nil {
		return patchResult{Error: "the patch could not be read: " + err.Error()}
	}
	type write struct {
		path, before, after string
		existed             bool
		mode                os.FileMode // a moved file's own (0: as store gives it)
	}
	var writes []write
	var deletes []string
	res := patchResult{Success: true}
	var diff strings.Builder
	for _, f := range files {
		path := c.resolve(f.path)
		if err := refuseProtected(path, c.Settings.Protected); err != nil {
			return patchResult{Error: err.Error()}
		}
		before, existed, err := editable(path)
		if err != nil {
			return patchResult{Error: err.Error()}
		}
		switch f.kind {
		case "add":
			if existed {
				return patchResult{Error: "*** Add File: " + path + " exists already (use *** Update File:)"}
			}
			after := strings.Join(f.add, "\n")
			if len(f.add) > 0 {
				after += "\n"
			}
			writes = append(writes, write{path: path, after: after})
			res.FilesCreated = append(res.FilesCreated, path)
			diff.WriteString(unifiedDiff(f.path, "", after))
		case "delete":
			if !existed {
				return patchResult{Error: "*** Delete File: " + path + " does not exist"}
			}
			deletes = append(deletes, path)
			res.FilesDeleted = append(res.FilesDeleted, path)
		case "update":
			if !existed {
				return patchResult{Error: "*** Update File: " + path + " does not exist (use *** Add File:)"}
			}
			norm := strings.ReplaceAll(before, "\r\n", "\n")
			after, err := applyHunks(norm, f.hunks)
			if err != nil {
				return patchResult{Error: path + ": " + err.Error(),
					Hint: "Use read_file to see the file as it is now; a hunk's context and '-' lines must match it."}
			}
			target := path
			if f.moveTo != "" {
				target = c.resolve(f.moveTo)
				if err := refuseProtected(target, c.Settings.Protected); err != nil {
					return patchResult{Error: err.Error()}
				}
				if _, err := os.Lstat(target); err == nil {
					return patchResult{Error: "*** Move to: " + target + " exists already; nothing was written"}
				}
				deletes = append(deletes, path)
				res.FilesCreated = append(res.FilesCreated, target)
				res.FilesDeleted = append(res.FilesDeleted, path)
			} else {
				res.FilesModified = append(res.FilesModified, path)
			}
			// A moved file is still the file it was: its line endings and mark are kept.
			w := write{path: target, before: before, after: after, existed: true}
			if fi, err := os.Stat(path); err == nil && target != path {
				w.mode = fi.Mode().Perm()
			}
			writes = append(writes, w)
			diff.WriteString(unifiedDiff(f.path, norm, after))
		}
	}
	for _, w := range writes {
		if _, _, err := store(w.path, w.after, w.before, w.existed); err != nil {
			return patchResult{Error: "Failed to write " + w.path + ": " + err.Error() + " (files before it in the patch were written)"}
		}
		c.Changed = append(c.Changed, w.path)
		if w.mode != 0 {
			_ = os.Chmod(w.path, w.mode)
		}
	}
	for _, p := range deletes {
		if err := os.Remove(p); err != nil {
			return patchResult{Error: "Failed to delete " + p + ": " + err.Error()}
		}
		c.Changed = append(c.Changed, p)
	}
	res.Diff = diff.String()
	return res
}

// applyHunks applies an update's hunks in order, each found after the one
// before it.
func applyHunks(text string, hunks []v4aHunk) (string, error) {
	lines := strings.Split(text, "\n")
	pos := 0
	for n, h := range hunks {
		h.trimBlankEdges()
		if h.hint != "" {
			at := -1
			for i := pos; i < len(lines); i++ {
				if strings.TrimSpace(lines[i]) == h.hint || strings.Contains(lines[i], h.hint) {
					at = i
					break
				}
			}
			if at < 0 {
				return "", fmt.Errorf("hunk %d: its @@ line %q is not in the file", n+1, h.hint)
			}
			pos = at
			if len(h.old) == 0 || strings.TrimSpace(h.old[0]) != strings.TrimSpace(lines[at]) {
				pos = at + 1
			}
		}
		if len(h.old) == 0 {
			at := pos
			if h.hint == "" {
				at = len(lines)
				if at > 0 && lines[at-1] == "" {
					at-- // before the file's last newline
				}
			}
			lines = slices.Insert(lines, at, h.new...)
			pos = at + len(h.new)
			continue
		}
		at := find(lines, h.old, pos, func(a, b string) bool { return a == b })
		if at < 0 {
			at = find(lines, h.old, pos, func(a, b string) bool { return strings.TrimSpace(a) == strings.TrimSpace(b) })
		}
		if at < 0 {
			return "", fmt.Errorf("hunk %d: its context and '-' lines are not in the file (from line %d on): %q", n+1, pos+1, clip(strings.Join(h.old, "\n"), 200))
		}
		lines = append(lines[:at], append(append([]string{}, h.new...), lines[at+len(h.old):]...)...)
		pos = at + len(h.new)
	}
	return strings.Join(lines, "\n"), nil
}

func find(lines, want []string, from int, eq func(a, b string) bool) int {
	for i := from; i+len(want) <= len(lines); i++ {
		ok := true
		for j := range want {
			if !eq(lines[i+j], want[j]) {
				ok = false
				break
			}
		}
		if ok {
			return i
		}
	}
	return -1
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
