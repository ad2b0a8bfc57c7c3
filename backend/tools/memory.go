package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"atrium/backend/atomicfile"
	"atrium/backend/limits"
)

// The agent's curated memory, kept as the familiar agent keeps it: two
// small files in the profile's memories/ folder, MEMORY.md (the agent's own
// notes: the environment, conventions, lessons) and USER.md (who the user
// is), their entries separated by a line holding "§". A conversation's
// system prompt carries them as they were when it started (frozen, so a
// provider's prompt cache holds); the memory tool changes the files at
// once, under a lock another process (the familiar agent's own among them)
// takes too, and answers with the files as they are now.

// MemoryTool is the memory tool's name (and its toolset's).
const MemoryTool = "memory"

// Memory targets: the agent's notes and the user's profile.
const (
	TargetMemory = "memory"
	TargetUser   = "user"
)

// Defaults of Memory, in characters (the familiar agent's).
const (
	DefaultMemoryChars = 2200
	DefaultUserChars   = 1375
)

const (
	entryDelimiter = "\n§\n"
	// maxMemoryFailures is how many failed attempts to make room (an add
	// over the budget, an old_text that matches nothing) a turn is told to
	// retry; after that the model is told to leave memory be and answer.
	maxMemoryFailures = 3
	previewRunes      = 80
)

// Memory is where the curated memory is and how much it may hold.
type Memory struct {
	// Dir is the profile's memories/ folder ("" : no memory).
	Dir string
	// MemoryChars and UserChars are memory.memory_char_limit and
	// memory.user_char_limit (0: the defaults).
	MemoryChars, UserChars int
	// MemoryOff and UserOff are memory.memory_enabled and
	// memory.user_profile_enabled set to false: that file is neither
	// shown to the model nor written.
	MemoryOff, UserOff bool
}

// On says whether the memory has a file in use.
func (m Memory) On() bool { return m.Dir != "" && !(m.MemoryOff && m.UserOff) }

// Path is target's file.
func (m Memory) Path(target string) string {
	if target == TargetUser {
		return filepath.Join(m.Dir, "USER.md")
	}
	return filepath.Join(m.Dir, "MEMORY.md")
}

// Limit is target's budget in characters.
func (m Memory) Limit(target string) int {
	if target == TargetUser {
		if m.UserChars > 0 {
			return m.UserChars
		}
		return DefaultUserChars
	}
	if m.MemoryChars > 0 {
		return m.MemoryChars
	}
	return DefaultMemoryChars
}

// Off says whether target is turned off.
func (m Memory) Off(target string) bool {
	if target == TargetUser {
		return m.UserOff
	}
	return m.MemoryOff
}

// offReason is why a write to target is refused ("" when it is not).
func (m Memory) offReason(target string) string {
	switch {
	case m.Dir == "":
		return "There is no memory here: this profile has no folder for it."
	case target == TargetUser && m.UserOff:
		return "The user profile (USER.md) is turned off: memory.user_profile_enabled is false."
	case target == TargetMemory && m.MemoryOff:
		return "Memory (MEMORY.md) is turned off: memory.memory_enabled is false."
	}
	return ""
}

// memoryFile is one file as read: its entries (trimmed, empty ones left
// out), and whether it holds what the tool would not write back the same
// (text between entries written by hand, an entry over the whole budget,
// bytes that are not UTF-8).
type memoryFile struct {
	raw     string
	entries []string
	drift   bool
}

func (m Memory) read(target string) (memoryFile, error) {
	b, err := limits.ReadFile(m.Path(target), maxMemoryFile, "a memory file")
	if errors.Is(err, fs.ErrNotExist) {
		return memoryFile{}, nil
	}
	if err != nil {
		return memoryFile{}, err
	}
	f := memoryFile{raw: string(b)}
	if strings.TrimSpace(f.raw) == "" {
		return f, nil
	}
	longest := 0
	for _, e := range strings.Split(f.raw, entryDelimiter) {
		if e = strings.TrimSpace(e); e != "" {
			f.entries = append(f.entries, e)
			longest = max(longest, chars(e))
		}
	}
	f.drift = !utf8.ValidString(f.raw) || strings.TrimSpace(f.raw) != strings.Join(f.entries, entryDelimiter) ||
		longest > m.Limit(target)
	f.entries = dedupe(f.entries)
	return f, nil
}

