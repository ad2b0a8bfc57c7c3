package imports

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"atrium/backend/sessions"
)

// Claude Code keeps one JSONL transcript per session in
// projects/<project>/<sessionId>.jsonl, one record a line. Records of type
// "user" and "assistant" carry message: {role, content}, content a text or a
// list of blocks (text, tool_use, tool_result, thinking, image, ...), and
// uuid, parentUuid, sessionId, timestamp, isSidechain, isMeta. One model
// reply is often written over several records sharing message.id, one block
// a record. The other records are bookkeeping (system, progress,
// file-history-snapshot, queue-operation, attachment, ...) and titles:
// "summary" {summary, leafUuid}, "custom-title" {customTitle} written by
// /rename, "ai-title" {aiTitle}. A subagent's transcript (a sidechain) was
// first written into its parent's file, its records marked isSidechain; 2.0
// wrote it to <project>/agent-<agentId>.jsonl, and later versions to
// <project>/<sessionId>/subagents/agent-<agentId>.jsonl.
//
// Each record becomes at most a few messages, one per block, never merged
// with the next record's: an import run again while a reply was being
// written then finds the same messages it took before, and more after.

type claudeKind int

const (
	claudeMain  claudeKind = iota // <project>/<sessionId>.jsonl
	claudeSub                     // <project>/<sessionId>/subagents/<agent>.jsonl
	claudeAgent                   // <project>/agent-<agentId>.jsonl: the parent is named inside
)

type claudeFile struct {
	path   string
	kind   claudeKind
	parent string // claudeSub: the parent session's folder name
}

func classifyClaude(path string) claudeFile {
	dir := filepath.Dir(path)
	switch {
	case filepath.Base(dir) == "subagents":
		return claudeFile{path: path, kind: claudeSub, parent: filepath.Base(filepath.Dir(dir))}
	case strings.HasPrefix(fileStem(path), "agent-"):
		return claudeFile{path: path, kind: claudeAgent}
	}
	return claudeFile{path: path, kind: claudeMain}
}

// readClaude reads a projects folder, one project's folder, or one
// transcript (with its subagents' files, when it has some). Each session
// comes first, then its sidechains; subagent files whose session's file is
// not read, and 2.0's project-level agent files, come last.
func readClaude(ctx context.Context, root string, yield Yield, warn func(Problem)) error {
	paths := jsonlPaths(root, warn)
	if fi, err := os.Stat(root); err == nil && !fi.IsDir() && len(paths) == 1 {
		if f := classifyClaude(root); f.kind == claudeMain {
			sub := filepath.Join(strings.TrimSuffix(root, filepath.Ext(root)), "subagents")
			if fi, err := os.Stat(sub); err == nil && fi.IsDir() {
				paths = append(paths, jsonlPaths(sub, warn)...)
			}
		}
	}
	var mains, rest []claudeFile
	subsOf := map[string][]claudeFile{} // <project>/<sessionId> → its subagents' files
	for _, p := range paths {
		switch f := classifyClaude(p); f.kind {
		case claudeMain:
			mains = append(mains, f)
		case claudeSub:
			owner := filepath.Dir(filepath.Dir(p))
			subsOf[owner] = append(subsOf[owner], f)
		default:
			rest = append(rest, f)
		}
	}
	for _, m := range mains {
		if err := ctx.Err(); err != nil {
			return err
		}
		owner := strings.TrimSuffix(m.path, filepath.Ext(m.path))
		kids := subsOf[owner]
		delete(subsOf, owner)
		parentKey := fileStem(m.path)
		if r, ok := readClaudeFile(m.path, true, warn); ok {
			parentKey = r.key(claudeMain, "")
			for _, it := range r.imported(parentKey) {
				if err := yield(it); err != nil {
					return err
				}
			}
		}
		for _, k := range kids {
			if err := claudeYieldFile(ctx, k, parentKey, yield, warn); err != nil {
				return err
			}
		}
	}
	for _, kids := range subsOf {
		rest = append(rest, kids...)
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i].path < rest[j].path })
	for _, f := range rest {
		if err := claudeYieldFile(ctx, f, f.parent, yield, warn); err != nil {
			return err
		}
	}
	return nil
}

