// Package compaction rewrites stored transcripts so they fit a model's
// context, and fires post_compaction once for every compaction that really
// changed a transcript, after commit. The summary is made outside every
// transaction; the commit is short and checks that nothing it replaces
// changed meanwhile.
package compaction

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/sessions"
)

// Kinds of compaction.
const (
	KindSummarize        = "summarize"
	KindMicroSummarize   = "micro_summarize"
	KindPruneToolResults = "prune_tool_results"
	KindProviderNative   = "provider_native"
)

// Reasons a compaction is triggered.
const (
	ReasonManual         = "manual"
	ReasonPreAPI         = "pre_api"
	ReasonPostTool       = "post_tool"
	ReasonOverflow       = "overflow"
	ReasonGatewayHygiene = "gateway_hygiene"
	ReasonBetweenTurns   = "between_turns"
	ReasonProactivePrune = "proactive_prune"
	ReasonProvider       = "provider"
	ReasonUnknown        = "unknown"
)

// Kinds and Reasons list the valid values.
var (
	Kinds   = []string{KindSummarize, KindMicroSummarize, KindPruneToolResults, KindProviderNative}
	Reasons = []string{ReasonManual, ReasonPreAPI, ReasonPostTool, ReasonOverflow, ReasonGatewayHygiene, ReasonBetweenTurns, ReasonProactivePrune, ReasonProvider, ReasonUnknown}
)

// Why an attempt changed nothing.
const (
	SkipNothing   = "nothing_to_compact"
	SkipCooldown  = "cooldown"
	SkipAborted   = "aborted"
	SkipWouldGrow = "would_grow"
)

// Config tunes compaction (config.yaml's compaction section).
type Config struct {
	Rotate         bool          // summarize continues in a new session (default true)
	ProtectTurns   int           // recent user turns kept verbatim (default 2)
	MicroSlice     int           // messages folded by micro_summarize (default 12)
	PruneKeepTurns int           // prune_tool_results spares the last K turns (default 2)
	StubMinChars   int           // tool outputs shorter than this are left alone (default 200)
	Threshold      float64       // pre_api/post_tool trigger, fraction of the window (default 0.8)
	SoftThreshold  float64       // between_turns trigger (default 0.6)
	Cooldown       time.Duration // after a failed or ineffective automatic attempt (default 2 min)
	// MemoryProvider is memory.provider: the plugin memory provider asked
	// before a fold (on_pre_compress) and told after a rotation
	// (on_session_switch).
	MemoryProvider string
}

// DefaultConfig is the configuration when nothing is set.
func DefaultConfig() Config {
	return Config{Rotate: true, ProtectTurns: 2, MicroSlice: 12, PruneKeepTurns: 2, StubMinChars: 200,
		Threshold: 0.8, SoftThreshold: 0.6, Cooldown: 2 * time.Minute}
}

// Engine runs compactions.
type Engine struct {
	db       *db.DB
	sessions *sessions.Service
	bus      *hooks.Bus
	sum      llm.Summarizer
	cfg      atomic.Pointer[Config]

	mu   sync.Mutex
	busy map[string]bool
	cool map[string]time.Time
}

// NewEngine builds the engine. sum is the summarizer for summarize and
// micro_summarize.
func NewEngine(d *db.DB, s *sessions.Service, bus *hooks.Bus, sum llm.Summarizer, cfg Config) *Engine {
	e := &Engine{db: d, sessions: s, bus: bus, sum: sum, busy: map[string]bool{}, cool: map[string]time.Time{}}
	e.cfg.Store(&cfg)
	return e
}

// Config is the configuration in force.
func (e *Engine) Config() Config { return *e.cfg.Load() }

// SetConfig puts cfg in force from the next compaction (config.yaml
// changed while the process runs).
func (e *Engine) SetConfig(cfg Config) { e.cfg.Store(&cfg) }

// Request asks for one compaction.
type Request struct {
	SessionID string
	Kind      string
	Reason    string
	Focus     string              // optional hint for the summary (/compress FOCUS)
	Native    llm.NativeCompactor // required for provider_native
	Model     string
	Platform  string // the surface, for the memory provider ("" unknown)
	// SessionKey, Provider and ContextLength tell a context engine which
	// conversation and which model (update_model, on_session_start); the
	// turn loop sets them, "" and 0 when unknown.
	SessionKey    string
	Provider      string
	ContextLength int
}

// Result says what a compaction did. Changed=false means nothing was
// written and nothing fired; Skipped says why.
type Result struct {
	Changed         bool   `json:"changed"`
	Skipped         string `json:"skipped,omitempty"`
	Detail          string `json:"detail,omitempty"`
	SessionID       string `json:"session_id"`
	OldSessionID    string `json:"old_session_id"`
	Kind            string `json:"kind"`
	Reason          string `json:"reason"`
	BeforeTokens    *int   `json:"before_tokens"`
	AfterTokens     *int   `json:"after_tokens"`
	MessagesRemoved *int   `json:"messages_removed"`
	EventID         string `json:"event_id,omitempty"`
	// Engine is the context engine that compacted ("" for Atrium's own
	// compaction).
	Engine string `json:"engine,omitempty"`
}