// maxMemoryFile bounds what is read of a memory file: its budget is a few
// kilobytes, and a file grown past this by other means (a runaway append)
// is refused whole rather than read into every conversation's start.
const maxMemoryFile = 1 << 20

// Entries is target's entries as the file holds them now.
func (m Memory) Entries(target string) ([]string, error) {
	f, err := m.read(target)
	return f.entries, err
}

func dedupe(entries []string) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// chars counts as the familiar agent does: characters, not bytes.
func chars(s string) int { return utf8.RuneCountInString(s) }

func total(entries []string) int {
	if len(entries) == 0 {
		return 0
	}
	return chars(strings.Join(entries, entryDelimiter))
}

// usage is "current/limit" with thousands separated, as the familiar agent
// writes it.
func usage(current, limit int) string { return thousands(current) + "/" + thousands(limit) }

func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

func percent(current, limit int) int {
	if limit <= 0 {
		return 0
	}
	return min(100, current*100/limit)
}

// Snapshot is the memory as a conversation's system prompt carries it:
// MEMORY.md's block, then USER.md's, each under a heading with its usage;
// an entry that reads as an attempt to steer the model is shown as a
// notice instead, and a file grown past its budget by hand is shown by its
// head and tail. "" when both are empty or off; a file that cannot be read
// is left out (and said in the error).
func (m Memory) Snapshot() (string, error) {
	if !m.On() {
		return "", nil
	}
	var blocks []string
	var errs []error
	for _, target := range []string{TargetMemory, TargetUser} {
		if m.Off(target) {
			continue
		}
		entries, err := m.Entries(target)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(m.Path(target)), err))
			continue
		}
		if b := m.block(target, sanitized(entries, filepath.Base(m.Path(target)))); b != "" {
			blocks = append(blocks, b)
		}
	}
	return strings.Join(blocks, "\n\n"), errors.Join(errs...)
}

func (m Memory) block(target string, entries []string) string {
	if len(entries) == 0 {
		return ""
	}
	limit := m.Limit(target)
	content := strings.Join(entries, entryDelimiter)
	current := chars(content)
	// A file grown past its budget by hand (an editor, a shell append)
	// would otherwise go whole into every conversation.
	if cap := max(limit*2, 4000); current > cap {
		r := []rune(content)
		head, tail := cap*7/10, cap*2/10
		content = string(r[:head]) + fmt.Sprintf("\n\n[... %s chars truncated — memory over budget (%s); consolidate via memory(action=remove/replace) ...]\n\n",
			thousands(current-head-tail), usage(current, limit)) + string(r[len(r)-tail:])
	}
	over := ""
	if current > limit {
		over = " ⚠ OVER BUDGET"
	}
	header := "MEMORY (your personal notes)"
	if target == TargetUser {
		header = "USER PROFILE (who the user is)"
	}
	line := strings.Repeat("═", 46)
	return fmt.Sprintf("%s\n%s [%d%% — %s chars%s]\n%s\n%s", line, header, percent(current, limit), usage(current, limit), over, line, content)
}