// claudeYieldFile reads a subagent's file, as one transcript, the child of
// parentKey ("" = the session its records name).
func claudeYieldFile(ctx context.Context, f claudeFile, parentKey string, yield Yield, warn func(Problem)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r, ok := readClaudeFile(f.path, false, warn)
	if !ok {
		return nil
	}
	if parentKey == "" {
		parentKey = r.session
	}
	it := r.main.imported(r, r.key(f.kind, parentKey), true)
	if parentKey != "" {
		it.ParentKey, it.Relation = parentKey, sessions.RelationDelegate
	}
	return yield(it)
}

// claudeThread is one transcript being read: the session's own, or one of
// its sidechains.
type claudeThread struct {
	id        string // a sidechain's: its agentId, else its first record's uuid
	msgs      []sessions.ImportedMessage
	calls     map[string]string // tool_use id → tool name
	first     time.Time
	userText  string // its first user message
	plainText string // its first user message that is not markup (a slash command's echo)
}

func newClaudeThread(id string) *claudeThread {
	return &claudeThread{id: id, calls: map[string]string{}}
}

func (th *claudeThread) add(m sessions.ImportedMessage) {
	th.msgs = append(th.msgs, m)
	if m.Role == "user" {
		if th.userText == "" {
			th.userText = m.Content
		}
		if th.plainText == "" && !strings.HasPrefix(strings.TrimSpace(m.Content), "<") {
			th.plainText = m.Content
		}
	}
}

func (th *claudeThread) saw(at time.Time) {
	if th.first.IsZero() && !at.IsZero() {
		th.first = at
	}
}

type claudeSummary struct{ text, leaf string }

// claudeReader reads one file. split: the file is a session's own, whose
// sidechain records are set apart; else the whole file is one transcript.
type claudeReader struct {
	path      string
	warn      func(Problem)
	split     bool
	main      *claudeThread
	mainUUIDs map[string]bool
	sides     []*claudeThread
	byUUID    map[string]*claudeThread // a sidechain record's uuid → its sidechain
	byAgent   map[string]*claudeThread
	seen      map[string]bool // uuids of the records taken, against duplicates
	session   string          // the first sessionId read
	custom    string          // the last custom-title
	ai        string          // the last ai-title
	summaries []claudeSummary
}

// readClaudeFile reads path; false when it cannot be opened (reported).
func readClaudeFile(path string, split bool, warn func(Problem)) (*claudeReader, bool) {
	r := newClaudeReader(path, split, warn)
	if !jsonlLines(path, warn, r.line) {
		return nil, false
	}
	return r, true
}

func newClaudeReader(path string, split bool, warn func(Problem)) *claudeReader {
	return &claudeReader{path: path, warn: warn, split: split, main: newClaudeThread(""), mainUUIDs: map[string]bool{},
		byUUID: map[string]*claudeThread{}, byAgent: map[string]*claudeThread{}, seen: map[string]bool{}}
}

func (r *claudeReader) bad(n int, msg string) {
	r.warn(Problem{Path: r.path, Line: n, Message: msg})
}

// key is the session's id. Claude Code names a session's file after it, and
// finds it by that name (claude --resume <id>); the records' sessionId
// agrees, except in a resumed session's file, whose first records are
// copies that keep the id of the session they were copied from. So a file
// named by a UUID is that session; any other name (a copy, renamed) is
// the first sessionId inside, else the name. A subagent's is its parent's
// key, "/", and its agent id (from its file's name, agent-<id>.jsonl).
func (r *claudeReader) key(kind claudeKind, parentKey string) string {
	stem := fileStem(r.path)
	if kind != claudeMain {
		agent := strings.TrimPrefix(stem, "agent-")
		if agent == "" {
			agent = stem
		}
		if parentKey == "" {
			return stem
		}
		return parentKey + "/" + agent
	}
	if looksLikeUUID(stem) || r.session == "" {
		return stem
	}
	return r.session
}