func oneOf(field, v string, allowed []string) error {
	for _, a := range allowed {
		if a == v {
			return nil
		}
	}
	return apperr.New(apperr.Invalid, "invalid %s %q (one of %s)", field, v, strings.Join(allowed, ", "))
}

// plan is what a compaction will write.
type plan struct {
	replaced  []sessions.Message    // become inactive (or stay behind, on rotation)
	inserts   []sessions.NewMessage // the new messages
	pos       []*float64            // position of each insert (in place)
	removed   *int
	replacedN *int
	rotate    bool
	engine    string // the context engine that made it ("" for Atrium's own)
}

func (e *Engine) claim(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.busy[id] {
		return false
	}
	e.busy[id] = true
	return true
}

func (e *Engine) release(id string) {
	e.mu.Lock()
	delete(e.busy, id)
	e.mu.Unlock()
}

func (e *Engine) coolingUntil(id string) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cool[id]
}

func (e *Engine) setCooldown(id string, on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if cooldown := e.Config().Cooldown; on && cooldown > 0 {
		e.cool[id] = e.db.Now().Add(cooldown)
	} else {
		delete(e.cool, id)
	}
}

// Compact runs one compaction. An attempt that changes nothing (nothing to
// compact, cooldown, aborted summary, a result not smaller than the input)
// returns Changed=false, writes nothing and fires nothing. A second
// compaction of a session already being compacted is refused as busy.
func (e *Engine) Compact(ctx context.Context, req Request) (Result, error) {
	if err := sessions.ValidateID(req.SessionID); err != nil {
		return Result{}, err
	}
	if req.Reason == "" {
		req.Reason = ReasonUnknown
	}
	if err := oneOf("kind", req.Kind, Kinds); err != nil {
		return Result{}, err
	}
	if err := oneOf("reason", req.Reason, Reasons); err != nil {
		return Result{}, err
	}
	if req.Kind == KindProviderNative && req.Native == nil {
		return Result{}, apperr.New(apperr.Invalid, "provider_native compaction needs a provider that compacts natively")
	}
	res := Result{SessionID: req.SessionID, Kind: req.Kind, Reason: req.Reason}
	if !e.claim(req.SessionID) {
		return Result{}, apperr.New(apperr.Conflict, "session %s is already being compacted", req.SessionID)
	}
	defer e.release(req.SessionID)
	if req.Reason != ReasonManual {
		if until := e.coolingUntil(req.SessionID); e.db.Now().Before(until) {
			res.Skipped, res.Detail = SkipCooldown, "automatic compaction waits until "+until.UTC().Format(time.RFC3339)
			return res, nil
		}
	}
	sess, err := e.sessions.Get(ctx, req.SessionID)
	if err != nil {
		return Result{}, err
	}
	if sess.Trashed() {
		return Result{}, apperr.New(apperr.Rejected, "session %s is in the trash; restore it first", sess.ID)
	}
	if sess.Ended() {
		return Result{}, apperr.New(apperr.Rejected, "session %s has ended; compact its continuation instead", sess.ID)
	}
	msgs, err := e.sessions.Messages(ctx, sess.ID, false)
	if err != nil {
		return Result{}, err
	}
	p, skip, detail, err := e.plan(ctx, req, msgs)
	if err != nil {
		return Result{}, err
	}
	if skip != "" {
		res.Skipped, res.Detail = skip, detail
		e.setCooldown(sess.ID, skip == SkipAborted)
		return res, nil
	}
	before := estimate(msgs)
	after := before - estimate(p.replaced) + estimateNew(p.inserts)
	if after >= before {
		res.Skipped, res.Detail = SkipWouldGrow, fmt.Sprintf("the result (~%d tokens) would not be smaller than the input (~%d)", after, before)
		e.setCooldown(sess.ID, true)
		return res, nil
	}
	res.BeforeTokens, res.AfterTokens, res.MessagesRemoved, res.Engine = &before, &after, p.removed, p.engine
	if e.bus != nil {
		// In line, once the compaction will be written and before it is:
		// the transcript is still whole. Answers are ignored, and a
		// failure (logged by the bus) never stops the compaction.
		_, _ = e.bus.CallSync(ctx, hooks.PreCompaction, hooks.PreCompactionPayload{SessionID: sess.ID, Kind: req.Kind,
			Reason: req.Reason, Focus: req.Focus, Messages: len(msgs), BeforeTokens: before, Platform: hooks.StrOrNil(req.Platform)})
	}
	if err := e.commit(ctx, sess, p, &res, req); err != nil {
		return Result{}, err
	}
	e.setCooldown(sess.ID, false)
	if res.OldSessionID != "" {
		// The conversation continues in a new session: the memory provider
		// follows it (same conversation, not a reset).
		e.tellMemory(ctx, req, res.SessionID, "on_session_switch", []any{res.SessionID},
			map[string]any{"parent_session_id": res.OldSessionID, "reset": false, "rewound": false})
	}
	e.tellEngineBoundary(ctx, req, res)
	return res, nil
}

