package stack

import (
	"context"
	"time"

	"atrium/backend/compaction"
	"atrium/backend/config"
	"atrium/backend/llm"
	"atrium/backend/turns"
)

// ModelFlags override the configured model on one command.
type ModelFlags struct {
	Provider string // offline or openai
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

func (s *Stack) provider(f ModelFlags) (llm.Provider, error) {
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
	if m.Provider == "openai" {
		return llm.NewOpenAIProvider(llm.OpenAIConfig{BaseURL: m.BaseURL, Model: m.Name, APIKeyEnv: m.APIKeyEnv,
			ContextWindow: m.ContextWindow, Timeout: time.Duration(m.TimeoutSecs * float64(time.Second))})
	}
	return llm.OfflineProvider{Window: m.ContextWindow, Model: m.Name}, nil
}

func (s *Stack) summarizer() (llm.Summarizer, error) {
	if s.Config.Compaction.Summarizer == "model" && s.Config.Model.Provider == "openai" {
		m := s.Config.Model
		return llm.NewOpenAISummarizer(llm.OpenAIConfig{BaseURL: m.BaseURL, Model: m.Name, APIKeyEnv: m.APIKeyEnv,
			Timeout: time.Duration(m.TimeoutSecs * float64(time.Second))})
	}
	return llm.OfflineSummarizer{}, nil
}

// Loop builds the turn loop with the configured (or overridden) provider.
func (s *Stack) Loop(f ModelFlags) (*turns.Loop, error) {
	p, err := s.provider(f)
	if err != nil {
		return nil, err
	}
	model := p.Name()
	if f.Model != "" {
		model = f.Model
	} else if s.Config.Model.Name != "" {
		model = s.Config.Model.Name
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