// The patterns memory content must not match: it enters every later
// conversation's system prompt, so an instruction hidden in it (written by
// a page the model read, or a file) would steer every one of them.
//
// Each rule names the words a match needs (in lower case): text without any
// of them skips the rule's regular expression, which is most of the cost
// of checking a note.
var memoryThreats = []struct {
	id    string
	needs []string
	re    *regexp.Regexp
}{
	{"prompt_injection", []string{"ignore", "forget"}, regexp.MustCompile(`(?i)\b(ignore|forget)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier|your)\s+(instructions|rules|directions)`)},
	{"role_hijack", []string{"now"}, regexp.MustCompile(`(?i)\byou\s+are\s+now\s+(a|an|the|in|my|no\s+longer)\b`)},
	{"deception_hide", []string{"user"}, regexp.MustCompile(`(?i)\b(do\s+not|don't|never)\s+(tell|inform|show|let)\s+the\s+user\b`)},
	{"sys_prompt_override", []string{"prompt"}, regexp.MustCompile(`(?i)\b(system\s+prompt\s+override|new\s+system\s+prompt|override\s+(the\s+)?system\s+prompt)`)},
	{"disregard_rules", []string{"disregard"}, regexp.MustCompile(`(?i)\bdisregard\s+(your|all|any|the)\s+(instructions|rules|guidelines|safety)`)},
	{"bypass_restrictions", []string{"act"}, regexp.MustCompile(`(?i)\bact\s+as\s+(if|though)\s+you\s+(have\s+no|don't\s+have|do\s+not\s+have)\s+(restrictions|limits|rules|guidelines)`)},
	{"exfil_http", []string{"$"}, regexp.MustCompile(`(?i)\b(curl|wget|fetch|invoke-webrequest|nc|ncat)\b[^\n]*\$\{?\w*(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|API)`)},
	{"read_secrets", []string{".env", "credentials", ".netrc", ".pgpass", ".npmrc", ".pypirc", "id_rsa", "id_ed25519"},
		regexp.MustCompile(`(?i)\b(cat|less|more|head|tail|type|base64)\s+[^\n]*(\.env\b|credentials|\.netrc|\.pgpass|\.npmrc|\.pypirc|id_rsa|id_ed25519)`)},
	{"ssh_backdoor", []string{"authorized_keys"}, regexp.MustCompile(`(?i)authorized_keys`)},
	{"ssh_access", []string{".ssh"}, regexp.MustCompile(`(?i)(\$HOME|~)/\.ssh\b`)},
	{"shell_rc_persistence", []string{">"}, regexp.MustCompile(`(?i)>>?\s*(~|\$HOME)/\.(bashrc|zshrc|profile|bash_profile)\b`)},
}

// invisible are the characters that hide text from a person reading the
// file: zero-width ones and the direction overrides.
const invisible = "\u200b\u200c\u200d\u2060\ufeff\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

// folder lowers text as the rules' case-insensitive matching sees it: the
// two letters outside ASCII that fold to ASCII ones (the long s, the
// Kelvin sign) are taken as s and k, so no spelling slips past a rule's
// words.
var folder = strings.NewReplacer("\u017f", "s", "\u212a", "k")

// memoryThreat names what content matches ("" when nothing).
func memoryThreat(content string) string { return threatIn(content, len(memoryThreats)) }

// contextThreat is memoryThreat with the rules that steer the model only
// (the first six): a project's AGENTS.md may well show how to read a
// key file or reach ~/.ssh, which in a memory note would be a threat.
func contextThreat(content string) string { return threatIn(content, 6) }

// threatIn names what content matches of the first n rules, or an
// invisible character ("" when nothing).
func threatIn(content string, n int) string {
	if i := strings.IndexAny(content, invisible); i >= 0 {
		r, _ := utf8.DecodeRuneInString(content[i:])
		return fmt.Sprintf("invisible unicode character U+%04X", r)
	}
	lower := strings.ToLower(folder.Replace(content))
	for _, t := range memoryThreats[:n] {
		if slices.ContainsFunc(t.needs, func(w string) bool { return strings.Contains(lower, w) }) && t.re.MatchString(content) {
			return t.id
		}
	}
	return ""
}

func threatError(content string) string {
	what := memoryThreat(content)
	if what == "" {
		return ""
	}
	return "Refused: the text matches '" + what + "'. Memory goes into every later conversation's system prompt, " +
		"so it may not carry instructions to the model or a way to send secrets out."
}

// sanitized is entries with each one that matches a threat pattern, or is
// too long to be a note, replaced by a notice: what the model is shown. The
// file keeps the entry, so a person sees it and the model can remove it.
func sanitized(entries []string, file string) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		switch what := memoryThreat(e); {
		case strings.HasPrefix(e, "[BLOCKED:"):
			out[i] = e
		case chars(e) > 100_000:
			out[i] = fmt.Sprintf("[BLOCKED: an entry of %s is too long to be a note (%s characters); it is left out of this prompt. memory(action=remove) deletes it.]", file, thousands(chars(e)))
		case what != "":
			out[i] = fmt.Sprintf("[BLOCKED: an entry of %s matches %s; it is left out of this prompt. memory(action=remove) deletes it.]", file, what)
		default:
			out[i] = e
		}
	}
	return out
}

