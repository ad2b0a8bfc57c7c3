package gateway

import (
	"context"

	"github.com/google/uuid"
)

// Follow is, for the conversation key whose message this gateway is
// answering now, what starts turns in it later as if its sender wrote
// again (a background process's end told to the chat, as the familiar
// gateway injects it): each call queues a turn behind the conversation's
// messages, whose message next gives; after it, next is asked again, until
// it says none is left. Nil for a conversation it is not answering, or
// when it does not run.
//
// Such a turn is no answer to a question or an approval that waits, and
// /stop stops it as any turn. Its reply goes where the sender's message's
// reply went.
//
// reset says whether the conversation was reset since (/new, /exit, the
// session deleted), as the familiar gateway drops what a conversation
// closed at such a boundary would be told: its continuation after a
// compaction is the same conversation.
func (s *Service) Follow(key string) (follow func(next func() (string, bool)), reset func() bool) {
	since, err := s.current(context.Background(), key)
	if err != nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cv, ok := s.convos[key]
	if !s.started || !ok || cv.current.c.Adapter == nil {
		return nil, nil
	}
	route := cv.current
	follow = func(next func() (string, bool)) {
		s.queue(key, job{c: route.c, msg: route.msg, next: next})
	}
	reset = func() bool {
		ctx := context.Background()
		now, err := s.current(ctx, key)
		if err != nil || since == "" {
			return false
		}
		tip, err := s.o.Loop.Continuation(ctx, since)
		return err != nil || now != tip
	}
	return follow, reset
}

// queue puts j behind key's messages, and starts answering them if
// nothing does.
func (s *Service) queue(key string, j job) {
	s.mu.Lock()
	if !s.started {
		s.mu.Unlock()
		return
	}
	cv, running := s.convos[key]
	if !running {
		cv = &convo{}
		s.convos[key] = cv
	}
	cv.pending = append(cv.pending, j)
	s.mu.Unlock()
	if !running {
		s.turns.Add(1)
		go s.drain(key)
	}
}

// follow runs one turn the agent started itself, from its route's sender,
// then queues the next one behind what the conversation received
// meanwhile.
func (s *Service) follow(ctx context.Context, key string, j job) error {
	text, ok := j.next()
	if !ok {
		return nil
	}
	m := j.msg
	m.Text, m.EventID, m.MessageID = text, "atrium-follow:"+uuid.Must(uuid.NewV7()).String(), ""
	err := s.handle(ctx, j.c, m)
	s.queue(key, j)
	return err
}
