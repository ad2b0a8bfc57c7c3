package stack

import (
	"context"
	"os"

	"atrium/backend/config"
	"atrium/backend/tools"
	"atrium/backend/tts"
)

// SpeechOf is text_to_speech's provider as cfg, the profile's config.yaml,
// chooses it in its tts block, asked with the keys as the profile's .env
// has them at each call; its audio kept in the profile's audio folder.
// With a provider Atrium does not have, or one whose key is not set, it is
// not offered, and says why.
func SpeechOf(home config.Home, cfg config.Config) tools.Speech {
	_ = home.RefreshEnv()
	dir := tts.AudioDir(home.Dir)
	if p := tts.New(cfg.TTS, dir, os.Getenv).Problem(""); p != "" {
		return tools.Speech{Unavailable: "text_to_speech: " + p}
	}
	return tools.Speech{Speak: func(ctx context.Context, req tools.SpeechRequest) (tools.SpeechResult, error) {
		_ = home.RefreshEnv()
		res, err := tts.New(cfg.TTS, dir, os.Getenv).Speak(ctx, tts.Request{Text: req.Text, OutputPath: req.OutputPath, Provider: req.Provider,
			Speed: req.Speed, Instructions: req.Instructions, Platform: req.Platform, Check: req.Check})
		if err != nil {
			return tools.SpeechResult{}, err
		}
		return tools.SpeechResult{Paths: res.Paths, Provider: res.Provider, VoiceCompatible: res.VoiceCompatible, Chunks: res.Chunks,
			Platform: res.Delivery.Platform, MaxFileBytes: res.Delivery.MaxFileBytes, TargetFileBytes: res.Delivery.TargetFileBytes}, nil
	}}
}
