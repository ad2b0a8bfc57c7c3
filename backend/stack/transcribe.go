package stack

import (
	"context"
	"os"

	"atrium/backend/gateway"
	"atrium/backend/stt"
)

// Transcribe is the text spoken in the audio file at path (a voice message
// a person sent the gateway), as config.yaml's stt block says now, with the
// keys the profile's .env holds now. Turned off since the gateway started,
// it is gateway.ErrTranscriptionOff.
func (s *Stack) Transcribe(ctx context.Context, path string) (string, error) {
	cfg, _ := s.watch.current()
	if !cfg.STT.On() {
		return "", gateway.ErrTranscriptionOff
	}
	_ = s.Home.RefreshEnv()
	return stt.New(cfg.STT, os.Getenv).Transcribe(ctx, path)
}

// transcriber is the gateway's Transcribe: nil when stt.enabled is false.
func (s *Stack) transcriber() func(ctx context.Context, path string) (string, error) {
	if !s.Config.STT.On() {
		return nil
	}
	return s.Transcribe
}