// MemoryOp is one change of the memory tool.
type MemoryOp struct {
	Action  string // add, replace or remove
	Target  string // memory or user
	Content string
	OldText string
	// Exact: OldText is the whole entry, not a part of it (a person's
	// removal, from a list of the entries).
	Exact bool
}

// ErrNoEntry is a Forget of an entry the file does not hold (any more).
var ErrNoEntry = errors.New("no such entry")

// Remember adds text to target as the tool would (its budget, its check of
// what may enter a prompt); Forget removes the entry that is exactly entry.
// Each is a person's change (from the window, the dashboard, the command
// line): a refusal is an error that says why.
func (m Memory) Remember(target, text string) error {
	return m.change(target, MemoryOp{Action: "add", Target: target, Content: text})
}

// Forget removes the entry of target that is exactly entry.
func (m Memory) Forget(target, entry string) error {
	return m.change(target, MemoryOp{Action: "remove", Target: target, OldText: entry, Exact: true})
}

func (m Memory) change(target string, op MemoryOp) error {
	if target != TargetMemory && target != TargetUser {
		return fmt.Errorf("target must be 'memory' or 'user', not '%s'", target)
	}
	if reason := m.offReason(target); reason != "" {
		return errors.New(reason)
	}
	if strings.TrimSpace(op.Content+op.OldText) == "" {
		return errors.New("the entry is empty")
	}
	resp, _ := m.apply(target, []MemoryOp{op}, memoryTurn{}, false)
	if resp["success"] == true {
		return nil
	}
	msg, _ := resp["error"].(string)
	if op.Exact && strings.HasPrefix(msg, "No entry holds") {
		return fmt.Errorf("%w: %s holds no entry %q", ErrNoEntry, filepath.Base(m.Path(target)), clipRunes(op.OldText, previewRunes))
	}
	return errors.New(msg)
}

// MemoryFile is one memory file as a person is shown it.
type MemoryFile struct {
	Target  string   `json:"target"` // memory (MEMORY.md) or user (USER.md)
	Path    string   `json:"path"`
	Entries []string `json:"entries"`
	Chars   int      `json:"chars"` // characters the entries take
	Limit   int      `json:"limit"` // its budget
	Off     bool     `json:"off"`   // turned off in config.yaml
}

// File is target's file as it is now (the error says why it cannot be
// read; the rest is filled all the same).
func (m Memory) File(target string) (MemoryFile, error) {
	entries, err := m.Entries(target)
	return MemoryFile{Target: target, Path: m.Path(target), Entries: append([]string{}, entries...), Chars: total(entries),
		Limit: m.Limit(target), Off: m.Off(target)}, err
}

func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}

// memoryTurn is one call's view of its turn: the failed attempts counted
// so far.
type memoryTurn struct {
	failures *int
}

func (t memoryTurn) failed(resp map[string]any) map[string]any {
	if t.failures == nil {
		return resp
	}
	*t.failures++
	if *t.failures <= maxMemoryFailures {
		return resp
	}
	return map[string]any{"success": false, "done": true, "error": fmt.Sprintf("Memory could not be changed %d times in this turn. "+
		"Stop calling the memory tool now and go on with your answer to the user; the fact can be saved in a later turn.", *t.failures)}
}

func (t memoryTurn) succeeded() {
	if t.failures != nil {
		*t.failures = 0
	}
}

const allOrNone = " Nothing was changed: operations apply all together or not at all."

func memoryFailure(msg string) map[string]any { return map[string]any{"success": false, "error": msg} }

// Call runs one call of the memory tool with the model's arguments, as the
// familiar agent's: action add/replace/remove with content and old_text
// (a short unique part of the entry), or operations, a list of them
// applied together, all or none, against the budget of their end result.
// failures counts the turn's failed attempts to make room (nil: not
// counted). It answers the JSON the model reads, and the changes made (for
// a memory provider's on_memory_write).
func (m Memory) Call(args map[string]any, failures *int) (string, []MemoryOp) {
	resp, done := m.call(args, memoryTurn{failures})
	b, err := json.Marshal(resp)
	if err != nil {
		return `{"success":false,"error":"the result could not be written as JSON"}`, nil
	}
	return string(b), done
}