// imported is the session read from a session's own file, then its
// in-file sidechains, in the order they began.
func (r *claudeReader) imported(key string) []sessions.Imported {
	out := []sessions.Imported{r.main.imported(r, key, true)}
	for _, th := range r.sides {
		it := th.imported(r, key+"/"+th.id, false)
		it.ParentKey, it.Relation = key, sessions.RelationDelegate
		out = append(out, it)
	}
	return out
}

// imported is the thread as a session; own: the file's own transcript,
// which the file's title lines name.
func (th *claudeThread) imported(r *claudeReader, key string, own bool) sessions.Imported {
	title := ""
	if own {
		title = sessions.ImportTitle(r.title())
	}
	if title == "" {
		title = promptTitle(th.plainText)
	}
	if title == "" {
		title = promptTitle(th.userText)
	}
	return sessions.Imported{
		Origin:    sessions.Origin{Kind: sessions.ImportClaude, Key: key, Path: r.path},
		Reading:   readingClaude,
		Title:     title,
		Source:    "cli",
		Platform:  PlatformClaude,
		StartedAt: th.first,
		Messages:  th.msgs,
	}
}

// title is the file's own title: the last /rename, else the last title
// Claude Code generated, else the last summary of this conversation (a
// file's summaries may be of other sessions, resumed from: one whose leaf
// is a record of this file is preferred), else "".
func (r *claudeReader) title() string {
	if r.custom != "" {
		return r.custom
	}
	if r.ai != "" {
		return r.ai
	}
	for i := len(r.summaries) - 1; i >= 0; i-- {
		if r.mainUUIDs[r.summaries[i].leaf] {
			return r.summaries[i].text
		}
	}
	if n := len(r.summaries); n > 0 {
		return r.summaries[n-1].text
	}
	return ""
}

func (r *claudeReader) line(n int, raw []byte) {
	obj, why := jsonlObject(raw)
	if why != "" {
		r.bad(n, why)
		return
	}
	typ, ok := jsonText(obj["type"])
	if !ok {
		r.bad(n, `a record without a "type" text`)
		return
	}
	if s := fieldText(obj, "sessionId"); s != "" && r.session == "" {
		r.session = s
	}
	at := jsonlTime(fieldText(obj, "timestamp"))
	switch typ {
	case "summary":
		text, ok := jsonText(obj["summary"])
		if k := jsonKind(obj["summary"]); !ok && k != 0 && k != 'n' {
			r.bad(n, "a summary record whose summary is not a text")
			return
		}
		if strings.TrimSpace(text) != "" {
			r.summaries = append(r.summaries, claudeSummary{text: text, leaf: fieldText(obj, "leafUuid")})
		}
		return
	case "custom-title":
		if t := firstText(obj, "customTitle", "title"); strings.TrimSpace(t) != "" {
			r.custom = t
		}
		return
	case "ai-title":
		if t := firstText(obj, "aiTitle", "title"); strings.TrimSpace(t) != "" {
			r.ai = t
		}
		return
	case "user", "assistant":
	default:
		// Bookkeeping: only its time (the session's start) and its place in
		// a sidechain's chain count.
		if th := r.thread(n, obj, false); th != nil {
			th.saw(at)
		}
		return
	}
	msgRaw, ok := obj["message"]
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if !ok || !isJSONObject(msgRaw) || json.Unmarshal(msgRaw, &msg) != nil {
		r.bad(n, fmt.Sprintf("a record of type %s without a message object", typ))
		return
	}
	uuid := fieldText(obj, "uuid")
	if uuid != "" && r.seen[uuid] {
		return // written twice (a known Claude Code bug): taken once
	}
	th := r.thread(n, obj, true)
	if uuid != "" {
		r.seen[uuid] = true
	}
	th.saw(at)
	if fieldFlag(obj, "isMeta") {
		return // injected by Claude Code (caveats, skill text, hook output), not said
	}
	role := typ
	if fieldFlag(obj, "isCompactSummary") {
		role = "system" // the summary /compact wrote: the model's, not the person's
	}
	r.content(n, th, role, msg.Content, at)
}

