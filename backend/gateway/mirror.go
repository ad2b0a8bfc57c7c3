package gateway

import (
	"context"
	"strings"

	"atrium/backend/apperr"
	"atrium/backend/sessions"
)

// A message sent to a chat from elsewhere (send_message from a terminal or
// another chat, a scheduled job's answer) is mirrored into the session of
// that chat's conversation, as the familiar gateway's delivery mirror does,
// so the agent there knows what was sent when the person answers it.

// RouteTarget is the send_message target of a conversation's key
// (<platform>:<chat_type>:<chat_id>[:<thread_id>][:<user_id>]; the user's
// id ends it in a shared chat kept a conversation per person, which is
// its session's sender), and the chat's type.
func RouteTarget(key, sender string) (target, kind string, ok bool) {
	parts := strings.Split(key, ":")
	if len(parts) < 3 || parts[2] == "" {
		return "", "", false
	}
	rest := parts[3:]
	if parts[1] != "dm" && len(rest) > 0 && sender != "" && rest[len(rest)-1] == sender {
		rest = rest[:len(rest)-1]
	}
	target = parts[0] + ":" + parts[2]
	if len(rest) > 0 && rest[0] != parts[2] {
		target += ":" + rest[0]
	}
	return target, parts[1], true
}

// Mirror appends m (a message sent to chat and thread on platform) to the
// session of the conversation there, the one most recently active (a
// thread's own, never the chat's other threads'); skip is a session never
// mirrored into (the one that sent it), nor one in the trash or ended. It
// returns the session's id: "" when the chat has no conversation, which is
// no error.
func (s *Store) Mirror(ctx context.Context, ss *sessions.Service, platform, chat, thread, skip string, m sessions.NewMessage) (string, error) {
	want := platform + ":" + chat
	if thread != "" && thread != chat {
		want += ":" + thread
	}
	var rows []struct{ SessionKey, SessionID string }
	// The conversations of the chat, by the key's platform and chat id
	// (its third part), the most recent first.
	if err := s.db.Read.WithContext(ctx).Raw(`SELECT session_key, session_id FROM gateway_routes
		WHERE platform = ? AND session_key LIKE ? ESCAPE '\' ORDER BY updated_at DESC, session_key LIMIT 200`,
		platform, likeEscape(platform)+":%:"+likeEscape(chat)+"%").Scan(&rows).Error; err != nil {
		return "", err
	}
	for _, r := range rows {
		if r.SessionID == skip {
			continue
		}
		sess, err := ss.Get(ctx, r.SessionID)
		if err != nil {
			continue // its session was deleted since
		}
		if target, _, ok := RouteTarget(r.SessionKey, sess.SenderID); !ok || target != want {
			continue
		}
		if _, err := ss.AppendMessage(ctx, r.SessionID, m); apperr.Is(err, apperr.Rejected) {
			continue // in the trash, or ended: no conversation goes on there
		} else if err != nil {
			return "", err
		}
		return r.SessionID, nil
	}
	return "", nil
}

// likeEscape escapes s for a LIKE pattern with ESCAPE '\'.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}
