package imports

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"atrium/backend/sessions"
)

// Gemini CLI keeps each conversation of a project under
// $GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/ (else ~/.gemini/tmp/...).
//
// Since early 2026 a conversation is session-<time>-<id8>.jsonl, a log of
// records: the first holds the conversation's metadata ({sessionId,
// projectHash, startTime, lastUpdated, kind?, summary?}); a record with an
// "id" is a message, and the same id written again is that message updated
// in place (its tool calls' results, its tokens); {"$set": {...}} updates
// the metadata (its "messages", when not empty, replace every message so
// far); {"$rewindTo": id} takes that message and every later one away (the
// person went back). A subagent's conversation is <id>.jsonl in
// chats/<parent session id>/, kind "subagent". Before that, a conversation
// was one JSON document, session-<time>-<id8>.json: the metadata with its
// "messages"; resuming one copies it to the .jsonl of the same name, which
// is then the one to read.
//
// A message is {id, timestamp, type, content, displayContent?, ...}: type
// "user" (content what the model was sent, displayContent what the person
// typed, when they differ), "gemini" (the model: its text, toolCalls [{id,
// name, args, result, status, timestamp, resultDisplay}], thoughts,
// tokens, model), or "info", "warning" and "error", the notices the CLI
// showed (not part of the conversation). content is the model API's
// PartListUnion: a text, a part, or a list of texts and parts ({text},
// {functionCall}, {functionResponse}, {inlineData}, ...).

// readGemini reads every Gemini CLI conversation under root (or root
// itself, one file): conversations before subagents, each set in the order
// of their paths.
func readGemini(ctx context.Context, root string, yield Yield, warn func(Problem)) error {
	for _, p := range geminiPaths(root, warn) {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, ok := readGeminiFile(p, warn)
		if !ok {
			continue
		}
		it, ok := c.imported(p, warn)
		if !ok {
			continue
		}
		if err := yield(it); err != nil {
			return err
		}
	}
	return nil
}

// geminiPaths is the conversation files to read from root: root itself when
// it is a file, else every session-*.json(l) in a chats folder under it and
// every subagent's .jsonl in a folder of one, the conversations first. A
// legacy .json beside its .jsonl (the same conversation, resumed) is left
// out.
func geminiPaths(root string, warn func(Problem)) []string {
	if single, dir := rootFile(root, warn, isGeminiFile, "a .json or .jsonl"); !dir {
		return single
	}
	var mains, subs []string
	walkFiles(root, warn, func(p string) {
		dir := filepath.Dir(p)
		switch {
		case !isGeminiFile(p):
		case filepath.Base(dir) == "chats" && strings.HasPrefix(filepath.Base(p), "session-"):
			if isJSONL(p) || !exists(strings.TrimSuffix(p, filepath.Ext(p))+".jsonl") {
				mains = append(mains, p)
			}
		case filepath.Base(filepath.Dir(dir)) == "chats" && isJSONL(p):
			subs = append(subs, p)
		}
	})
	sort.Strings(mains)
	sort.Strings(subs)
	return append(mains, subs...)
}

func isGeminiFile(p string) bool {
	return isJSONL(p) || strings.EqualFold(filepath.Ext(p), ".json")
}