// thread is the transcript a record belongs to; nil for a bookkeeping
// record of no known sidechain (create false).
func (r *claudeReader) thread(n int, obj map[string]json.RawMessage, create bool) *claudeThread {
	uuid := fieldText(obj, "uuid")
	if !r.split || !fieldFlag(obj, "isSidechain") {
		if uuid != "" {
			r.mainUUIDs[uuid] = true
		}
		return r.main
	}
	var th *claudeThread
	if agent := fieldText(obj, "agentId"); agent != "" {
		th = r.byAgent[agent]
		if th == nil && create {
			th = newClaudeThread(agent)
			r.byAgent[agent] = th
			r.sides = append(r.sides, th)
		}
	} else {
		if p := fieldText(obj, "parentUuid"); p != "" {
			th = r.byUUID[p]
		}
		if th == nil && create {
			id := uuid
			if id == "" {
				id = fmt.Sprintf("line-%d", n)
			}
			th = newClaudeThread(id)
			r.sides = append(r.sides, th)
		}
	}
	if th != nil && uuid != "" {
		r.byUUID[uuid] = th
	}
	return th
}

// content adds a record's message content: a text, or blocks. Texts next
// to each other in one record make one message; a tool call and a tool
// result are messages of their own.
func (r *claudeReader) content(n int, th *claudeThread, role string, raw json.RawMessage, at time.Time) {
	add := func(m sessions.ImportedMessage) {
		if m.Role == "system" {
			m.Content = jsonlSummaryPrefix + "\n" + m.Content
		}
		m.CreatedAt = at
		th.add(m)
	}
	switch jsonKind(raw) {
	case 0, 'n':
		return
	case '"':
		if s, _ := jsonText(raw); strings.TrimSpace(s) != "" {
			add(sessions.ImportedMessage{Role: role, Content: s})
		}
		return
	case '[':
	default:
		r.bad(n, "message content is neither a text nor a list of blocks")
		return
	}
	var blocks []json.RawMessage
	if err := json.Unmarshal(raw, &blocks); err != nil {
		r.bad(n, "message content is neither a text nor a list of blocks")
		return
	}
	var texts []string
	flush := func() {
		if len(texts) > 0 {
			add(sessions.ImportedMessage{Role: role, Content: strings.Join(texts, "\n\n")})
			texts = nil
		}
	}
	for i, b := range blocks {
		var head struct {
			Type string `json:"type"`
		}
		if !isJSONObject(b) || json.Unmarshal(b, &head) != nil {
			r.bad(n, fmt.Sprintf("block %d is not a content block", i+1))
			continue
		}
		switch head.Type {
		case "text":
			var blk struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(b, &blk) != nil {
				r.bad(n, fmt.Sprintf("text block %d without its text", i+1))
				continue
			}
			if strings.TrimSpace(blk.Text) != "" {
				texts = append(texts, blk.Text)
			}
		case "tool_use":
			var blk struct {
				ID    string          `json:"id"`
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			}
			if json.Unmarshal(b, &blk) != nil || blk.ID == "" || blk.Name == "" {
				r.bad(n, fmt.Sprintf("tool_use block %d without its id and name", i+1))
				continue
			}
			flush()
			args, ok := jsonCompact(blk.Input)
			if !ok || args == "null" {
				args = "{}"
			}
			th.calls[blk.ID] = blk.Name
			add(sessions.ImportedMessage{Role: "assistant", Content: args, ToolName: blk.Name, ToolCallID: blk.ID})
		case "tool_result":
			var blk struct {
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
				IsError   *bool           `json:"is_error"`
			}
			if json.Unmarshal(b, &blk) != nil || blk.ToolUseID == "" {
				r.bad(n, fmt.Sprintf("tool_result block %d without its tool_use_id", i+1))
				continue
			}
			text, ok := claudeResultText(blk.Content)
			if !ok {
				r.bad(n, fmt.Sprintf("tool_result block %d: content of an unexpected shape, kept as JSON", i+1))
			}
			if blk.IsError != nil && *blk.IsError {
				text = errorText(text)
			}
			flush()
			add(sessions.ImportedMessage{Role: "tool", Content: text, ToolName: th.calls[blk.ToolUseID], ToolCallID: blk.ToolUseID})
		default:
			// thinking, redacted_thinking, image, document, server tools'
			// blocks: not kept.
		}
	}
	flush()
}