func (m Memory) call(args map[string]any, turn memoryTurn) (map[string]any, []MemoryOp) {
	c := &Call{Args: args}
	target := TargetMemory
	if t, ok := c.str("target"); ok && t != "" {
		target = t
	}
	if target != TargetMemory && target != TargetUser {
		return memoryFailure(fmt.Sprintf("target must be 'memory' or 'user', not '%s'.", target)), nil
	}
	if reason := m.offReason(target); reason != "" {
		return memoryFailure(reason), nil
	}
	if raw, ok := args["operations"]; ok && raw != nil {
		items, ok := list(raw)
		if !ok {
			return memoryFailure("operations must be a list of {action, content?, old_text?} objects."), nil
		}
		if len(items) > 0 {
			ops := make([]MemoryOp, len(items))
			for i, item := range items {
				o, _ := item.(map[string]any)
				oc := &Call{Args: o}
				ops[i].Target = target
				ops[i].Action, _ = oc.str("action")
				ops[i].Content, _ = oc.str("content")
				ops[i].OldText, _ = oc.str("old_text")
			}
			return m.apply(target, ops, turn, true)
		}
	}
	op := MemoryOp{Target: target}
	op.Action, _ = c.str("action")
	op.Content, _ = c.str("content")
	op.OldText, _ = c.str("old_text")
	switch op.Action {
	case "add":
		if op.Content == "" {
			return memoryFailure("add needs content: the entry's text."), nil
		}
	case "replace", "remove":
		if op.OldText == "" {
			return m.missingOldText(target, op.Action), nil
		}
		if op.Action == "replace" && op.Content == "" {
			return memoryFailure("replace needs content: the entry's new text (remove deletes an entry)."), nil
		}
	default:
		return memoryFailure(fmt.Sprintf("action must be add, replace or remove, not '%s'.", op.Action)), nil
	}
	return m.apply(target, []MemoryOp{op}, turn, false)
}

// missingOldText answers a replace or remove without old_text with the
// entries, so the model can name one.
func (m Memory) missingOldText(target, action string) map[string]any {
	f, err := m.read(target)
	if err != nil {
		return memoryFailure(fmt.Sprintf("%s could not be read: %v", filepath.Base(m.Path(target)), err))
	}
	return map[string]any{"success": false,
		"error": fmt.Sprintf("%s needs old_text: a short part of the entry to %s that no other entry holds. "+
			"The entries are in current_entries: call %s again with old_text taken from one of them.", action, action, action),
		"current_entries": sanitized(f.entries, filepath.Base(m.Path(target))),
		"usage":           usage(total(f.entries), m.Limit(target))}
}