func (e *Engine) commit(ctx context.Context, sess sessions.Session, p plan, res *Result, req Request) error {
	return e.db.InTx(ctx, func(tx *db.Tx) error {
		target := sess.ID
		if p.rotate {
			cur, err := e.sessions.MessagesTx(ctx, tx, sess.ID)
			if err != nil {
				return err
			}
			if err := stillActive(cur, p.replaced); err != nil {
				return err
			}
			next, err := e.sessions.CreateTx(ctx, tx, sessions.CreateParams{ID: newID(), Title: sess.Title, Source: sess.Source,
				ParentID: sess.ID, Relation: sessions.RelationCompression,
				Platform: sess.Platform, SenderID: sess.SenderID, SenderName: sess.SenderName})
			if err != nil {
				return err
			}
			target = next.ID
			gone := idSet(p.replaced)
			placed := false
			// Everything not folded is carried over in order, the summary in
			// the place of the first folded message, including messages
			// appended while the summary was being made.
			var carry []sessions.NewMessage
			for _, m := range cur {
				if gone[m.ID] {
					if !placed {
						placed = true
						carry = append(carry, p.inserts...)
					}
					continue
				}
				carry = append(carry, sessions.NewMessage{Role: m.Role, Content: m.Content, SentContent: m.SentContent,
					ToolName: m.ToolName, ToolCallID: m.ToolCallID, TokenCount: m.TokenCount})
			}
			if err := e.sessions.InsertManyAtTx(ctx, tx, target, carry, nil); err != nil {
				return err
			}
			if err := e.sessions.EndTx(ctx, tx, sess.ID, "compression"); err != nil {
				return err
			}
			res.SessionID, res.OldSessionID = target, sess.ID
			if err := e.sessions.RecordRotationTx(ctx, tx, sessions.Rotation{SessionID: target, FromSessionID: sess.ID,
				Kind: res.Kind, Reason: res.Reason, BeforeTokens: int64p(res.BeforeTokens), AfterTokens: int64p(res.AfterTokens)}); err != nil {
				return err
			}
		} else {
			n, err := e.sessions.DeactivateTx(ctx, tx, sess.ID, ids(p.replaced))
			if err != nil {
				return err
			}
			if n != int64(len(p.replaced)) {
				return changedUnderneath(sess.ID)
			}
			if err := e.sessions.InsertManyAtTx(ctx, tx, target, p.inserts, p.pos); err != nil {
				return err
			}
		}
		if err := e.sessions.RecountTx(ctx, tx, target); err != nil {
			return err
		}
		// A summary replaced part of the conversation: its next turn begins
		// the context anew (Claude Code's SessionStart with source
		// "compact"). Stale tool output replaced by stubs is not that.
		if res.Kind != KindPruneToolResults {
			if err := e.sessions.MarkStartTx(ctx, tx, target, sessions.StartCompact); err != nil {
				return err
			}
		}
		ev, err := e.bus.EnqueueTx(ctx, tx, hooks.PostCompaction, hooks.PostCompactionPayload{
			SessionID: res.SessionID, OldSessionID: res.OldSessionID, Kind: res.Kind, Reason: res.Reason,
			BeforeTokens: res.BeforeTokens, AfterTokens: res.AfterTokens, MessagesRemoved: res.MessagesRemoved, MessagesReplaced: p.replacedN,
			Platform: hooks.StrOrNil(req.Platform),
		})
		if err != nil {
			return err
		}
		res.Changed, res.EventID = true, ev.ID
		return nil
	})
}

func int64p(p *int) *int64 {
	if p == nil {
		return nil
	}
	v := int64(*p)
	return &v
}

func changedUnderneath(id string) error {
	return apperr.New(apperr.Conflict, "the transcript of %s changed during compaction; nothing was written", id)
}

func stillActive(cur, replaced []sessions.Message) error {
	have := idSet(cur)
	for _, m := range replaced {
		if !have[m.ID] {
			return changedUnderneath(m.SessionID)
		}
	}
	return nil
}

func idSet(ms []sessions.Message) map[int64]bool {
	out := make(map[int64]bool, len(ms))
	for _, m := range ms {
		out[m.ID] = true
	}
	return out
}

func ids(ms []sessions.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func estimate(ms []sessions.Message) int {
	n := 0
	for _, m := range ms {
		n += int(m.TokenCount)
	}
	return n
}

func estimateNew(ms []sessions.NewMessage) int {
	n := 0
	for _, m := range ms {
		n += llm.EstimateTokens(m.Content)
	}
	return n
}

func intp(v int) *int { return &v }

func posOf(m sessions.Message) *float64 {
	p := m.Position()
	return &p
}
