package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"atrium/backend/turns"
)

// Progress is config.yaml's display keys for a turn's tool calls on a chat
// platform, as the familiar gateway reads them, at the turn's start.
type Progress struct {
	// Mode is display.tool_progress: all (a line for each call), new (a
	// line when the tool changes), verbose (each call's arguments), log
	// (no line in the chat: Log is told instead) or off.
	Mode string
	// PreviewLength is display.tool_preview_length: how much of a call's
	// arguments verbose shows (0: 200 characters).
	PreviewLength int
	// Separate is display.tool_progress_grouping: separate (a message
	// for each line, rather than one message edited as tools run).
	Separate bool
	// Log is told of each tool call in log mode.
	Log func(platform, sessionID string, ev turns.ToolStart)
	// Cleanup deletes the turn's progress messages once its reply is
	// delivered, where the platform can (display.platforms.<platform>.cleanup_progress).
	Cleanup bool
	// Command is display.tool_progress_command: /verbose may cycle Mode
	// from a chat, Save keeping the new one (the platform's own when it
	// has one, else the profile's).
	Command bool
	Save    func(mode string) error
}

// verboseCycle is the order /verbose steps through, as the familiar
// agent's; log steps to off.
var verboseCycle = []string{ProgressOff, ProgressNew, ProgressAll, ProgressVerbose}

// progressMeaning says what a mode shows.
var progressMeaning = map[string]string{
	ProgressOff: "no tool lines in the chat", ProgressNew: "a line when the tool changes",
	ProgressAll: "a line for each tool call", ProgressVerbose: "each tool call with its arguments",
}

// VerboseOff is /verbose's answer where display.tool_progress_command is
// not set.
const VerboseOff = "/verbose is off on chat platforms: set display.tool_progress_command: true in config.yaml to switch the tool progress from here."

// verbose is /verbose from a chat: the next mode of display.tool_progress,
// saved for every chat of the profile, and what it shows.
func (s *Service) verbose(platform string) string {
	if s.o.Progress == nil {
		return "This gateway shows no tool progress."
	}
	p := s.o.Progress(platform)
	if !p.Command || p.Save == nil {
		return VerboseOff
	}
	next := verboseCycle[(slices.Index(verboseCycle, p.Mode)+1)%len(verboseCycle)]
	if err := p.Save(next); err != nil {
		return "The tool progress could not be saved: " + PlainError(err)
	}
	return "⚙️ Tool progress: " + next + " (" + progressMeaning[next] + "), for every chat of this profile."
}

// The modes of Progress.
const (
	ProgressAll     = "all"
	ProgressNew     = "new"
	ProgressVerbose = "verbose"
	ProgressLog     = "log"
	ProgressOff     = "off"
)

// progressEvery is how often the progress message is edited at most (a
// platform's flood control refuses faster edits).
const progressEvery = 1500 * time.Millisecond

// progressLimit bounds one progress message; its later lines start another.
const progressLimit = 3500

// toolEmoji are the familiar gateway's marks for tools.
var toolEmoji = map[string]string{
	"terminal": "💻", "process": "⚙️", "read_file": "📖", "write_file": "✍️", "patch": "🔧", "search_files": "🔎",
	"web_search": "🔍", "web_extract": "📄", "todo": "📝", "memory": "🧠", "clarify": "❓", "send_message": "📨",
	"session_search": "🔎", "delegate_task": "🔀", "execute_code": "🐍", "skill_view": "📋", "skills_list": "📋",
	"skill_manage": "⚒️", "cronjob": "⏰", "vision_analyze": "👁️", "image_generate": "🎨", "text_to_speech": "🔊",
}