// apply makes ops under the file's lock, against the file as it is now:
// all of them or none. A single add or replace whose content matches a
// threat pattern, an old_text that matches nothing or several different
// entries, or an end result over the budget changes nothing.
func (m Memory) apply(target string, ops []MemoryOp, turn memoryTurn, batch bool) (map[string]any, []MemoryOp) {
	for i, op := range ops {
		if op.Action != "add" && op.Action != "replace" {
			continue
		}
		if msg := threatError(op.Content); msg != "" {
			if batch {
				msg = fmt.Sprintf("Operation %d: %s", i+1, msg)
			}
			return memoryFailure(msg), nil
		}
	}
	path, name, limit := m.Path(target), filepath.Base(m.Path(target)), m.Limit(target)
	if err := os.MkdirAll(m.Dir, 0o700); err != nil {
		return memoryFailure(fmt.Sprintf("The memory folder could not be made: %v", err)), nil
	}
	unlock, err := atomicfile.Lock(path)
	if err != nil {
		return memoryFailure(fmt.Sprintf("%s could not be locked: %v", name, err)), nil
	}
	defer unlock()
	f, err := m.read(target)
	if err != nil {
		return memoryFailure(fmt.Sprintf("%s could not be read: %v", name, err)), nil
	}
	// A lone add keeps every entry whole, so text written by hand survives
	// it; a replace or remove rewrites the file from its entries, which
	// would lose what is not an entry: refused, with a copy kept.
	if f.drift && (batch || ops[0].Action != "add") {
		return m.driftError(path, f.raw), nil
	}
	entries := slices.Clone(f.entries)
	failure := func(msg string) map[string]any {
		resp := map[string]any{"success": false, "error": msg, "current_entries": sanitized(f.entries, name),
			"usage": usage(total(f.entries), limit)}
		return turn.failed(resp)
	}
	var done []MemoryOp
	message := ""
	for i, op := range ops {
		content, oldText := strings.TrimSpace(op.Content), strings.TrimSpace(op.OldText)
		pos := ""
		if batch {
			act := op.Action
			if act == "" {
				act = "unknown"
			}
			pos = fmt.Sprintf("Operation %d (%s): ", i+1, act)
		}
		switch op.Action {
		case "add":
			if content == "" {
				if batch {
					return failure(pos + "content is required." + allOrNone), nil
				}
				return memoryFailure("add needs content: the entry's text."), nil
			}
			if slices.Contains(entries, content) {
				message = "That entry is already there (nothing added)."
				continue
			}
			entries = append(entries, content)
		case "replace", "remove":
			if oldText == "" {
				if batch {
					return failure(pos + "old_text is required." + allOrNone), nil
				}
				return memoryFailure("old_text cannot be blank."), nil
			}
			if op.Action == "replace" && content == "" {
				if batch {
					return failure(pos + "content is required (remove deletes an entry)." + allOrNone), nil
				}
				return memoryFailure("replace needs content: the entry's new text (remove deletes an entry)."), nil
			}
			idx, matches := holding(entries, oldText, op.Exact)
			switch {
			case len(matches) == 0 && batch:
				return failure(fmt.Sprintf("%sno entry holds '%s'.%s", pos, oldText, allOrNone)), nil
			case len(matches) == 0:
				return failure(fmt.Sprintf("No entry holds '%s'. The entries are in current_entries: retry with part of the one to %s.", oldText, op.Action)), nil
			case len(dedupe(matches)) > 1 && batch:
				return failure(fmt.Sprintf("%s'%s' is in more than one entry: give more of the one you mean.%s", pos, oldText, allOrNone)), nil
			case len(dedupe(matches)) > 1:
				return map[string]any{"success": false, "error": fmt.Sprintf("'%s' is in more than one entry: give more of the one you mean.", oldText),
					"matches": previews(matches)}, nil
			}
			if op.Action == "replace" {
				entries[idx] = content
			} else {
				entries = slices.Delete(entries, idx, idx+1)
			}
		default:
			return failure(pos + "action must be add, replace or remove." + allOrNone), nil
		}
		done = append(done, MemoryOp{Action: op.Action, Target: target, Content: content, OldText: oldText})
	}
	// A lone remove only frees room; anything else is held to the budget
	// of its end result.
	if now := total(entries); now > limit && len(done) > 0 && (batch || ops[0].Action != "remove") {
		current := total(f.entries)
		var msg string
		switch {
		case batch:
			msg = fmt.Sprintf("After all %d operations memory would hold %s/%s characters, over its budget. "+
				"Remove or shorten more entries in the same batch (they are in current_entries) and call again.", len(ops), thousands(now), thousands(limit))
		case ops[0].Action == "add":
			msg = fmt.Sprintf("Memory holds %s/%s characters; this entry (%d characters) would take it over its budget. "+
				"Make room now: merge entries with replace or drop stale ones with remove (they are in current_entries), "+
				"then add again, in this turn; one call with operations can do both.", thousands(current), thousands(limit), chars(done[0].Content))
		default:
			msg = fmt.Sprintf("With this replacement memory would hold %s/%s characters, over its budget. "+
				"Shorten the new text, or remove stale entries to make room (they are in current_entries), then retry in this turn.", thousands(now), thousands(limit))
		}
		return failure(msg), nil
	}
	if len(done) > 0 {
		if err := atomicfile.Replace(path, []byte(strings.Join(entries, entryDelimiter)), 0o600); err != nil {
			return memoryFailure(fmt.Sprintf("Failed to write memory file %s: %v", path, err)), nil
		}
	}
	switch {
	case batch:
		message = fmt.Sprintf("Applied %d operation(s).", len(ops))
	case len(done) == 0:
	case done[0].Action == "add":
		message = "Entry added."
	case done[0].Action == "replace":
		message = "Entry replaced."
	default:
		message = "Entry removed."
	}
	turn.succeeded()
	current := total(entries)
	return map[string]any{"success": true, "done": true, "target": target,
		"usage":       fmt.Sprintf("%d%% — %s chars", percent(current, limit), usage(current, limit)),
		"entry_count": len(entries), "message": message,
		"note": "Saved. This change is done: do not make it again."}, done
}

