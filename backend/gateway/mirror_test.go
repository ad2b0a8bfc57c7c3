package gateway_test

import (
	"context"
	"testing"

	"atrium/backend/gateway"
	"atrium/backend/sessions"
)

// A message sent to a chat from elsewhere is mirrored into the session of
// that chat's conversation, as the familiar delivery mirror picks it: a
// DM's; in a group kept a conversation per person, the most recent
// person's; a topic's own, though another topic of the group is more
// recent; never the sending session, nor a deleted one; none when the chat
// has had no conversation.
func TestMirrorIntoTheChatsConversation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2000, 0.5)
	ctx := context.Background()
	store := gateway.NewStore(e.db)
	route := func(key, sender string) string {
		t.Helper()
		s, err := e.sess.Create(ctx, sessions.CreateParams{Title: key, Source: "gateway", SenderID: sender})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.SetRoute(ctx, key, "telegram", s.ID); err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	dm := route("telegram:dm:42", "42")
	bob := route("telegram:group:-100:7", "7")
	ada := route("telegram:group:-100:42", "42") // the most recent in the group
	topic10 := route("telegram:group:-100:10:42", "42")
	route("telegram:group:-100:11:42", "42") // the most recent topic
	msg := func(text string) sessions.NewMessage { return sessions.NewMessage{Role: "assistant", Content: text} }
	last := func(id string) string {
		t.Helper()
		ms, err := e.sess.Messages(ctx, id, true)
		if err != nil || len(ms) == 0 {
			t.Fatalf("%s: %v %v", id, ms, err)
		}
		return ms[len(ms)-1].Content
	}
	for _, c := range []struct {
		chat, thread, skip, want string
	}{
		{"42", "", "", dm},
		{"-100", "", "", ada},
		{"-100", "", ada, bob},
		{"-100", "10", "", topic10},
		{"-555", "", "", ""},
	} {
		got, err := store.Mirror(ctx, e.sess, "telegram", c.chat, c.thread, c.skip, msg("to "+c.chat+"/"+c.thread))
		if err != nil || got != c.want {
			t.Fatalf("%s/%s skipping %q: %q %v, want %q", c.chat, c.thread, c.skip, got, err, c.want)
		}
		if got != "" && last(got) != "to "+c.chat+"/"+c.thread {
			t.Fatalf("%s holds %q", got, last(got))
		}
	}
	if _, err := e.sess.Delete(ctx, []string{dm}, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := store.Mirror(ctx, e.sess, "telegram", "42", "", "", msg("gone")); err != nil || got != "" {
		t.Fatalf("a deleted conversation: %q %v", got, err)
	}
}
