package tools

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// watch_patterns: a background process's output is read line by line as it
// comes, and a line holding one of the strings the model gave is told to
// the conversation while the process runs, under the familiar agent's
// limits: one notice a process every WatchMinInterval (matches inside that
// window are dropped and counted); WatchStrikeLimit windows in a row with
// drops, or WatchLifetimeMaxHits notices told, end the watching and the
// process is told at its end instead (as notify_on_complete); and across
// all the processes of this Atrium process, more than watchGlobalMax
// notices in watchGlobalWindow hold every watch back for
// watchGlobalCooldown.

const (
	WatchMinInterval     = 15 * time.Second
	WatchStrikeLimit     = 3
	WatchLifetimeMaxHits = 8

	watchGlobalMax      = 15
	watchGlobalWindow   = 10 * time.Second
	watchGlobalCooldown = 30 * time.Second

	// What a notice carries: the first watchNoticeLines matched lines, at
	// most watchNoticeChars characters of them.
	watchNoticeLines = 20
	watchNoticeChars = 2000

	// Bounds on what the model may ask: a flood of long patterns would
	// make every line of output cost that much.
	maxWatchPatterns    = 32
	maxWatchPatternLen  = 1000
	maxWatchPartialLine = 64 << 10
)

// The kinds of notice (Completion.Kind) besides a process's end.
const (
	NoticeEnd           = ""
	NoticeWatchMatch    = "watch_match"
	NoticeWatchDisabled = "watch_disabled"
	NoticeWatchOverflow = "watch_overflow_tripped"
	NoticeWatchResumed  = "watch_overflow_released"
)

// watchIgnored is what a start says when notify_on_complete and
// watch_patterns are both set, as the familiar agent says it.
const watchIgnored = "watch_patterns ignored because notify_on_complete=True; these two flags produce duplicate notifications when combined"

// watchPatterns reads the terminal call's watch_patterns: a list of
// strings (one string is taken as a list of one; empty ones mean nothing
// and are left out).
func watchPatterns(v any) ([]string, error) {
	var items []any
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		items = []any{v}
	case []any:
		items = v
	case []string:
		for _, s := range v {
			items = append(items, s)
		}
	default:
		return nil, fmt.Errorf("watch_patterns must be a list of strings, not %s", jsonKind(v))
	}
	var out []string
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			return nil, fmt.Errorf("watch_patterns must be a list of strings: %v is %s", it, jsonKind(it))
		}
		if s == "" {
			continue
		}
		if len(s) > maxWatchPatternLen {
			return nil, fmt.Errorf("a watch pattern of %d bytes is longer than the %d allowed", len(s), maxWatchPatternLen)
		}
		out = append(out, s)
	}
	if len(out) > maxWatchPatterns {
		return nil, fmt.Errorf("%d watch patterns are more than the %d allowed", len(out), maxWatchPatterns)
	}
	return out, nil
}

// watcher is one process's watch; its proc's mu guards it.
type watcher struct {
	patterns []string
	// The line being written (no end of line yet), and whether it matched
	// already: a line is told once, however many writes bring it.
	partial    string
	partialHit bool

	hits, suppressed int
	disabled         bool
	cooldownUntil    time.Time
	strikeCandidate  bool // the current window dropped a match
	strikes          int  // windows in a row that did
}

// match is the first of the patterns in line, or "".
func (w *watcher) match(line string) string {
	for _, p := range w.patterns {
		if strings.Contains(line, p) {
			return p
		}
	}
	return ""
}

