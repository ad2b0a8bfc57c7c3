package stack

import (
	"context"
	"os"
	"time"

	"atrium/backend/compaction"
	"atrium/backend/config"
	"atrium/backend/llm"
	"atrium/backend/turns"
)

// ModelFlags override the configured model on one command.
type ModelFlags struct {
	Provider string // offline, openai, or one of the familiar agent's (config.Model.Endpoint)
	BaseURL  string
	Model    string
	APIKey   string // environment variable name
	// Approve asks a person about a tool call a plugin wants approved
	// (nil: such calls are blocked).
	Approve func(ctx context.Context, a turns.Approval) (turns.Answer, error)
	// NoBetweenTurns: the caller compacts between messages itself (the
	// gateway's hygiene).
	NoBetweenTurns bool
}

// compactionConfig maps config.yaml onto the engine's configuration.
func compactionConfig(c config.Compaction) compaction.Config {
	out := compaction.DefaultConfig()
	if c.Rotate != nil {
		out.Rotate = *c.Rotate
	}
	if c.Threshold != nil {
		out.Threshold = *c.Threshold
	}
	if c.SoftThreshold != nil {
		out.SoftThreshold = *c.SoftThreshold
	}
	if c.CooldownSeconds != nil {
		out.Cooldown = time.Duration(*c.CooldownSeconds * float64(time.Second))
	}
	if c.ProtectTurns != nil {
		out.ProtectTurns = *c.ProtectTurns
	}
	return out
}

// endpoint is config.yaml's model: with f's overrides, resolved.
func (s *Stack) endpoint(f ModelFlags) (config.Endpoint, error) {
	m := s.Config.Model
	if f.Provider != "" {
		m.Provider = f.Provider
	}
	if f.BaseURL != "" {
		m.BaseURL = f.BaseURL
	}
	if f.Model != "" {
		m.Name = f.Model
	}
	if f.APIKey != "" {
		m.APIKeyEnv = f.APIKey
	}
	return m.Endpoint(os.Getenv)
}

func (s *Stack) provider(ep config.Endpoint) (llm.Provider, error) {
	return NewProvider(ep, s.modelTimeout())
}

// NewProvider is the model ep names, each request bounded by timeout (<= 0:
// the provider's default).
func NewProvider(ep config.Endpoint, timeout time.Duration) (llm.Provider, error) {
	if ep.Provider == config.ProviderOpenAI {
		return llm.NewOpenAIProvider(llm.OpenAIConfig{BaseURL: ep.BaseURL, Model: ep.Name, APIKeyEnv: ep.APIKeyEnv,
			ContextWindow: ep.ContextWindow, Timeout: timeout})
	}
	return llm.OfflineProvider{Window: ep.ContextWindow, Model: ep.Name}, nil
}

func (s *Stack) modelTimeout() time.Duration {
	return time.Duration(s.Config.Model.TimeoutSecs * float64(time.Second))
}

// summarizer is the model's when compaction.summarizer is model and the
// model is an API; else the offline one.
func (s *Stack) summarizer() (llm.Summarizer, error) {
	if s.Config.Compaction.Summarizer == "model" {
		ep, err := s.endpoint(ModelFlags{})
		if err != nil {
			return nil, err
		}
		if ep.Provider == config.ProviderOpenAI {
			return llm.NewOpenAISummarizer(llm.OpenAIConfig{BaseURL: ep.BaseURL, Model: ep.Name, APIKeyEnv: ep.APIKeyEnv, Timeout: s.modelTimeout()})
		}
	}
	return llm.OfflineSummarizer{}, nil
}

// Loop builds the turn loop with the configured (or overridden) provider.
func (s *Stack) Loop(f ModelFlags) (*turns.Loop, error) {
	ep, err := s.endpoint(f)
	if err != nil {
		return nil, err
	}
	p, err := s.provider(ep)
	if err != nil {
		return nil, err
	}
	model := p.Name()
	if ep.Name != "" {
		model = ep.Name
	}
	o := turns.Options{Provider: p, Model: model, MemoryProvider: s.Config.Memory.Provider, Approve: f.Approve,
		NoBetweenTurns: f.NoBetweenTurns, NativeCompaction: s.Config.Model.NativeCompaction, Runs: s.Runs, Standing: s.Standing}
	if s.Config.ApprovalsMode() == config.ApproveSmart {
		s.log.Warn("approvals.mode: smart needs the familiar agent's guardian model, which Atrium has not: a person is asked, as in manual")
	}
	if t := s.Config.Model.NativeThreshold; t != nil {
		o.NativeThreshold = *t
	}
	return turns.New(s.DB, s.Sessions, s.Compaction, s.Bus, o)
}
