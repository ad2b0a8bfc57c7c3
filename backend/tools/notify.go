package tools

import (
	"fmt"
	"strings"
	"sync"
)

// Completion is what a conversation is told of its background processes:
// a process's end (notify_on_complete), or, while one runs, a line of its
// output that matched watch_patterns and what the watch's limits did (the
// familiar agent's completion queue holds both).
type Completion struct {
	Kind string // NoticeEnd, NoticeWatchMatch, ...
	// Owner is the conversation the process belongs to as it ended (a
	// conversation that went on in another session takes its processes).
	Owner, ID, Command string
	ExitCode           int    // minus the signal's number when a signal ended it
	Output             string // its last CompletionOutputChars characters, cleaned; a match's lines
	// A match: the pattern of its first line, and how many matches the
	// rate limit dropped since the last one told.
	Pattern    string
	Suppressed int
	Message    string // a watch's limits: what they did
	p          *proc
	deliverTo  func(Completion) // the breaker's notices: whom they go to
}

// CompletionOutputChars is how much of the end of a process's output its
// completion carries, as in the familiar agent.
const CompletionOutputChars = 2000

// completion is p's end as its notification says it; not ok when the
// conversation saw the end already.
func (p *proc) completion() (Completion, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen {
		return Completion{}, false
	}
	out := clean(p.out.String())
	if r := []rune(out); len(r) > CompletionOutputChars {
		out = string(r[len(r)-CompletionOutputChars:])
	}
	return Completion{Owner: p.owner, ID: p.id, Command: p.command, ExitCode: p.exitCode, Output: out, p: p}, true
}

// Take claims c for a notification turn: false when the conversation
// learnt of the end since (a poll, a wait, a log, a kill of its own), or
// c was taken already. A surface calls it just before the turn it starts.
func (c Completion) Take() bool {
	if c.p == nil || c.Kind != NoticeEnd {
		return true
	}
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	if c.p.seen {
		return false
	}
	c.p.seen = true
	return true
}

// Failed says whether c is an end that did not go well (a non-zero exit
// code, a signal).
func (c Completion) Failed() bool { return c.Kind == NoticeEnd && c.ExitCode != 0 }

// Text is what the model reads of c: the familiar agent's notification.
func (c Completion) Text() string {
	switch c.Kind {
	case NoticeEnd:
	case NoticeWatchMatch:
		s := fmt.Sprintf("[IMPORTANT: Background process %s matched watch pattern \"%s\".\nCommand: %s\nMatched output:\n%s", c.ID, c.Pattern, c.Command, c.Output)
		if c.Suppressed > 0 {
			s += fmt.Sprintf("\n(%d earlier matches were suppressed by rate limit)", c.Suppressed)
		}
		return s + "]"
	default:
		return "[IMPORTANT: " + c.Message + "]"
	}
	status, signal := "exited", ""
	if c.ExitCode == 0 {
		status = "completed normally"
	}
	if c.ExitCode == -15 || c.ExitCode == 143 {
		signal = ", SIGTERM"
	}
	return fmt.Sprintf("[IMPORTANT: Background process %s %s (exit code %d%s).\nCommand: %s\nOutput:\n%s]", c.ID, status, c.ExitCode, signal, c.Command, c.Output)
}

// Summary is a line for a person of what c tells the model.
func (c Completion) Summary() string {
	switch c.Kind {
	case NoticeEnd:
		return fmt.Sprintf("background process %s ended with exit code %d: %s", c.ID, c.ExitCode, c.Command)
	case NoticeWatchMatch:
		return fmt.Sprintf("background process %s printed a line with %q: %s", c.ID, c.Pattern, c.Command)
	case NoticeWatchDisabled:
		return fmt.Sprintf("background process %s is watched no more; its end will be told: %s", c.ID, c.Command)
	}
	return c.Message
}

// CompletionsText is what the model reads of several notices that wait
// for one turn: one notification, or, for several ends, the familiar
// agent's batch (a watch's notices stand alone before and after it).
func CompletionsText(cs []Completion) string {
	if len(cs) == 1 {
		return cs[0].Text()
	}
	ends := 0
	for _, c := range cs {
		if c.Kind == NoticeEnd {
			ends++
		}
	}
	var parts []string
	for _, c := range cs {
		if c.Kind == NoticeEnd && ends > 1 {
			parts = append(parts, fmt.Sprintf("[IMPORTANT: %d background processes completed. Treat these results as one batch and give one "+
				"consolidated response; preserve failures and actionable results.]", ends))
			ends = 0
		}
		parts = append(parts, c.Text())
	}
	return strings.Join(parts, "\n\n")
}

// Untold keeps the completions that wait for their conversation's next
// turn, by conversation, for a surface that tells them one conversation
// at a time: one teller a conversation, which tells all that wait in one
// turn.
type Untold struct {
	mu      sync.Mutex
	m       map[string][]Completion
	telling map[string]bool
}

// Add keeps c for key; start says key has no teller yet: the caller starts
// one, which calls Next until it says nothing waits.
func (u *Untold) Add(key string, c Completion) (start bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m, u.telling = map[string][]Completion{}, map[string]bool{}
	}
	u.m[key] = append(u.m[key], c)
	if u.telling[key] {
		return false
	}
	u.telling[key] = true
	return true
}

// Next hands key's teller what waits, less what its conversation learnt
// itself meanwhile (Completion.Take); nil when nothing does, and the
// teller is done (the next Add starts another).
func (u *Untold) Next(key string) []Completion {
	for {
		u.mu.Lock()
		cs := u.m[key]
		delete(u.m, key)
		if len(cs) == 0 {
			delete(u.telling, key)
			u.mu.Unlock()
			return nil
		}
		u.mu.Unlock()
		var out []Completion
		for _, c := range cs {
			if c.Take() {
				out = append(out, c)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
}