// claudeResultText is a tool result's text: a text, or the text blocks of
// a list (images left out). false for another shape, given as compact JSON.
func claudeResultText(raw json.RawMessage) (string, bool) {
	switch jsonKind(raw) {
	case 0, 'n':
		return "", true
	case '"':
		s, _ := jsonText(raw)
		return s, true
	case '[':
		if s, ok := jsonTextBlocks(raw, func(typ string) bool { return typ == "text" }); ok {
			return s, true
		}
	}
	s, _ := jsonCompact(raw)
	return s, false
}

// jsonTextBlocks joins the texts of a list of {type, text} blocks whose
// type keep takes, a blank line between them; false when raw is not such
// a list.
func jsonTextBlocks(raw json.RawMessage, keep func(typ string) bool) (string, bool) {
	var blocks []struct {
		Type string          `json:"type"`
		Text json.RawMessage `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return "", false
	}
	var texts []string
	for _, b := range blocks {
		if s, ok := jsonText(b.Text); ok && keep(b.Type) && s != "" {
			texts = append(texts, s)
		}
	}
	return strings.Join(texts, "\n\n"), true
}

// errorText marks a failed tool's result: "Error: " before it, unless it
// already says so. (The turn loop keeps no error flag on a tool message
// either: the text is all there is.)
func errorText(text string) string {
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(text)), "error") {
		return text
	}
	return "Error: " + text
}

// ---- JSONL reading, shared with codex.go ----

// jsonlSummaryPrefix starts a summary that replaced the conversation
// before it (Claude Code's /compact, Codex's compacted line), kept as a
// system message the way Atrium keeps its own.
const jsonlSummaryPrefix = sessions.SummaryPrefix

// maxLineBytes is the longest line read; a longer one is reported and
// skipped. A variable for tests.
var maxLineBytes = 64 << 20

// jsonlPaths is the .jsonl files to read from root: root itself when it is
// a file (reported when it is not a .jsonl one), else every .jsonl file
// under it, sorted. What cannot be listed is reported and passed over.
func jsonlPaths(root string, warn func(Problem)) []string {
	if single, dir := rootFile(root, warn, isJSONL, "a .jsonl"); !dir {
		return single
	}
	var out []string
	walkFiles(root, warn, func(p string) {
		if isJSONL(p) {
			out = append(out, p)
		}
	})
	sort.Strings(out)
	return out
}

// rootFile says what root is: a folder (dir), or a file to read on its own
// (single: root, when accept takes it; else nothing, and root is reported
// as not what). What cannot be looked at is reported.
func rootFile(root string, warn func(Problem), accept func(string) bool, what string) (single []string, dir bool) {
	fi, err := os.Stat(root)
	switch {
	case err != nil:
		warn(ioProblem(root, err))
		return nil, false
	case fi.IsDir():
		return nil, true
	case !accept(root):
		warn(Problem{Path: root, Message: "not " + what + " file"})
		return nil, false
	}
	return []string{root}, false
}

// walkFiles calls visit with every file under the folder root; a folder
// that cannot be listed is reported and passed over.
func walkFiles(root string, warn func(Problem), visit func(path string)) {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			warn(ioProblem(p, err))
			if d != nil && d.IsDir() && p != root {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			visit(p)
		}
		return nil
	})
}

func isJSONL(p string) bool { return strings.EqualFold(filepath.Ext(p), ".jsonl") }

func fileStem(p string) string {
	base := filepath.Base(p)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

func ioProblem(path string, err error) Problem {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return Problem{Path: path, Message: "cannot read it: " + err.Error()}
}

// jsonlLines calls fn with each line of path that is not blank, numbered
// from 1, without its line ending; the slice is reused after fn returns.
// A line longer than maxLineBytes is reported and skipped. false when the
// file cannot be opened (reported).
func jsonlLines(path string, warn func(Problem), fn func(n int, line []byte)) bool {
	f, err := os.Open(path)
	if err != nil {
		warn(ioProblem(path, err))
		return false
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var buf []byte
	n, over := 0, false
	for {
		chunk, err := br.ReadSlice('\n')
		if !over {
			if len(buf)+len(chunk) > maxLineBytes+2 { // +2: the line's own "\r\n"
				over, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && err != io.EOF {
			warn(ioProblem(path, err))
			return true
		}
		if err == nil || len(buf) > 0 || over {
			n++
			line := bytes.TrimRight(buf, "\r\n")
			switch {
			case over || len(line) > maxLineBytes:
				warn(Problem{Path: path, Line: n, Message: fmt.Sprintf("a line of more than %s: skipped", byteSize(maxLineBytes))})
			case len(bytes.TrimSpace(line)) > 0:
				fn(n, line)
			}
			buf, over = buf[:0], false
		}
		if err == io.EOF {
			return true
		}
	}
}

func byteSize(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// jsonFile reads a file holding one JSON object (at most maxLineBytes, as
// a line); nil, reported, when it cannot be read or is not one.
func jsonFile(path string, warn func(Problem)) map[string]json.RawMessage {
	f, err := os.Open(path)
	if err != nil {
		warn(ioProblem(path, err))
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(maxLineBytes)+1))
	if err != nil {
		warn(ioProblem(path, err))
		return nil
	}
	if len(b) > maxLineBytes {
		warn(Problem{Path: path, Message: fmt.Sprintf("a file of more than %s: skipped", byteSize(maxLineBytes))})
		return nil
	}
	obj, why := jsonlObject(b)
	if why != "" {
		warn(Problem{Path: path, Message: why})
		return nil
	}
	return obj
}

// jsonlObject decodes a line holding one JSON object; else why not.
func jsonlObject(line []byte) (map[string]json.RawMessage, string) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, "not a JSON object"
		}
		return nil, "not JSON: " + err.Error()
	}
	if obj == nil {
		return nil, "not a JSON object"
	}
	return obj, ""
}

// jsonKind is the first byte of a JSON value ('{', '[', '"', 'n', 't', 'f',
// a digit or '-'); 0 when there is none.
func jsonKind(raw json.RawMessage) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

func isJSONObject(raw json.RawMessage) bool { return jsonKind(raw) == '{' }

// jsonText is a JSON string's value; false when raw is not one.
func jsonText(raw json.RawMessage) (string, bool) {
	if jsonKind(raw) != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func fieldText(obj map[string]json.RawMessage, key string) string {
	s, _ := jsonText(obj[key])
	return s
}

func firstText(obj map[string]json.RawMessage, keys ...string) string {
	for _, k := range keys {
		if s := fieldText(obj, k); s != "" {
			return s
		}
	}
	return ""
}

func fieldFlag(obj map[string]json.RawMessage, key string) bool {
	var b bool
	return jsonKind(obj[key]) == 't' && json.Unmarshal(obj[key], &b) == nil && b
}

func jsonCompact(raw []byte) (string, bool) {
	var b bytes.Buffer
	if len(bytes.TrimSpace(raw)) == 0 || json.Compact(&b, raw) != nil {
		return "", false
	}
	return b.String(), true
}

// jsonlTime reads an RFC 3339 time (fractional seconds or not); zero when
// it is not one.
func jsonlTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// looksLikeUUID: 8-4-4-4-12 hex digits.
func looksLikeUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
