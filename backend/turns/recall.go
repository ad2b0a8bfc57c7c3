package turns

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/llm"
	"atrium/backend/sessions"
	"atrium/backend/tools"
)

// session_search: the model's recall of past conversations, under the
// familiar agent's name and shapes, answered from the store's own search
// (no model call): discover (a query: the best conversations, each with
// the match in its context and the conversation's first and last words),
// scroll (session_id and around_message_id: the messages around one) and
// browse (nothing: the most recent conversations). The conversation that
// asks is never among the answers (it is in the model's context already),
// nor anything in the trash. On a chat platform the agent recalls only
// the conversations of the person asking there.

const (
	recallDefaultLimit = 3
	recallMaxLimit     = 10
	recallWindow       = 5
	recallMaxWindow    = 20
	recallBookend      = 3
	recallClip         = 2000 // characters of one message shown
)

var recallSpec = llm.ToolSpec{Name: "session_search",
	Description: "Search past conversations stored in this profile, or scroll inside one. Full-text search over the store; " +
		"every shape returns actual stored messages (no summaries).\n\n" +
		"1) DISCOVERY: pass query (every word must match; the last may be a prefix): the best conversations, each with " +
		"the match and the messages around it, and the conversation's first and last messages.\n" +
		"2) SCROLL: pass session_id and around_message_id: the messages around that one (window on each side).\n" +
		"3) BROWSE: pass nothing: the most recent conversations.",
	Parameters: `{"type":"object","properties":{` +
		`"query":{"type":"string","description":"Words to find in past conversations"},` +
		`"limit":{"type":"integer","description":"Conversations to return (default 3, at most 10)","default":3},` +
		`"session_id":{"type":"string","description":"SCROLL: the session to read in"},` +
		`"around_message_id":{"type":"integer","description":"SCROLL: the message to center on"},` +
		`"window":{"type":"integer","description":"SCROLL: messages on each side (default 5, at most 20)","default":5}` +
		`}}`}

// recallMessage is a stored message as session_search shows it.
type recallMessage struct {
	ID        int64  `json:"id"`
	Role      string `json:"role"`
	Content   string `json:"content"`
	Timestamp string `json:"timestamp"`
	ToolName  string `json:"tool_name,omitempty"`
	Anchor    bool   `json:"anchor,omitempty"`
}

func shapeMessage(m sessions.Message, anchor int64) recallMessage {
	content := m.Content
	if len(content) > recallClip { // in bytes: only then can it be over in characters
		if r := []rune(content); len(r) > recallClip {
			content = string(r[:recallClip]) + "… [clipped]"
		}
	}
	return recallMessage{ID: m.ID, Role: m.Role, Content: content, Timestamp: m.CreatedAt.UTC().Format(time.RFC3339),
		ToolName: m.ToolName, Anchor: anchor != 0 && m.ID == anchor}
}

// sessionSearch answers one call of session_search.
func (l *Loop) sessionSearch(ctx context.Context, tc *turnCtx, args map[string]any) (string, error) {
	own, err := l.conversationOf(ctx, tc.sessionID)
	if err != nil {
		return "", err
	}
	var out any
	sid, _ := args["session_id"].(string)
	query, _ := args["query"].(string)
	switch {
	case strings.TrimSpace(sid) != "" && args["around_message_id"] != nil:
		out, err = l.recallScroll(ctx, tc, own, strings.TrimSpace(sid), tools.Int(args, "around_message_id", 0), tools.Int(args, "window", recallWindow))
	case strings.TrimSpace(query) != "":
		out, err = l.recallDiscover(ctx, tc, own, strings.TrimSpace(query), tools.Int(args, "limit", recallDefaultLimit))
	default:
		out, err = l.recallBrowse(ctx, tc, own, tools.Int(args, "limit", recallDefaultLimit))
	}
	if err != nil {
		out = map[string]any{"success": false, "error": err.Error()}
	}
	b, _ := json.Marshal(out)
	return string(b), nil
}

// conversationOf is the conversation a session belongs to: the first part
// of its compression chain.
func (l *Loop) conversationOf(ctx context.Context, id string) (string, error) {
	s, err := l.sessions.Get(ctx, id)
	if err != nil {
		return "", err
	}
	return conversation(s), nil
}

func conversation(s sessions.Session) string {
	if s.ChainRoot != nil && *s.ChainRoot != "" {
		return *s.ChainRoot
	}
	return s.ID
}

// mayRecall says whether the conversation that asks may be shown s: not
// itself, nothing in the trash, and on a chat platform only the asking
// person's conversations there.
func mayRecall(tc *turnCtx, own string, s sessions.Session) bool {
	if conversation(s) == own || s.Trashed() {
		return false
	}
	if tc.userID != "" {
		return s.Platform == tc.platform && s.SenderID == tc.userID
	}
	return true
}

