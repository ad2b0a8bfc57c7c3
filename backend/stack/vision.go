package stack

import (
	"context"
	"fmt"
	"os"

	"atrium/backend/config"
	"atrium/backend/gateway"
	"atrium/backend/llm"
	"atrium/backend/tools"
)

// VisionOf is the model that looks at images as cfg, the profile's
// config.yaml, names it: auxiliary.vision's own endpoint, else the main
// model's provider (with auxiliary.vision.model, or the familiar
// $AUXILIARY_VISION_MODEL, over its model), asked with the keys as the
// profile's .env has them at each call. With the main model offline and
// no endpoint of its own, nothing can look at an image, and it says so.
func VisionOf(home config.Home, cfg config.Config) tools.Vision {
	task, model, timeout, temperature, download := cfg.Vision(os.Getenv)
	v := tools.Vision{DownloadTimeout: download}
	where, endpoint := "auxiliary.vision", task.Endpoint
	if !task.Own() {
		where, endpoint = "the main model", cfg.Model.Endpoint
		if ep, err := endpoint(os.Getenv); err == nil && ep.Provider == config.ProviderOffline {
			v.Unavailable = "vision_analyze needs a model that can see images, and the main model is offline: " +
				"set auxiliary.vision (its provider and model, or a base_url), or model.provider"
			return v
		}
	}
	v.Ask = func(ctx context.Context, prompt, dataURL string) (string, error) {
		_ = home.RefreshEnv()
		ep, err := endpoint(os.Getenv)
		if err != nil {
			return "", fmt.Errorf("%s: %w", where, err)
		}
		if model != "" {
			ep.Name = model
		}
		p, err := NewProvider(ep, timeout)
		if err != nil {
			return "", fmt.Errorf("%s: %w", where, err)
		}
		resp, err := p.Complete(ctx, llm.Request{Model: ep.Name, Temperature: &temperature,
			Messages: []llm.Message{{Role: "user", Content: prompt, Images: []string{dataURL}}}})
		return resp.Content, err
	}
	return v
}

// seeImage is the gateway's look at a photo or a sticker a person sent:
// the vision model's answer to prompt, as config.yaml says now
// (gateway.ErrCannotSee when nothing can look).
func (s *Stack) seeImage(ctx context.Context, path, prompt string) (string, error) {
	cfg, _ := s.watch.current()
	// The photo is a file the gateway saved: of the agent's tool settings
	// only the model that sees, and the profile's secrets it never reads,
	// are needed (not the terminal's environment, the web's, the gateway's).
	set := tools.Settings{Vision: VisionOf(s.Home, cfg), Secrets: []string{s.Home.EnvPath()}}
	if p := set.Vision.Problem(); p != "" {
		return "", fmt.Errorf("%w: %s", gateway.ErrCannotSee, p)
	}
	description, _, err := set.AnalyzeImage(ctx, "", path, prompt, nil)
	return description, err
}
