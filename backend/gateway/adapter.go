// Package gateway lets the agent answer on chat platforms. A gateway is a
// set of platform adapters behind one interface (receive, send, typing and
// edits where the platform has them, the sender's identity); the Service
// checks who may talk, asks pre_gateway_dispatch, routes each conversation
// to its session (session_key = <platform>:<chat_type>:<chat_id>[:<thread_id>]),
// keeps long conversations small between messages (gateway_hygiene), runs
// the turn, and delivers the reply after the turn committed, from a durable
// outbox, retried with backoff, one worker per platform so one platform
// down never blocks another.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"atrium/backend/hooks"
)

// Inbound is a message an adapter received, with the identity it derived.
type Inbound struct {
	EventID   string // the platform's id of the delivery, for redelivery dedupe
	MessageID string // the platform's id of the message
	Text      string
	UserID    string
	UserName  string
	ChatID    string
	ChatType  string   // dm, group, channel
	ThreadID  string   // "" when the platform or the chat has no threads
	ReplyTo   string   // where a threaded reply goes (Slack: the thread's ts)
	Roles     []string // the sender's roles in the server (Discord), for Access.Roles
	Parent    string   // the channel a thread is in, when the platform says it (Discord)
	At        time.Time
	// Reaction is set when this is an emoji reaction, not a message: it
	// starts no turn, and only the event hooks hear of it.
	Reaction *Reaction
	// Tap is set when this is a tap on a button under one of the bot's
	// messages (Telegram's callback_query), not a message: it starts no
	// turn.
	Tap *Tap
	// Files are what the message carries (photos, documents, voice
	// messages): the service saves them for the agent when the sender is
	// let in, and tells the agent where.
	Files []InFile
}

// InFile is a file a person sent: what the platform says of it, and how
// to fetch it (the adapter's: it knows the platform's authentication).
type InFile struct {
	Name     string // the file's name (one made up when the platform gives none)
	MIME     string // its type, when the platform says
	Kind     string // image, video, audio, voice, document
	Size     int64  // bytes, 0 when the platform does not say
	Duration int    // seconds, for a voice message, when the platform says
	Fetch    func(ctx context.Context) (io.ReadCloser, error)
	// Sticker is what the platform says of a sticker (Kind sticker).
	Sticker *Sticker
}

// Sticker is a sticker a person sent: its emoji, its set, the platform's
// lasting id of its image (Telegram's file_unique_id), and whether it
// moves (an animated or video sticker, which cannot be looked at).
type Sticker struct {
	Emoji, Set, ID string
	Animated       bool
}

// Tap is a person's tap on a button under a message of the bot's.
type Tap struct {
	ID          string // the platform's id of the tap, to answer it
	MessageID   string // the message the button is under
	MessageText string // that message's text, as the chat shows it
	Data        string // the button's data
}

// Button is one button under a message (a Telegram inline keyboard's): its
// label, and the data a tap on it sends back.
type Button struct {
	Label string `json:"label"`
	Data  string `json:"data"`
}

// Tapper is an adapter whose messages can carry buttons (Telegram). One
// that is not shows none: its messages say how to answer in words.
type Tapper interface {
	// AnswerTap acknowledges tap id with a short notice (alert: in a
	// dialog the person closes, rather than a passing toast).
	AnswerTap(ctx context.Context, id, notice string, alert bool) error
}

// Reaction is an emoji reaction a person added to, or removed from, a
// message the bot can see (Slack's reaction_added and reaction_removed).
type Reaction struct {
	Added     bool
	Name      string // the emoji's name, without colons
	ItemUser  string // who wrote the message reacted to
	ItemType  string // message, file, ...
	MessageTS string // the message's ts
	TeamID    string
	EventTS   string
	Raw       json.RawMessage // the platform's event as it came
}

// Message is what Send delivers.
type Message struct {
	ChatID   string
	ThreadID string
	ReplyTo  string
	Text     string
	// Buttons, in rows, go under the message on a platform that has them
	// (a Tapper); elsewhere the text alone says how to answer.
	Buttons [][]Button
	// File is a file to send (a FileSender's SendFile), Text its caption.
	File *OutFile
	// Markdown says the model wrote Text, in Markdown: an adapter whose
	// platform has a markup of its own writes it in that (Telegram's HTML,
	// Slack's mrkdwn). Atrium's own words are sent as they are.
	Markdown bool
}

// Inbox is where an adapter hands what it received; it returns at once
// (the turn runs elsewhere).
type Inbox func(Inbound)

// Reporter is told of an adapter's connection state.
type Reporter func(state, detail string, err error)

// Adapter is one chat platform.
type Adapter interface {
	// Platform is its name (telegram, slack, webhook, ...).
	Platform() string
	// Run receives until ctx ends, handing each message to in and its
	// state to report. A platform that is down is retried with backoff
	// inside Run; Run returns only when ctx ends (or on a configuration
	// error that retrying cannot fix).
	Run(ctx context.Context, in Inbox, report Reporter) error
	// Send delivers one message and returns the platform's id for it.
	// An error wrapped with Permanent is not retried.
	Send(ctx context.Context, m Message) (string, error)
}

// Typer is an adapter that can show "typing…" while a turn runs. Typing
// is called when the turn starts and every few seconds until it ends.
type Typer interface {
	Typing(ctx context.Context, chatID, threadID string) error
}

// TypingStopper is a Typer whose indicator stays until it is taken down
// (Slack's thread status): StopTyping is called once when the turn ends.
type TypingStopper interface {
	Typer
	StopTyping(ctx context.Context, chatID, threadID string) error
}