func (l *Loop) recallDiscover(ctx context.Context, tc *turnCtx, own, query string, limit int) (any, error) {
	limit = min(max(limit, 1), recallMaxLimit)
	// One conversation more than asked (the asking one may be a hit); on a
	// chat platform, where most conversations are others', a wider net.
	want := limit + 1
	if tc.userID != "" {
		want = 50
	}
	hits, err := l.sessions.Search(ctx, query, sessions.SearchOptions{Limit: want, Scope: sessions.ScopeAll})
	if err != nil {
		return nil, err
	}
	results := []map[string]any{}
	for _, h := range hits {
		if len(results) == limit {
			break
		}
		if !mayRecall(tc, own, h.Session) {
			continue
		}
		msgs, err := l.sessions.Messages(ctx, h.Session.ID, false)
		if err != nil {
			continue // deleted meanwhile
		}
		at := slices.IndexFunc(msgs, func(m sessions.Message) bool { return m.ID == h.MessageID })
		entry := map[string]any{"session_id": h.Session.ID, "when": h.Session.StartedAt.UTC().Format(time.RFC3339),
			"source": h.Session.Source, "title": h.Session.Title, "snippet": h.Snippet, "match_message_id": h.MessageID}
		if conversation(h.Session) != h.Session.ID {
			entry["parent_session_id"] = conversation(h.Session)
		}
		talk := func(from, to int) []recallMessage {
			var out []recallMessage
			for _, m := range msgs[from:to] {
				if m.Role == "user" || m.Role == "assistant" {
					out = append(out, shapeMessage(m, 0))
				}
			}
			return out
		}
		lo, hi := 0, 0
		if at >= 0 {
			entry["matched_role"] = msgs[at].Role
			lo, hi = max(0, at-recallWindow), min(len(msgs), at+recallWindow+1)
			window := make([]recallMessage, 0, hi-lo)
			for _, m := range msgs[lo:hi] {
				window = append(window, shapeMessage(m, h.MessageID))
			}
			entry["messages"] = window
		} else {
			entry["messages"] = []recallMessage{} // a match in the title
		}
		entry["bookend_start"] = firstN(talk(0, lo), recallBookend)
		entry["bookend_end"] = lastN(talk(hi, len(msgs)), recallBookend)
		entry["messages_before"], entry["messages_after"] = lo, len(msgs)-hi
		results = append(results, entry)
	}
	out := map[string]any{"success": true, "mode": "discover", "query": query, "results": results, "count": len(results)}
	if len(results) == 0 {
		out["message"] = "No matching sessions found."
	}
	return out, nil
}

func (l *Loop) recallScroll(ctx context.Context, tc *turnCtx, own, id string, around, window int) (any, error) {
	window = min(max(window, 1), recallMaxWindow)
	s, err := l.sessions.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if conversation(s) == own {
		return nil, apperr.New(apperr.Invalid, "scroll refused: that session is this conversation, already in your context")
	}
	if !mayRecall(tc, own, s) {
		return nil, apperr.New(apperr.NotFound, "session_id not found: %s", id)
	}
	msgs, err := l.sessions.Messages(ctx, id, false)
	if err != nil {
		return nil, err
	}
	at := slices.IndexFunc(msgs, func(m sessions.Message) bool { return m.ID == int64(around) })
	if at < 0 {
		return nil, apperr.New(apperr.NotFound, "around_message_id %d is not in session %s", around, id)
	}
	lo, hi := max(0, at-window), min(len(msgs), at+window+1)
	shown := make([]recallMessage, 0, hi-lo)
	for _, m := range msgs[lo:hi] {
		shown = append(shown, shapeMessage(m, int64(around)))
	}
	return map[string]any{"success": true, "mode": "scroll", "session_id": id, "around_message_id": around, "window": window,
		"session_meta": map[string]any{"when": s.StartedAt.UTC().Format(time.RFC3339), "source": s.Source, "title": s.Title},
		"messages":     shown, "messages_before": lo, "messages_after": len(msgs) - hi}, nil
}

func (l *Loop) recallBrowse(ctx context.Context, tc *turnCtx, own string, limit int) (any, error) {
	limit = min(max(limit, 1), recallMaxLimit)
	page, err := l.sessions.List(ctx, sessions.Filter{Rule: sessions.Rule{Scope: sessions.ScopeAll}, Limit: 200})
	if err != nil {
		return nil, err
	}
	results := []map[string]any{}
	for _, s := range page.Sessions {
		if len(results) == limit {
			break
		}
		if !mayRecall(tc, own, s) || s.Relation == "delegate" {
			continue
		}
		results = append(results, map[string]any{"session_id": s.ID, "title": s.Title, "source": s.Source,
			"started_at": s.StartedAt.UTC().Format(time.RFC3339), "last_active": s.LastActivityAt.UTC().Format(time.RFC3339),
			"message_count": s.MessageCount})
	}
	return map[string]any{"success": true, "mode": "browse", "results": results, "count": len(results),
		"message": "The most recent conversations. Pass query= to search, or session_id and around_message_id to scroll."}, nil
}

func firstN(m []recallMessage, n int) []recallMessage {
	if m == nil {
		return []recallMessage{}
	}
	return m[:min(n, len(m))]
}

func lastN(m []recallMessage, n int) []recallMessage {
	if m == nil {
		return []recallMessage{}
	}
	return m[max(0, len(m)-n):]
}