// holding finds the entries holding oldText: the first one's index, and
// every one.
func holding(entries []string, oldText string, exact bool) (int, []string) {
	idx := -1
	var found []string
	for i, e := range entries {
		if e == oldText || !exact && strings.Contains(e, oldText) {
			if idx < 0 {
				idx = i
			}
			found = append(found, e)
		}
	}
	return idx, found
}

func previews(entries []string) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = clipRunes(e, previewRunes)
	}
	return out
}

// driftError refuses to rewrite a file that holds more than its entries,
// after keeping a copy of it beside it (path.bak.<unix seconds>).
func (m Memory) driftError(path, raw string) map[string]any {
	bak := fmt.Sprintf("%s.bak.%d", path, time.Now().Unix())
	if err := atomicfile.Write(bak, []byte(raw), 0o600, nil); err != nil {
		bak += " (the copy could not be written; the file is unchanged)"
	}
	name := filepath.Base(path)
	return map[string]any{"success": false,
		"error": fmt.Sprintf("%s was not changed: it holds text that is not a list of entries (written by hand, by another tool "+
			"or by a shell command), which rewriting it would lose. A copy is at %s. Make the file a list of entries "+
			"separated by lines holding §, or move the other text out of it, then try again.", name, bak),
		"drift_backup": bak,
		"remediation": "Read the copy, add what it holds that should be kept with memory(action=add, content=...), " +
			"then make the file a clean list of entries."}
}

// MemoryDescription and MemoryParameters are the memory tool as the model
// is offered it: the familiar agent's description and arguments.
const (
	MemoryDescription = "Keep durable facts in a memory that outlives this conversation: every later conversation " +
		"starts with it, so keep each entry short and worth its place.\n\n" +
		"Two targets: 'user' is who the user is (name, role, preferences, how they like to work); 'memory' is your own " +
		"notes (the environment, project conventions, tool quirks, lessons learned).\n\n" +
		"Save without being asked when the user states a preference, corrects you, or tells you about themselves, and when " +
		"you learn a stable fact about their setup. Corrections and preferences matter most: good memory spares the user " +
		"from repeating themselves. Do not save task progress, logs of finished work, to-dos, raw data, or what is easy " +
		"to find again (session_search recalls past conversations).\n\n" +
		"Several changes go in one call as 'operations' (each {action, content?, old_text?}): they apply together or not " +
		"at all, and the budget is checked on their end result, so one call can remove or shorten old entries and add a " +
		"new one. A single change may use action/content/old_text instead. old_text is a short part of the entry to " +
		"replace or remove that no other entry holds. When memory is full an add is refused and the entries are shown: " +
		"make room and add in one batch. A successful answer means the change is saved; do not repeat it."
	MemoryParameters = `{"type":"object","properties":{` +
		`"action":{"type":"string","enum":["add","replace","remove"],"description":"What to do, for a single change (leave it out with operations)."},` +
		`"target":{"type":"string","enum":["memory","user"],"description":"memory: your notes; user: the user's profile."},` +
		`"content":{"type":"string","description":"The entry's text, for add and replace."},` +
		`"old_text":{"type":"string","description":"For replace and remove: a short part of the entry to change that no other entry holds."},` +
		`"operations":{"type":"array","description":"Several changes applied together, all or none, against the budget of their end result.",` +
		`"items":{"type":"object","properties":{"action":{"type":"string","enum":["add","replace","remove"]},` +
		`"content":{"type":"string","description":"The entry's text, for add and replace."},` +
		`"old_text":{"type":"string","description":"A short part of the entry to replace or remove."}},"required":["action"]}}},` +
		`"required":["target"]}`
)