// previewArg is the argument a tool's line shows, as the familiar agent
// picks it.
var previewArg = map[string]string{
	"terminal": "command", "process": "action", "read_file": "path", "write_file": "path", "patch": "path",
	"search_files": "pattern", "web_search": "query", "web_extract": "urls", "todo": "todos", "memory": "action",
	"clarify": "question", "send_message": "message", "session_search": "query", "delegate_task": "goal",
	"execute_code": "code", "skill_view": "name", "skills_list": "category", "skill_manage": "name", "cronjob": "action",
	"vision_analyze": "question", "image_generate": "prompt", "text_to_speech": "text",
}

// ToolLine is a tool call's progress line in mode (all, new or verbose):
// `💻 terminal: "ls -la"`, `📝 todo...`, or in verbose the call's
// argument names and its arguments (previewLength characters of them, 0:
// 200).
func ToolLine(ev turns.ToolStart, mode string, previewLength int) string {
	emoji, ok := toolEmoji[ev.Name]
	if !ok {
		emoji = "⚙️"
	}
	if mode == ProgressVerbose && len(ev.Args) > 0 {
		keys := make([]string, 0, len(ev.Args))
		for k := range ev.Args {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b, _ := json.Marshal(ev.Args)
		limit := previewLength
		if limit <= 0 {
			limit = 200
		}
		return fmt.Sprintf("%s %s(%s)\n%s", emoji, ev.Name, strings.Join(keys, ", "), shorten(string(b), limit))
	}
	if p := preview(ev); p != "" {
		return emoji + " " + ev.Name + ": \"" + shorten(p, 40) + "\""
	}
	return emoji + " " + ev.Name + "..."
}

// preview is the one line of a call's main argument ("" none).
func preview(ev turns.ToolStart) string {
	key, ok := previewArg[ev.Name]
	if !ok {
		for _, k := range []string{"query", "text", "command", "path", "name", "prompt", "code", "goal"} {
			if _, found := ev.Args[k]; found {
				key = k
				break
			}
		}
	}
	v, found := ev.Args[key]
	if !found || v == nil {
		return ""
	}
	if l, ok := v.([]any); ok {
		if len(l) == 0 {
			return ""
		}
		v = l[0]
	}
	text, ok := v.(string)
	if !ok {
		b, _ := json.Marshal(v)
		text = string(b)
	}
	return strings.Join(strings.Fields(text), " ")
}

// shorten is text in at most limit characters, "..." ending a cut one.
func shorten(text string, limit int) string {
	if utf8.RuneCountInString(text) <= limit {
		return text
	}
	r := []rune(text)
	return string(r[:max(limit-3, 0)]) + "..."
}

// SubagentLine is a subagent's progress line: the tools of its step
// (`🔀 [2] terminal, read_file`, the index when there are several) or its
// end (`✅ [1/2] its task (3.2s)`).
func SubagentLine(ev turns.SubagentEvent) string {
	if !ev.Done {
		at := ""
		if ev.Of > 1 {
			at = fmt.Sprintf("[%d] ", ev.Index+1)
		}
		return "🔀 " + at + strings.Join(ev.Tools, ", ")
	}
	mark, how := "✅", ""
	if ev.Status != turns.SubagentCompleted {
		mark, how = "❌", ", "+ev.Status
	}
	goal, _, _ := strings.Cut(strings.TrimSpace(ev.Goal), "\n")
	return fmt.Sprintf("%s [%d/%d] %s (%.1fs%s)", mark, ev.Index+1, ev.Of, shorten(goal, 40), ev.Seconds, how)
}

// progressMsg is one turn's progress on a chat platform: its lines,
// gathered into one message edited as tools run (at most every
// progressEvery), or a message for each where the platform cannot edit,
// an edit failed, or the profile asks for separate messages. Progress is
// a courtesy: a line that cannot be delivered is dropped, never retried,
// and never holds the turn up.
type progressMsg struct {
	s      *Service
	a      Adapter
	w      *turnInfo // its turn: no "typing…" while it waits for an answer
	chat   string
	thread string

	mu      sync.Mutex
	lines   []string // the message's lines
	queue   []string // lines not yet on the platform (as sent when it cannot edit)
	last    string   // the last line added, before its count
	repeat  int      // how many more times it came, one after another
	msgID   string
	canEdit bool
	sent    []string // the ids of every message it sent
	cleanup bool

	kick    chan struct{}
	done    chan struct{}
	stopped chan struct{}
}

// startProgress is the progress of the turn answering m, or nil when the
// profile shows none in the chat. A webhook, whatever its name, has no
// chat to show it in: each line would be a reply its bridge posts on.
func (s *Service) startProgress(w *turnInfo) (*progressMsg, Progress) {
	c, m := w.c, w.m
	if _, bridge := c.Adapter.(*Webhook); bridge || s.o.Progress == nil {
		return nil, Progress{}
	}
	p := s.o.Progress(c.Adapter.Platform())
	switch p.Mode {
	case ProgressAll, ProgressNew, ProgressVerbose:
	default:
		return nil, p
	}
	_, canEdit := c.Adapter.(Editor)
	pm := &progressMsg{s: s, a: c.Adapter, w: w, chat: m.ChatID, thread: m.ThreadID,
		canEdit: canEdit && !p.Separate, cleanup: p.Cleanup,
		kick: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{})}
	go pm.run()
	return pm, p
}

