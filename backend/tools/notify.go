package tools

import (
	"fmt"
	"strings"
	"sync"
)

// Completion is a background process's end, as the conversation that
// started it with notify_on_complete is told of it.
type Completion struct {
	// Owner is the conversation the process belongs to as it ended (a
	// conversation that went on in another session takes its processes).
	Owner, ID, Command string
	ExitCode           int    // minus the signal's number when a signal ended it
	Output             string // its last CompletionOutputChars characters, cleaned
	p                  *proc
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
	if c.p == nil {
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

// Failed says whether the process did not end well (a non-zero exit
// code, a signal).
func (c Completion) Failed() bool { return c.ExitCode != 0 }

// Text is what the model reads of c: the familiar agent's notification.
func (c Completion) Text() string {
	status, signal := "exited", ""
	if c.ExitCode == 0 {
		status = "completed normally"
	}
	if c.ExitCode == -15 || c.ExitCode == 143 {
		signal = ", SIGTERM"
	}
	return fmt.Sprintf("[IMPORTANT: Background process %s %s (exit code %d%s).\nCommand: %s\nOutput:\n%s]", c.ID, status, c.ExitCode, signal, c.Command, c.Output)
}

// CompletionsText is what the model reads of several completions that
// wait for one turn: one notification, or the familiar agent's batch.
func CompletionsText(cs []Completion) string {
	if len(cs) == 1 {
		return cs[0].Text()
	}
	parts := []string{fmt.Sprintf("[IMPORTANT: %d background processes completed. Treat these results as one batch and give one "+
		"consolidated response; preserve failures and actionable results.]", len(cs))}
	for _, c := range cs {
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
