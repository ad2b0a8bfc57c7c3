// Package memoryrules is the bundled memory-rules plugin: it keeps rules text
// from its settings in the model's context. It adds the rules at the first
// turn of a session and again at the first pre_llm_call after a summarize,
// micro_summarize or provider_native compaction folded them away.
package memoryrules

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"atrium/backend/hooks"
)

// Name is the plugin's name.
const Name = "memory-rules"

// Plugin holds the sessions that need their rules again.
type Plugin struct {
	rules   string
	mu      sync.Mutex
	pending map[string]bool
}

// Register installs the plugin with its settings ("rules").
func Register(ctx *hooks.Context, settings map[string]any) (*Plugin, error) {
	rules, _ := settings["rules"].(string)
	p := &Plugin{rules: strings.TrimSpace(rules), pending: map[string]bool{}}
	if err := ctx.RegisterHook(hooks.PostCompaction, p.onCompaction); err != nil {
		return nil, err
	}
	if err := ctx.RegisterSync(hooks.PreLLMCall, p.preLLMCall); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Plugin) onCompaction(_ context.Context, ev hooks.Event) error {
	var pc hooks.PostCompactionPayload
	if err := ev.Decode(&pc); err != nil {
		return err
	}
	// A summary and a provider's own compaction both rewrite the messages
	// the rules were in; pruning tool output leaves them.
	if pc.Kind != "summarize" && pc.Kind != "micro_summarize" && pc.Kind != "provider_native" {
		return nil
	}
	p.mu.Lock()
	p.pending[pc.SessionID] = true
	p.mu.Unlock()
	return nil
}

func (p *Plugin) preLLMCall(_ context.Context, raw json.RawMessage) (any, error) {
	if p.rules == "" {
		return nil, nil
	}
	var call hooks.LLMCall
	if err := json.Unmarshal(raw, &call); err != nil {
		return nil, err
	}
	p.mu.Lock()
	due := p.pending[call.SessionID] || call.IsFirstTurn
	delete(p.pending, call.SessionID)
	p.mu.Unlock()
	if !due {
		return nil, nil
	}
	return map[string]any{"context": "Standing rules:\n" + p.rules}, nil
}