// scan reads a chunk of output: the pattern of its first matching line and
// every matching line (each once, a line split across chunks included).
// Each pattern is looked for in the whole chunk, not line by line: output
// that holds none of them, most of it, costs a fast search per pattern.
func (w *watcher) scan(chunk []byte) (pattern string, lines []string) {
	text := w.partial + string(chunk)
	told := w.partialHit // the line the chunk goes on with was told already
	lineAt := func(i int) (start, end int) {
		start = strings.LastIndexAny(text[:i], "\n\r") + 1
		if e := strings.IndexAny(text[i:], "\n\r"); e >= 0 {
			return start, i + e
		}
		return start, len(text)
	}
	var starts []int
	for _, p := range w.patterns {
		for from := 0; from < len(text); {
			i := strings.Index(text[from:], p)
			if i < 0 {
				break
			}
			s, e := lineAt(from + i)
			starts = append(starts, s)
			from = e + 1
		}
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	last := strings.LastIndexAny(text, "\n\r") // the end of the last whole line
	w.partial, w.partialHit = text[last+1:], told && last < 0
	for _, s := range starts {
		_, e := lineAt(s)
		if s == 0 && told {
			continue
		}
		line := text[s:e]
		p := w.match(line) // the line's first pattern, in the order given
		if p == "" {
			continue // a pattern that spans lines
		}
		if pattern == "" {
			pattern = p
		}
		lines = append(lines, clean(line))
		if s > last {
			// A line not ended yet is read as it stands ("Ready" printed by
			// a server that waits), once.
			w.partialHit = true
		}
	}
	// One that grows past the bound is taken as a line.
	if len(w.partial) > maxWatchPartialLine {
		w.partial, w.partialHit = "", false
	}
	return pattern, lines
}

// rate applies the per-process limits to a match at now: whether it is
// told (with the matches dropped since the last one told), and why the
// watch ended if this match ended it.
func (w *watcher) rate(now time.Time, matched int) (tell bool, suppressed int, disabledWhy string) {
	if !w.cooldownUntil.IsZero() && now.Before(w.cooldownUntil) {
		w.suppressed += matched
		if w.strikeCandidate {
			return false, 0, ""
		}
		w.strikeCandidate = true
		w.strikes++
		if w.strikes < WatchStrikeLimit {
			return false, 0, ""
		}
		w.disabled = true
		return false, 0, fmt.Sprintf("%d consecutive rate-limit windows triggered (min spacing %ds). ",
			WatchStrikeLimit, int(WatchMinInterval/time.Second))
	}
	// A window that ran out without a drop ends the run of strikes.
	if !w.cooldownUntil.IsZero() && !w.strikeCandidate {
		w.strikes = 0
	}
	w.strikeCandidate = false
	w.cooldownUntil = now.Add(WatchMinInterval)
	w.hits++
	suppressed, w.suppressed = w.suppressed, 0
	if w.hits >= WatchLifetimeMaxHits {
		w.disabled = true
		disabledWhy = fmt.Sprintf("reached the lifetime cap of %d delivered matches. ", WatchLifetimeMaxHits)
	}
	return true, suppressed, disabledWhy
}

// matchedOutput is what a notice shows of the matched lines.
func matchedOutput(lines []string) string {
	out := strings.Join(lines[:min(len(lines), watchNoticeLines)], "\n")
	if r := []rune(out); len(r) > watchNoticeChars {
		out = string(r[:watchNoticeChars]) + "\n...(truncated)"
	}
	return out
}

// watched reads a chunk p wrote for its watch, p.mu held: the notices it
// makes, which the caller delivers once p.mu is released.
func (p *proc) watched(chunk []byte) (deliver func(Completion), notices []Completion) {
	w := p.watch
	if w == nil || w.disabled || p.deliver == nil || !p.exited.IsZero() {
		return nil, nil
	}
	pattern, lines := w.scan(chunk)
	if len(lines) == 0 {
		return nil, nil
	}
	tell, suppressed, why := w.rate(p.ps.now(), len(lines))
	if tell {
		notices = append(notices, Completion{Kind: NoticeWatchMatch, Owner: p.owner, ID: p.id, Command: p.command,
			Pattern: pattern, Output: matchedOutput(lines), Suppressed: suppressed})
	}
	if why != "" {
		p.notifyEnd = true // told at its end instead, once
		notices = append(notices, Completion{Kind: NoticeWatchDisabled, Owner: p.owner, ID: p.id, Command: p.command,
			Message: fmt.Sprintf("Watch patterns disabled for process %s — %sFalling back to notify_on_complete semantics; "+
				"you'll get exactly one notification when the process exits.", p.id, why)})
	}
	return p.deliver, notices
}

// watchGate is the breaker across every process of one Atrium process.
type watchGate struct {
	windowStart  time.Time
	windowHits   int
	trippedUntil time.Time
	// The matches held back while it is tripped, by conversation, and how
	// to tell each that the watches resumed.
	held map[string]heldBack
}

type heldBack struct {
	n       int
	deliver func(Completion)
}

// admit says whether a match of owner's at now passes the breaker, and
// the notices the breaker itself has to give (tripped, resumed).
func (ps *Processes) admit(now time.Time, owner string, deliver func(Completion)) (bool, []Completion) {
	ps.gateMu.Lock()
	defer ps.gateMu.Unlock()
	g := &ps.gate
	var notes []Completion
	if !g.trippedUntil.IsZero() && !now.Before(g.trippedUntil) {
		g.trippedUntil = time.Time{}
		g.windowStart, g.windowHits = now, 0
		for o, h := range g.held {
			notes = append(notes, Completion{Kind: NoticeWatchResumed, Owner: o, deliverTo: h.deliver,
				Message: fmt.Sprintf("Watch-pattern notifications resumed. %d match event(s) were suppressed during the flood.", h.n)})
		}
		g.held = nil
	}
	hold := func() {
		if g.held == nil {
			g.held = map[string]heldBack{}
		}
		h := g.held[owner]
		g.held[owner] = heldBack{n: h.n + 1, deliver: deliver}
	}
	if !g.trippedUntil.IsZero() {
		hold()
		return false, notes
	}
	if now.Sub(g.windowStart) >= watchGlobalWindow {
		g.windowStart, g.windowHits = now, 0
	}
	if g.windowHits < watchGlobalMax {
		g.windowHits++
		return true, notes
	}
	g.trippedUntil = now.Add(watchGlobalCooldown)
	hold()
	notes = append(notes, Completion{Kind: NoticeWatchOverflow, Owner: owner, deliverTo: deliver,
		Message: fmt.Sprintf("Watch-pattern overflow: >%d notifications in %ds across all processes. "+
			"Suppressing further watch_match events for %ds.", watchGlobalMax, int(watchGlobalWindow/time.Second),
			int(watchGlobalCooldown/time.Second))})
	return false, notes
}

// tellWatched delivers what a chunk's watch made, a match through the
// breaker.
func (p *proc) tellWatched(deliver func(Completion), notices []Completion) {
	for _, n := range notices {
		if n.Kind == NoticeWatchMatch {
			ok, notes := p.ps.admit(p.ps.now(), n.Owner, deliver)
			for _, note := range notes {
				note.deliverTo(note)
			}
			if !ok {
				continue
			}
		}
		deliver(n)
	}
}