// Acknowledger is an adapter that marks the message a turn answers while
// the turn runs, and then how it ended (Discord's 👀, then ✅ or ❌).
// Failures are ignored.
type Acknowledger interface {
	Working(ctx context.Context, m Inbound) error
	Done(ctx context.Context, m Inbound, ok bool) error
}

// CommandMenu is an adapter whose platform lists the bot's slash
// commands in a menu of its own (Discord's application commands,
// Telegram's / menu): the service gives it the registry's list, which it
// asks when it connects.
type CommandMenu interface {
	SetCommands(list func() []hooks.Command)
}

// menuSource is what a CommandMenu adapter keeps: the service's list of
// commands, and how a platform's menu takes them.
type menuSource struct {
	mu   sync.Mutex
	list func() []hooks.Command
}

// SetCommands implements CommandMenu.
func (m *menuSource) SetCommands(list func() []hooks.Command) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.list = list
}

// menuEntry is a command as a platform's menu lists it: its name there,
// a description (its own, else its name), its arguments' hint.
type menuEntry struct{ name, description, hint string }

// menu is the commands a platform's menu can list (false before the
// service gave them): their names lower-cased, those valid takes, each
// once; the names of first first, in that order (nil: the list's order);
// at most max.
func (m *menuSource) menu(valid *regexp.Regexp, first []string, max int) ([]menuEntry, bool) {
	m.mu.Lock()
	list := m.list
	m.mu.Unlock()
	if list == nil {
		return nil, false
	}
	cmds := list()
	if first != nil {
		slices.SortStableFunc(cmds, func(a, b hooks.Command) int {
			ai, bi := slices.Index(first, a.Name), slices.Index(first, b.Name)
			switch {
			case ai >= 0 && bi >= 0:
				return ai - bi
			case ai >= 0:
				return -1
			case bi >= 0:
				return 1
			case (a.Plugin == skillMenu) != (b.Plugin == skillMenu):
				if a.Plugin == skillMenu {
					return 1 // the skills after the commands
				}
				return -1
			}
			return strings.Compare(a.Name, b.Name)
		})
	}
	var out []menuEntry
	seen := map[string]bool{}
	for _, c := range cmds {
		name := strings.ToLower(c.Name)
		if !valid.MatchString(name) || seen[name] || len(out) == max {
			continue
		}
		seen[name] = true
		desc := strings.TrimSpace(c.Description)
		if desc == "" {
			desc = "/" + name
		}
		out = append(out, menuEntry{name: name, description: desc, hint: strings.TrimSpace(c.ArgsHint)})
	}
	return out, true
}

// Editor is an adapter that can edit a message it sent.
type Editor interface {
	Edit(ctx context.Context, chatID, messageID, text string) error
}

// Deleter is an adapter that can delete a message it sent.
type Deleter interface {
	Delete(ctx context.Context, chatID, messageID string) error
}

// permanentError is a send error that retrying cannot fix (a chat that
// does not exist, a bot removed from it, a refused request).
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as not worth retrying.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// retryAfter is a send error that says when to try again (HTTP 429).
type retryAfter struct {
	err   error
	after time.Duration
}

func (e retryAfter) Error() string { return e.err.Error() }
func (e retryAfter) Unwrap() error { return e.err }

// RetryAfter marks err as "try again after d" (a platform's rate limit).
func RetryAfter(err error, d time.Duration) error { return retryAfter{err, d} }

func retryDelay(err error) (time.Duration, bool) {
	var r retryAfter
	if errors.As(err, &r) {
		return r.after, true
	}
	return 0, false
}

// Access is who may talk to an adapter. Deny by default: a sender is let in
// only when their user id or the chat's id is listed.
type Access struct {
	Users []string
	Chats []string
	// Roles let in a member of a server who has one of them (Discord's
	// role ids; known only where the platform says the sender's roles).
	Roles []string
}

// Admits reports whether the sender of m may talk: their id, the chat's,
// or one of their roles is listed.
func (a Access) Admits(m Inbound) bool {
	if a.Allows(m.UserID, m.ChatID) {
		return true
	}
	for _, r := range m.Roles {
		if r != "" && slices.Contains(a.Roles, r) {
			return true
		}
	}
	return false
}

// Allows reports whether a sender may talk, by their id or the chat's.
func (a Access) Allows(userID, chatID string) bool {
	for _, u := range a.Users {
		if u != "" && u == userID {
			return true
		}
	}
	for _, c := range a.Chats {
		if c != "" && c == chatID {
			return true
		}
	}
	return false
}

// backoff is the delay before attempt n (1-based) of something that
// failed: base doubled each time, capped.
func backoff(base, ceiling time.Duration, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	d := base
	for i := 1; i < n && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// scrub removes a secret from an error's text (Go's HTTP client errors
// carry the URL, and Telegram's URLs carry the token).
func scrub(err error, secret string) error {
	if err == nil || secret == "" {
		return err
	}
	return scrubbed{err: err, secret: secret}
}

type scrubbed struct {
	err    error
	secret string
}

func (s scrubbed) Error() string { return strings.ReplaceAll(s.err.Error(), s.secret, "<token>") }
func (s scrubbed) Unwrap() error { return s.err }

// errMissingSecret says which environment variable is missing.
func errMissingSecret(platform, envVar string) error {
	return fmt.Errorf("%s: the environment variable %s is not set (the %s adapter reads its secret from there; it never goes in config.yaml)",
		platform, envVar, platform)
}
