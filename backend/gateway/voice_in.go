package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A voice message a person sends is transcribed before the agent reads
// it, as the familiar gateway does (Options.Transcribe): the agent is told
// what was said, and the chat is sent it back (Options.EchoTranscripts).

// TranscribeTimeout bounds the transcription of one voice message.
const TranscribeTimeout = 5 * time.Minute

// ErrTranscriptionOff is what Options.Transcribe returns when
// speech-to-text was turned off since the gateway started: the voice
// message is noted as it is without it.
var ErrTranscriptionOff = errors.New("speech-to-text is off")

// What the agent is told of a voice message that was transcribed (skills
// and plugins read this form) or could not be, and what the chat is sent
// of it, in the familiar gateway's words.
const (
	VoiceHeardText     = `[The user sent a voice message~ Here's what they said: "%s"]`
	VoiceNotHeardText  = "[voice message could not be transcribed]"
	TranscriptEchoText = `🎙️ "%s"`
)

// hear is the note of the voice message saved at path, transcribed;
// false when speech-to-text is off. A transcription that fails is logged
// with its reason, and the agent told it could not be made.
func (s *Service) hear(ctx context.Context, platform, path string) (string, bool) {
	tctx, cancel := context.WithTimeout(ctx, TranscribeTimeout)
	defer cancel()
	text, err := s.o.Transcribe(tctx, path)
	switch {
	case errors.Is(err, ErrTranscriptionOff):
		return "", false
	case err != nil:
		s.log.Warn("gateway: a voice message could not be transcribed; the agent is told so", "platform", platform, "file", path, "error", err)
		return VoiceNotHeardText, true
	}
	if s.o.EchoTranscripts {
		s.echoTranscript(ctx, text)
	}
	return fmt.Sprintf(VoiceHeardText, text), true
}

// echoTranscript sends the chat of the message being answered what its
// voice message was heard to say, before the agent's answer; it is the
// gateway's, not the agent's words, and no transcript keeps it.
func (s *Service) echoTranscript(ctx context.Context, text string) {
	w, ok := ctx.Value(turnKey{}).(*turnInfo)
	if !ok {
		return
	}
	out := Outbound{Platform: w.c.Adapter.Platform(), ChatID: w.m.ChatID, ThreadID: w.m.ThreadID, ReplyTo: w.m.ReplyTo,
		Origin: "transcript", Text: fmt.Sprintf(TranscriptEchoText, text)}
	if err := s.enqueue(ctx, out); err != nil {
		s.log.Warn("gateway: the transcript of a voice message was not sent back", "platform", out.Platform, "error", err)
	}
}
