package gateway

import (
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// gatherer holds messages that are parts of one until none came for a
// while, then hands them on as one: a Telegram album's photos, or the
// quick text messages of one person in one chat (a long message a
// client split, "fix the bug" then "in auth.py"), as the familiar
// gateway gathers them.
type gatherer struct {
	in   Inbox
	mu   sync.Mutex
	open map[string]*gathering
	// passing is held while a message is passed on, taken (after mu) by
	// a gathering's hand before mu is let go: a message passed at once
	// never overtakes a gathering handed on just before it.
	passing sync.Mutex
}

type gathering struct {
	msg   Inbound
	timer *time.Timer
}

func newGatherer(in Inbox) *gatherer {
	return &gatherer{in: in, open: map[string]*gathering{}}
}

// add merges part into key's gathering (merge, into the first part),
// or starts one with it, and hands it on once nothing more came for
// wait.
func (g *gatherer) add(key string, part Inbound, merge func(into *Inbound, part Inbound), wait time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ga := g.open[key]
	if ga == nil {
		ga = &gathering{msg: part}
		g.open[key] = ga
		ga.timer = time.AfterFunc(wait, func() { g.hand(key, ga) })
		return
	}
	merge(&ga.msg, part)
	ga.timer.Reset(wait)
}

// hand passes a gathering on, once.
func (g *gatherer) hand(key string, ga *gathering) {
	g.mu.Lock()
	if g.open[key] != ga {
		g.mu.Unlock()
		return
	}
	delete(g.open, key)
	ga.timer.Stop()
	msg := ga.msg
	g.passing.Lock()
	g.mu.Unlock()
	defer g.passing.Unlock()
	g.in(msg)
}

// pass passes m on at once, after any gathering handed on before it.
func (g *gatherer) pass(m Inbound) {
	g.passing.Lock()
	defer g.passing.Unlock()
	g.in(m)
}

// handNow passes key's gathering on at once (a message that must come
// after it arrived); nothing when there is none.
func (g *gatherer) handNow(key string) {
	g.mu.Lock()
	ga := g.open[key]
	g.mu.Unlock()
	if ga != nil {
		g.hand(key, ga)
	}
}

// flush passes on every gathering still open (the adapter stops).
func (g *gatherer) flush() {
	g.mu.Lock()
	open := g.open
	g.open = map[string]*gathering{}
	g.mu.Unlock()
	for _, ga := range open {
		ga.timer.Stop()
		g.pass(ga.msg)
	}
}

// mergeAlbum adds an album's part: its files after the others', its
// caption after any other.
func mergeAlbum(into *Inbound, part Inbound) {
	into.Files = append(into.Files, part.Files...)
	if strings.TrimSpace(into.Text) == "" {
		into.Text = part.Text
	} else if strings.TrimSpace(part.Text) != "" {
		into.Text += "\n\n" + part.Text
	}
}

// TextBatch is how a platform's quick text messages are gathered, as the
// familiar gateway's text batching does it: a person's text messages in
// one chat that come within Wait of each other are one message to the
// agent, their texts joined by a line break; after a part of SplitAt
// characters or more (a long message the client split at its limit), the
// next part is waited for SplitWait. A zero Wait gathers nothing.
type TextBatch struct {
	Wait, SplitWait time.Duration
	SplitAt         int
}

// Where a client splits a long message, as the familiar gateway reckons
// it: a part this long is likely followed by another.
const (
	TelegramSplitAt = 3900 // Telegram's limit is 4,096 characters
	DiscordSplitAt  = 1900 // Discord's is 2,000
)

// texts gathers a platform's quick text messages (TextBatch).
type texts struct {
	*gatherer
	b TextBatch
}

func newTexts(in Inbox, b TextBatch) *texts {
	if b.SplitWait < b.Wait {
		b.SplitWait = b.Wait
	}
	return &texts{gatherer: newGatherer(in), b: b}
}

// textKey is whose text messages gather together: one person's, in one
// chat (a thread, a topic).
func textKey(m Inbound) string { return m.ChatID + "\x00" + m.ThreadID + "\x00" + m.UserID }

// batchable says m is text the agent answers, and nothing else: no file,
// no tap or reaction, not a command (a command is answered on its own).
func batchable(m Inbound) bool {
	return m.Tap == nil && m.Reaction == nil && len(m.Files) == 0 && strings.TrimSpace(m.Text) != "" &&
		!strings.HasPrefix(strings.TrimSpace(m.Text), "/")
}

// deliver passes m on: gathered with the sender's other quick text
// messages in the chat when it is one, else at once, after any text of
// theirs still gathering there (the order they sent them in holds).
func (t *texts) deliver(m Inbound) {
	if t.b.Wait <= 0 {
		t.pass(m)
		return
	}
	key := textKey(m)
	if !batchable(m) {
		t.handNow(key)
		t.pass(m)
		return
	}
	t.add(key, m, func(into *Inbound, part Inbound) { into.Text += "\n" + part.Text }, t.waitAfter(m.Text))
}

// waitAfter is how long the next part is waited for after a part of
// text: SplitWait after one as long as a client splits at, else Wait.
func (t *texts) waitAfter(text string) time.Duration {
	if t.b.SplitAt > 0 && utf8.RuneCountInString(text) >= t.b.SplitAt {
		return t.b.SplitWait
	}
	return t.b.Wait
}
