package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"atrium/backend/apperr"
)

// SyncHandler answers a synchronous hook (pre_llm_call). Its result is
// used: a string, or an object such as {"context": "..."}.
type SyncHandler func(ctx context.Context, payload json.RawMessage) (any, error)

type syncReg struct {
	id     uint64
	plugin string
	hook   string
	fn     SyncHandler
}

// SyncResult is one plugin's answer to a synchronous hook.
type SyncResult struct {
	Plugin string
	Value  any
	Err    error
}

// RegisterSync subscribes fn, on behalf of plugin, to a synchronous hook.
func (b *Bus) RegisterSync(plugin, hook string, fn SyncHandler) (Handle, error) {
	plugin = strings.TrimSpace(plugin)
	if plugin == "" || fn == nil {
		return Handle{}, apperr.New(apperr.Invalid, "register %s: plugin name and callback are required", hook)
	}
	kind, err := Lookup(hook)
	if err != nil {
		return Handle{}, fmt.Errorf("plugin %s: %w", plugin, err)
	}
	if kind != Sync {
		return Handle{}, apperr.New(apperr.Invalid, "plugin %s: %s is an observer hook; register it with RegisterHook", plugin, hook)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextReg++
	b.syncRegs = append(b.syncRegs, &syncReg{id: b.nextReg, plugin: plugin, hook: hook, fn: fn})
	b.subscriberLocked(plugin)
	return Handle{b: b, id: b.nextReg}, nil
}

// RegisterSync subscribes fn to a synchronous hook for this plugin.
func (c *Context) RegisterSync(hook string, fn SyncHandler) error {
	h, err := c.bus.RegisterSync(c.plugin, hook, fn)
	if err != nil {
		return err
	}
	c.added(h, hook)
	return nil
}

// CallSync calls every plugin subscribed to hook, one after another in
// plugin load order (callbacks of one plugin in registration order), each
// bounded by the callback timeout, and returns their answers in that order.
// Before a plugin is called, it takes every observer event committed so far
// (bounded by the same timeout), so a pre_llm_call never overtakes the
// post_compaction that preceded it, whichever process committed it. A
// client (SetRemote) asks the profile's plugin host, whose answers come
// after those of any plugin registered here.
func (b *Bus) CallSync(ctx context.Context, hook string, payload any) ([]SyncResult, error) {
	if _, err := Lookup(hook); err != nil {
		return nil, err
	}
	if k, _ := Lookup(hook); k != Sync {
		return nil, apperr.New(apperr.Invalid, "%s is an observer hook, not a synchronous one", hook)
	}
	raw, err := EncodePayload(payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", hook, err)
	}
	b.mu.Lock()
	var regs []*syncReg
	for _, r := range b.syncRegs {
		if r.hook == hook {
			regs = append(regs, r)
		}
	}
	remote := b.remote
	b.mu.Unlock()
	// Plugin load order; a plugin's own callbacks keep registration order.
	slices.SortStableFunc(regs, func(x, y *syncReg) int { return b.comparePlugins(x.plugin, y.plugin) })
	out := make([]SyncResult, 0, len(regs))
	var head int64
	if len(regs) > 0 {
		if head, err = b.head(ctx); err != nil {
			return nil, err
		}
	}
	for _, r := range regs {
		if until, skip := b.isSuppressed(r.id); skip {
			err := fmt.Errorf("%w (until %s)", ErrSkipped, until.Format(time.TimeOnly))
			b.reportFailure(r.plugin, hook, err, raw)
			out = append(out, SyncResult{Plugin: r.plugin, Err: err})
			continue
		}
		b.waitDrained(ctx, r.plugin, head)
		v, err := b.callOne(ctx, r, raw)
		if err != nil {
			if errors.Is(err, ErrTimedOut) {
				b.suppress(r.id)
			}
			b.reportFailure(r.plugin, hook, err, raw)
		}
		out = append(out, SyncResult{Plugin: r.plugin, Value: v, Err: err})
	}
	if remote != nil {
		res, err := remote.CallSync(ctx, hook, raw)
		if err != nil {
			return out, fmt.Errorf("%s on the plugin host: %w", hook, err)
		}
		out = append(out, res...)
	}
	return out, nil
}

// callOne runs one synchronous callback in its own goroutine so a hang is
// cut off at the timeout; the abandoned goroutine holds only itself.
func (b *Bus) callOne(ctx context.Context, r *syncReg, raw json.RawMessage) (any, error) {
	cctx := ctx
	cancel := func() {}
	timeout := b.Timeout()
	if timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	type answer struct {
		v   any
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- answer{err: fmt.Errorf("panic: %v", p)}
			}
		}()
		v, err := r.fn(cctx, raw)
		ch <- answer{v, err}
	}()
	select {
	case a := <-ch:
		return a.v, a.err
	case <-cctx.Done():
		if ctx.Err() == nil {
			return nil, fmt.Errorf("%w: callback did not return within %s", ErrTimedOut, timeout)
		}
		return nil, fmt.Errorf("callback did not return: %w", cctx.Err())
	}
}

// BlockPrompt is the answer of a pre_llm_call callback that keeps the
// prompt from being sent (Claude Code's UserPromptSubmit block): the turn
// stops before anything is stored, and reason is said to the person.
func BlockPrompt(reason string) map[string]any {
	return map[string]any{"action": ActionBlockPrompt, "message": reason}
}

// ActionBlockPrompt is the action of BlockPrompt's answer.
const ActionBlockPrompt = "block_prompt"

// PromptBlock is the reason of the first answer that blocks the prompt
// (BlockPrompt's), if any.
func PromptBlock(results []SyncResult) (string, bool) {
	for _, r := range results {
		if r.Err != nil {
			continue // pre_llm_call fails open
		}
		for _, m := range r.actions() {
			if m["action"] == ActionBlockPrompt {
				msg, _ := m["message"].(string)
				return msg, true
			}
		}
	}
	return "", false
}

// ContextTexts extracts the text a pre_llm_call answer adds to the user turn:
// a string, or an object's "context" field. Anything else adds nothing.
func ContextTexts(results []SyncResult) []string {
	var out []string
	for _, r := range results {
		if r.Err != nil {
			continue
		}
		switch v := r.Value.(type) {
		case string:
			if strings.TrimSpace(v) != "" {
				out = append(out, v)
			}
		case map[string]any:
			if s, ok := v["context"].(string); ok && strings.TrimSpace(s) != "" {
				out = append(out, s)
			}
		case map[string]string:
			if s := v["context"]; strings.TrimSpace(s) != "" {
				out = append(out, s)
			}
		case json.RawMessage:
			var s string
			var m map[string]any
			if json.Unmarshal(v, &s) == nil && s != "" {
				out = append(out, s)
			} else if json.Unmarshal(v, &m) == nil {
				if s, ok := m["context"].(string); ok && s != "" {
					out = append(out, s)
				}
			}
		}
	}
	return out
}