// progressContext is ctx for the turn w answers in sessionID: its tool
// calls, its subagents' steps and its model's retries and fallbacks are
// shown in the chat (pm), or its tool calls logged
// (log mode: pm is nil). pm.finish, called when the turn ends and before
// its reply is queued, sends what is left.
func (s *Service) progressContext(ctx context.Context, w *turnInfo, sessionID string) (context.Context, *progressMsg) {
	pm, p := s.startProgress(w)
	var show func(string)
	if pm != nil {
		show = pm.add
		ctx = turns.WithSubagentProgress(ctx, func(ev turns.SubagentEvent) { pm.add(SubagentLine(ev)) })
		// A wait on the model (a rate limit, a fallback) is shown as a line.
		ctx = turns.WithModelStatus(ctx, func(st turns.ModelStatus) { pm.add(st.Text()) })
	}
	if follow := p.Follow(w.c.Adapter.Platform(), sessionID, show); follow != nil {
		ctx = turns.WithToolProgress(ctx, follow)
	}
	return ctx, pm
}

// Follow is what a surface does with each tool call of one turn under p
// (a turns.WithToolProgress callback, called on the turn's goroutine; nil
// when there is nothing to do): in log mode p.Log is told of it; in all,
// new or verbose, show gets its line, but not clarify's (its question is
// shown as the question) and, in new, only when the tool changed.
func (p Progress) Follow(platform, sessionID string, show func(line string)) func(turns.ToolStart) {
	switch {
	case p.Mode == ProgressLog && p.Log != nil:
		return func(ev turns.ToolStart) { p.Log(platform, sessionID, ev) }
	case show == nil || !slices.Contains([]string{ProgressAll, ProgressNew, ProgressVerbose}, p.Mode):
		return nil
	}
	last := ""
	return func(ev turns.ToolStart) {
		if ev.Name == "clarify" {
			return
		}
		same := ev.Name == last
		last = ev.Name
		if p.Mode == ProgressNew && same {
			return
		}
		show(ToolLine(ev, p.Mode, p.PreviewLength))
	}
}

// add adds line; the same line again counts it ("(×3)") instead.
func (pm *progressMsg) add(line string) {
	pm.mu.Lock()
	if line == pm.last && len(pm.lines) > 0 {
		pm.repeat++
		counted := fmt.Sprintf("%s (×%d)", line, pm.repeat+1)
		pm.lines[len(pm.lines)-1] = counted
		if n := len(pm.queue); n > 0 && strings.HasPrefix(pm.queue[n-1], line) {
			pm.queue[n-1] = counted
		} else {
			pm.queue = append(pm.queue, counted)
		}
	} else {
		pm.last, pm.repeat = line, 0
		pm.lines = append(pm.lines, line)
		pm.queue = append(pm.queue, line)
	}
	pm.mu.Unlock()
	select {
	case pm.kick <- struct{}{}:
	default:
	}
}