// modTime is when p was last written (zero when it cannot be told).
func modTime(p string) time.Time {
	if fi, err := os.Stat(p); err == nil {
		return fi.ModTime()
	}
	return time.Time{}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// geminiConv is one conversation as its file leaves it.
type geminiConv struct {
	meta  geminiMeta
	order []string
	at    map[string]int // a message's place in order
	byID  map[string]json.RawMessage
}

type geminiMeta struct {
	SessionID   string `json:"sessionId"`
	ProjectHash string `json:"projectHash"`
	StartTime   string `json:"startTime"`
	LastUpdated string `json:"lastUpdated"`
	Summary     string `json:"summary"`
	Kind        string `json:"kind"`
}

func newGeminiConv() *geminiConv {
	return &geminiConv{at: map[string]int{}, byID: map[string]json.RawMessage{}}
}

// merge takes what a metadata record (or a $set) holds, field by field.
func (c *geminiConv) merge(obj map[string]json.RawMessage) {
	for k, dst := range map[string]*string{"sessionId": &c.meta.SessionID, "projectHash": &c.meta.ProjectHash,
		"startTime": &c.meta.StartTime, "lastUpdated": &c.meta.LastUpdated, "summary": &c.meta.Summary, "kind": &c.meta.Kind} {
		if s, ok := jsonText(obj[k]); ok {
			*dst = s
		}
	}
}

// set writes message raw under id: in place when the id is there already.
func (c *geminiConv) set(id string, raw json.RawMessage) {
	if _, ok := c.byID[id]; !ok {
		c.at[id] = len(c.order)
		c.order = append(c.order, id)
	}
	c.byID[id] = append(json.RawMessage(nil), raw...)
}

// replace makes msgs the whole conversation (a $set of its messages, or a
// legacy document's). false when msgs is not a list.
func (c *geminiConv) replace(msgs json.RawMessage) bool {
	var list []json.RawMessage
	if json.Unmarshal(msgs, &list) != nil {
		return false
	}
	c.order, c.at, c.byID = nil, map[string]int{}, map[string]json.RawMessage{}
	for _, m := range list {
		var head struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(m, &head) == nil && head.ID != "" {
			c.set(head.ID, m)
		}
	}
	return true
}

// rewind takes message id and every later one away; all of them when id is
// not there (as the CLI does).
func (c *geminiConv) rewind(id string) {
	i, ok := c.at[id]
	if !ok {
		i = 0
	}
	for _, gone := range c.order[i:] {
		delete(c.byID, gone)
		delete(c.at, gone)
	}
	c.order = c.order[:i]
}

// readGeminiFile reads one conversation file: its records, or (a legacy
// file, or a .jsonl that holds no record) the whole document.
func readGeminiFile(path string, warn func(Problem)) (*geminiConv, bool) {
	c := newGeminiConv()
	if isJSONL(path) {
		var probs []Problem
		if !jsonlLines(path, func(p Problem) { probs = append(probs, p) }, func(n int, line []byte) {
			if p := c.record(line); p != "" {
				probs = append(probs, Problem{Path: path, Line: n, Message: p})
			}
		}) {
			for _, p := range probs {
				warn(p)
			}
			return nil, false
		}
		if c.meta.SessionID != "" {
			for _, p := range probs {
				warn(p)
			}
			return c, true
		}
		// No record at all: perhaps a whole document, pretty-printed.
		if c2, ok := readGeminiDocument(path, func(Problem) {}); ok {
			return c2, true
		}
		for _, p := range probs {
			warn(p)
		}
		if len(probs) == 0 {
			warn(Problem{Path: path, Message: "no conversation in it (no record with its sessionId)"})
		}
		return nil, false
	}
	return readGeminiDocument(path, warn)
}

// record applies one line of a .jsonl; what it could not take, said.
func (c *geminiConv) record(line []byte) string {
	obj, why := jsonlObject(line)
	if why != "" {
		return why
	}
	switch {
	case obj["$rewindTo"] != nil:
		id, ok := jsonText(obj["$rewindTo"])
		if !ok {
			return `a "$rewindTo" that is not a message id`
		}
		c.rewind(id)
	case obj["$set"] != nil:
		var set map[string]json.RawMessage
		if !isJSONObject(obj["$set"]) || json.Unmarshal(obj["$set"], &set) != nil {
			return `a "$set" that is not an object`
		}
		c.merge(set)
		if m, ok := set["messages"]; ok && jsonKind(m) == '[' && !bytes.Equal(bytes.TrimSpace(m), []byte("[]")) {
			if !c.replace(m) {
				return `a "$set" whose messages are not a list`
			}
		}
	case fieldText(obj, "id") != "":
		c.set(fieldText(obj, "id"), line)
	case fieldText(obj, "sessionId") != "":
		c.merge(obj)
	default:
		return "neither a message nor a conversation's metadata"
	}
	return ""
}

// readGeminiDocument reads a legacy conversation: one JSON document.
func readGeminiDocument(path string, warn func(Problem)) (*geminiConv, bool) {
	obj := jsonFile(path, warn)
	if obj == nil {
		return nil, false
	}
	c, why := geminiDocument(obj)
	if why != "" {
		warn(Problem{Path: path, Message: why})
	}
	return c, c != nil
}

// geminiDocument is the conversation a legacy document holds (nil when it
// holds none), and what of it could not be read.
func geminiDocument(obj map[string]json.RawMessage) (*geminiConv, string) {
	if fieldText(obj, "sessionId") == "" {
		return nil, "not a Gemini CLI conversation (no sessionId)"
	}
	c := newGeminiConv()
	c.merge(obj)
	if m, ok := obj["messages"]; ok && !c.replace(m) {
		return c, `its "messages" are not a list`
	}
	return c, ""
}

// imported is the conversation in Atrium's terms. false (reported) when it
// names no session id.
func (c *geminiConv) imported(path string, warn func(Problem)) (sessions.Imported, bool) {
	if c.meta.SessionID == "" {
		warn(Problem{Path: path, Message: "no sessionId in its metadata"})
		return sessions.Imported{}, false
	}
	conv := &geminiMessages{path: path, warn: warn, calls: map[string]string{}, results: map[string]bool{}}
	order := c.order
	if n := len(order); n > 0 && geminiRunning(c.byID[order[n-1]]) && writtenLately(modTime(path)) {
		// The turn is still running: its last message comes in at the
		// next import, whole, rather than now with calls that have no
		// result yet (the CLI writes it again, in place, once they have).
		order = order[:n-1]
	}
	for _, id := range order {
		conv.message(c.byID[id])
	}
	if len(conv.msgs) > 0 {
		conv.close(conv.msgs[len(conv.msgs)-1].CreatedAt)
	}
	it := sessions.Imported{
		Origin:    sessions.Origin{Kind: sessions.ImportGemini, Key: c.meta.SessionID, Path: path},
		Reading:   readingGemini,
		Title:     promptTitle(c.meta.Summary),
		Source:    "cli",
		Platform:  PlatformGemini,
		StartedAt: jsonlTime(c.meta.StartTime),
		Messages:  conv.msgs,
	}
	if it.Title == "" {
		it.Title = promptTitle(conv.title)
	}
	// A subagent's file is in a folder named after the session that ran it.
	if parent := filepath.Base(filepath.Dir(path)); c.meta.Kind == "subagent" && filepath.Base(filepath.Dir(filepath.Dir(path))) == "chats" &&
		parent != c.meta.SessionID {
		it.ParentKey, it.Relation = parent, sessions.RelationDelegate
	}
	return it, true
}

// geminiMessages turns a conversation's messages into Atrium's: a model
// message's text, then each of its tool calls with its result.
type geminiMessages struct {
	path    string
	warn    func(Problem)
	msgs    []sessions.ImportedMessage
	calls   map[string]string // call id → tool name, of the calls taken
	results map[string]bool   // call ids whose result was taken
	open    []string          // calls taken since the conversation last went on, in order (some answered since)
	title   string            // the first thing the person said
}

func (g *geminiMessages) add(m sessions.ImportedMessage) {
	if m.Role != "tool" && m.ToolCallID == "" {
		g.close(m.CreatedAt)
	}
	g.msgs = append(g.msgs, m)
}

// close answers the calls still waiting for their result, before the
// conversation goes on without it (a call the CLI never answered, or whose
// answer was taken back): a model refuses a call left without a result.
func (g *geminiMessages) close(at time.Time) {
	for _, id := range g.open {
		if g.results[id] {
			continue // answered since
		}
		g.results[id] = true
		g.msgs = append(g.msgs, sessions.ImportedMessage{Role: "tool", Content: "(no result was recorded)", ToolName: g.calls[id],
			ToolCallID: id, CreatedAt: at})
	}
	g.open = g.open[:0]
}

type geminiToolCall struct {
	ID            string          `json:"id"`
	Name          string          `json:"name"`
	Args          json.RawMessage `json:"args"`
	Result        json.RawMessage `json:"result"`
	Status        string          `json:"status"`
	Timestamp     string          `json:"timestamp"`
	ResultDisplay json.RawMessage `json:"resultDisplay"`
}

func (g *geminiMessages) message(raw json.RawMessage) {
	var m struct {
		ID             string           `json:"id"`
		Timestamp      string           `json:"timestamp"`
		Type           string           `json:"type"`
		Content        json.RawMessage  `json:"content"`
		DisplayContent json.RawMessage  `json:"displayContent"`
		ToolCalls      []geminiToolCall `json:"toolCalls"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		g.warn(Problem{Path: g.path, Message: fmt.Sprintf("message %s of an unexpected shape: %v", clipID(m.ID), err)})
		return
	}
	at := jsonlTime(m.Timestamp)
	parts := geminiParts(m.Content)
	switch m.Type {
	case "user":
		// A turn rebuilt from the model's history carries the tool
		// results as its parts: they answer the calls before it, so they
		// come first.
		for _, p := range parts {
			if p.FunctionResponse != nil {
				g.result(p.FunctionResponse.ID, p.FunctionResponse.Name, geminiResultText([]geminiPart{p}), at)
			}
		}
		shown := geminiText(geminiParts(m.DisplayContent))
		if strings.TrimSpace(shown) == "" {
			shown = geminiText(parts)
		}
		if strings.TrimSpace(shown) != "" {
			g.add(sessions.ImportedMessage{Role: "user", Content: shown, CreatedAt: at})
			if g.title == "" {
				g.title = shown
			}
		}
	case "gemini", "model":
		if text := geminiText(parts); strings.TrimSpace(text) != "" {
			g.add(sessions.ImportedMessage{Role: "assistant", Content: text, CreatedAt: at})
		}
		for _, p := range parts {
			if p.FunctionCall != nil {
				g.call(p.FunctionCall.ID, p.FunctionCall.Name, p.FunctionCall.Args, at)
			}
		}
		for _, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				g.warn(Problem{Path: g.path, Message: fmt.Sprintf("a tool call of message %s without its id and name", clipID(m.ID))})
				continue
			}
			g.call(tc.ID, tc.Name, tc.Args, at)
			if at2 := jsonlTime(tc.Timestamp); !at2.IsZero() {
				g.result(tc.ID, tc.Name, geminiCallResult(tc), at2)
			} else {
				g.result(tc.ID, tc.Name, geminiCallResult(tc), at)
			}
		}
	case "info", "warning", "error":
		// The CLI's notices to the person, not part of the conversation.
	default:
		g.warn(Problem{Path: g.path, Message: fmt.Sprintf("message %s of type %q: skipped", clipID(m.ID), m.Type)})
	}
}

// geminiRunning says whether a model message has a tool call the CLI has not
// finished: no result yet, and a status that is not an outcome.
func geminiRunning(raw json.RawMessage) bool {
	var m struct {
		Type      string           `json:"type"`
		ToolCalls []geminiToolCall `json:"toolCalls"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Type != "gemini" {
		return false
	}
	for _, tc := range m.ToolCalls {
		switch tc.Status {
		case "success", "error", "cancelled":
		default:
			if len(geminiParts(tc.Result)) == 0 {
				return true
			}
		}
	}
	return false
}

// call keeps a tool call once (a call both among a message's parts and in
// its toolCalls is one call).
func (g *geminiMessages) call(id, name string, args json.RawMessage, at time.Time) {
	if id == "" {
		return // no id to pair its result with
	}
	if _, ok := g.calls[id]; ok {
		return
	}
	g.calls[id] = name
	g.open = append(g.open, id)
	text, ok := jsonCompact(args)
	if !ok || !isJSONObject(json.RawMessage(text)) {
		text = "{}"
	}
	g.add(sessions.ImportedMessage{Role: "assistant", Content: text, ToolName: name, ToolCallID: id, CreatedAt: at})
}

// result keeps a call's result once, after its call; a result whose call was
// not taken is not kept (the model API refuses an orphan result).
func (g *geminiMessages) result(id, name, text string, at time.Time) {
	if id == "" || g.results[id] {
		return
	}
	if _, ok := g.calls[id]; !ok {
		return
	}
	g.results[id] = true
	if name == "" {
		name = g.calls[id]
	}
	g.add(sessions.ImportedMessage{Role: "tool", Content: text, ToolName: name, ToolCallID: id, CreatedAt: at})
}

func clipID(id string) string {
	if id == "" {
		return "(no id)"
	}
	if r := []rune(id); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return id
}

// geminiPart is one part of the model API's content.
type geminiPart struct {
	Text         *string `json:"text"`
	Thought      bool    `json:"thought"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
	InlineData *struct {
		MimeType string `json:"mimeType"`
	} `json:"inlineData"`
	FileData *struct {
		MimeType string `json:"mimeType"`
		FileURI  string `json:"fileUri"`
	} `json:"fileData"`
}

// geminiParts reads a PartListUnion: a text, a part, or a list of texts and
// parts; what is none of them is left out, and so are lists nested deeper
// than a PartListUnion's own (each level would be read again).
func geminiParts(raw json.RawMessage) []geminiPart { return geminiPartsIn(raw, 2) }

func geminiPartsIn(raw json.RawMessage, lists int) []geminiPart {
	text := func(s string) geminiPart { return geminiPart{Text: &s} }
	switch jsonKind(raw) {
	case '"':
		s, _ := jsonText(raw)
		return []geminiPart{text(s)}
	case '{':
		var p geminiPart
		if json.Unmarshal(raw, &p) == nil {
			return []geminiPart{p}
		}
	case '[':
		var list []json.RawMessage
		if lists == 0 || json.Unmarshal(raw, &list) != nil {
			return nil
		}
		var out []geminiPart
		for _, item := range list {
			out = append(out, geminiPartsIn(item, lists-1)...)
		}
		return out
	}
	return nil
}

// geminiText is the texts of parts (not the model's thoughts), with a note
// for each attachment.
func geminiText(parts []geminiPart) string {
	var b strings.Builder
	for _, p := range parts {
		var s string
		switch {
		case p.Thought:
			continue
		case p.Text != nil:
			s = *p.Text
		case p.InlineData != nil:
			s = "[attachment: " + nonEmptyText(p.InlineData.MimeType, "data") + "]"
		case p.FileData != nil:
			s = "[file: " + nonEmptyText(p.FileData.FileURI, p.FileData.MimeType) + "]"
		default:
			continue
		}
		b.WriteString(s)
	}
	return b.String()
}

func nonEmptyText(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// geminiResultText is what a tool's result parts say: each function
// response's output (its error marked as one, another response as JSON),
// and the texts beside them.
func geminiResultText(parts []geminiPart) string {
	var texts []string
	for _, p := range parts {
		if p.FunctionResponse == nil {
			if s := geminiText([]geminiPart{p}); s != "" {
				texts = append(texts, s)
			}
			continue
		}
		var r map[string]json.RawMessage
		if json.Unmarshal(p.FunctionResponse.Response, &r) != nil {
			if s, ok := jsonCompact(p.FunctionResponse.Response); ok && s != "null" {
				texts = append(texts, s)
			}
			continue
		}
		switch out, errText := fieldText(r, "output"), fieldText(r, "error"); {
		case r["output"] != nil && len(r) == 1 || out != "":
			texts = append(texts, out)
		case errText != "":
			texts = append(texts, errorText(errText))
		default:
			s, _ := jsonCompact(p.FunctionResponse.Response)
			texts = append(texts, s)
		}
	}
	return strings.Join(texts, "\n\n")
}

// geminiCallResult is a recorded tool call's result: its parts; else what
// the CLI showed of it; else its status.
func geminiCallResult(tc geminiToolCall) string {
	if s := geminiResultText(geminiParts(tc.Result)); s != "" {
		return s
	}
	if s, ok := jsonText(tc.ResultDisplay); ok && strings.TrimSpace(s) != "" {
		return s
	}
	switch tc.Status {
	case "", "success":
		return ""
	case "error":
		return errorText("the call failed")
	default:
		return "(" + tc.Status + ")"
	}
}