// run sends the lines as they come, at most every progressEvery, until
// finish; then what is left.
func (pm *progressMsg) run() {
	defer close(pm.stopped)
	var sent time.Time
	for {
		select {
		case <-pm.kick:
		case <-pm.done:
			pm.flush()
			return
		}
		if wait := progressEvery - time.Since(sent); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-pm.done:
				t.Stop()
				pm.flush()
				return
			}
		}
		pm.flush()
		sent = time.Now()
	}
}

// flush puts the queued lines on the platform: the message edited to hold
// them (a new one once it is long), or each as a message of its own.
func (pm *progressMsg) flush() {
	pm.mu.Lock()
	queue := pm.queue
	pm.queue = nil
	text := strings.Join(pm.lines, "\n")
	if pm.canEdit && pm.msgID != "" && utf8.RuneCountInString(text) > progressLimit {
		// A new message carries on from the queued lines.
		pm.lines, pm.msgID = append([]string{}, queue...), ""
		text = strings.Join(pm.lines, "\n")
	}
	canEdit, msgID := pm.canEdit, pm.msgID
	pm.mu.Unlock()
	if len(queue) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if !canEdit {
		for _, line := range queue {
			pm.send(ctx, line)
		}
		return
	}
	if msgID == "" {
		id := pm.send(ctx, text)
		pm.mu.Lock()
		pm.msgID = id
		pm.mu.Unlock()
		return
	}
	if err := pm.a.(Editor).Edit(ctx, pm.chat, msgID, text); err != nil {
		// Flood control, or a message that is gone: the rest of the
		// turn's lines go as messages of their own.
		pm.s.log.Info("gateway: the progress message could not be edited; its next lines are sent as messages", "platform", pm.a.Platform(), "error", err)
		pm.mu.Lock()
		pm.canEdit = false
		pm.mu.Unlock()
		pm.send(ctx, strings.Join(queue, "\n"))
	}
}

// send sends text and returns its id ("" when it was not sent: logged).
// A message takes the chat's "typing…" (Slack's thread status) down: it
// is shown again at once, unless the turn waits for the sender's answer.
func (pm *progressMsg) send(ctx context.Context, text string) string {
	id, err := pm.a.Send(ctx, Message{ChatID: pm.chat, ThreadID: pm.thread, Text: text})
	if err != nil {
		pm.s.log.Info("gateway: a progress line was not sent", "platform", pm.a.Platform(), "error", err)
		return ""
	}
	if id != "" {
		pm.mu.Lock()
		pm.sent = append(pm.sent, id)
		pm.mu.Unlock()
	}
	if t, ok := pm.a.(Typer); ok && !pm.w.waiting.Load() {
		_ = t.Typing(ctx, pm.chat, pm.thread)
	}
	return id
}

// finish sends what is left and stops (at most 20 s: the reply waits).
// Nothing on a nil pm.
func (pm *progressMsg) finish() {
	if pm == nil {
		return
	}
	close(pm.done)
	select {
	case <-pm.stopped:
	case <-time.After(20 * time.Second):
	}
}

// afterReply is what to do once the turn's reply is delivered: delete
// its progress messages when the profile asks for it and the platform can
// (nil: nothing).
func (pm *progressMsg) afterReply() func() {
	if pm == nil || !pm.cleanup {
		return nil
	}
	del, ok := pm.a.(Deleter)
	if !ok {
		return nil
	}
	return func() {
		pm.mu.Lock()
		ids := slices.Clone(pm.sent)
		pm.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, id := range ids {
			if err := del.Delete(ctx, pm.chat, id); err != nil {
				pm.s.log.Info("gateway: a progress message was not deleted", "platform", pm.a.Platform(), "error", err)
			}
		}
	}
}
