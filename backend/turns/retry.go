package turns

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"atrium/backend/llm"
)

// Fallback is one model of the chain a turn turns to when its own fails
// (config.yaml's fallback_providers, then fallback_model).
type Fallback struct {
	// Label names it for people: "anthropic/claude-sonnet-4 via openrouter".
	Label string
	// Resolve builds it when the turn turns to it; an error (its key is
	// not set, its provider is not an API Atrium speaks) passes it over.
	Resolve func() (Model, error)
}

// Backoff of a model call that failed for a reason that may pass, when the
// provider did not say how long to wait (Retry-After): 2 s, doubling each
// attempt up to a minute, plus up to half of that at random so that
// conversations waiting on one provider do not all come back at once (the
// familiar agent's jittered backoff).
const (
	backoffBase = 2 * time.Second
	backoffMax  = 60 * time.Second
)

// retryWait is how long to wait before retry attempt (1-based) of a call
// that failed with err: the provider's Retry-After when it gave one, else
// the jittered backoff.
func retryWait(err error, attempt int) time.Duration {
	var apiErr *llm.APIError
	if errors.As(err, &apiErr) && apiErr.HasRetryAfter {
		return apiErr.RetryAfter
	}
	d := backoffMax
	if attempt < 6 {
		d = min(backoffBase<<(attempt-1), backoffMax)
	}
	return d + time.Duration(rand.Int64N(int64(d/2)+1))
}

// retryable reports whether a call that failed for reason may succeed if
// tried again later; fallsOver whether another provider may serve it when
// this one cannot (retrying spent, or a refusal no retry mends: its key,
// its billing, a model it does not have).
func retryable(reason string) bool {
	switch reason {
	case "rate_limit", "overloaded", "server_error", "timeout":
		return true
	}
	return false
}

func fallsOver(reason string) bool {
	switch reason {
	case "auth", "billing", "model_not_found":
		return true
	}
	return retryable(reason)
}

// ModelStatus is what a turn tells its surface while it waits on its
// model: a retry after a wait, a switch to a fallback model, or a fallback
// passed over.
type ModelStatus struct {
	Kind    string // StatusRetry, StatusFallback or StatusSkipped
	Reason  string // why the last call failed: rate_limit, overloaded, server_error, timeout, auth, ...
	Attempt int    // StatusRetry: the retry about to be made, 1-based
	Of      int    // StatusRetry: agent.api_max_retries
	Wait    time.Duration
	Model   string // the model that failed (StatusFallback), or the fallback passed over (StatusSkipped)
	To      string // StatusFallback: the fallback's label
	Error   string // StatusSkipped: why
}

// The kinds of ModelStatus.
const (
	StatusRetry    = "retry"
	StatusFallback = "fallback"
	StatusSkipped  = "skipped"
)

// Text is s as a surface shows it, in the familiar agent's words.
func (s ModelStatus) Text() string {
	switch s.Kind {
	case StatusRetry:
		switch s.Reason {
		case "rate_limit":
			return fmt.Sprintf("⏱️ Rate limited. Waiting %.1fs (attempt %d/%d)...", s.Wait.Seconds(), s.Attempt, s.Of)
		case "overloaded":
			return fmt.Sprintf("⏱️ Provider overloaded. Waiting %.1fs (attempt %d/%d)...", s.Wait.Seconds(), s.Attempt, s.Of)
		}
		return fmt.Sprintf("⏳ Retrying in %.1fs (attempt %d/%d)...", s.Wait.Seconds(), s.Attempt, s.Of)
	case StatusFallback:
		return fmt.Sprintf("🔄 %s failed (%s): switching to fallback %s", s.Model, reasonText(s.Reason), s.To)
	case StatusSkipped:
		return fmt.Sprintf("⚠️ Fallback %s passed over: %s", s.Model, s.Error)
	}
	return ""
}

// reasonText is a failure reason in words.
func reasonText(reason string) string {
	switch reason {
	case "rate_limit":
		return "rate limited"
	case "overloaded":
		return "overloaded"
	case "server_error":
		return "server error"
	case "timeout":
		return "no answer"
	case "auth":
		return "its key was refused"
	case "billing":
		return "billing"
	case "model_not_found":
		return "no such model"
	}
	return reason
}

type modelStatusKey struct{}

// WithModelStatus is ctx for a Send whose surface is told while the turn
// waits to retry its model or turns to a fallback. status is called on
// the turn's goroutine, and on its subagents' for theirs (side by side);
// it must not block.
func WithModelStatus(ctx context.Context, status func(ModelStatus)) context.Context {
	return context.WithValue(ctx, modelStatusKey{}, status)
}

func toldStatus(ctx context.Context, s ModelStatus) {
	if status, ok := ctx.Value(modelStatusKey{}).(func(ModelStatus)); ok && status != nil {
		status(s)
	}
	toldRun(ctx, s.Text())
}

// runStatusKey holds the status of the turn's run (Runs), which the
// window and the dashboard show while the turn runs.
type runStatusKey struct{}

// toldRun sets the status of the turn's run ("": its model answered).
func toldRun(ctx context.Context, text string) {
	if status, ok := ctx.Value(runStatusKey{}).(func(string)); ok {
		status(text)
	}
}

// maxRetries is agent.api_max_retries now (0 without Options.MaxRetries).
func (l *Loop) maxRetries() int {
	if l.opts.MaxRetries == nil {
		return 0
	}
	return max(l.opts.MaxRetries(), 0)
}

// wait waits d, or until ctx ends (the turn was stopped).
func (l *Loop) wait(ctx context.Context, d time.Duration) error {
	if l.opts.Wait != nil {
		return l.opts.Wait(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// nextFallback is the next model of tc's chain that can be built, telling
// the surface of each one passed over (skipped says why); false when none
// is left. Each is turned to at most once a turn: the next turn starts on
// the turn's own model again.
func (l *Loop) nextFallback(ctx context.Context, tc *turnCtx) (m Model, label string, skipped []string, ok bool) {
	if tc.fallbacks == nil {
		tc.fallbacks = []Fallback{}
		if l.opts.Fallbacks != nil {
			tc.fallbacks = l.opts.Fallbacks()
		}
	}
	for len(tc.fallbacks) > 0 {
		f := tc.fallbacks[0]
		tc.fallbacks = tc.fallbacks[1:]
		m, err := f.Resolve()
		if err == nil && m.Provider == nil {
			err = errors.New("no provider")
		}
		if err != nil {
			toldStatus(ctx, ModelStatus{Kind: StatusSkipped, Model: f.Label, Error: err.Error()})
			skipped = append(skipped, fmt.Sprintf("fallback %s passed over: %s", f.Label, err))
			continue
		}
		if m.Name == "" {
			m.Name = m.Provider.Name()
		}
		return m, f.Label, skipped, true
	}
	return Model{}, "", skipped, false
}

// retriesSpent says how a call that failed after retries ended.
type retriesSpent struct {
	err     error
	retries int
}

func (e *retriesSpent) Error() string { return fmt.Sprintf("%v (%s)", e.err, retriesText(e.retries)) }
func (e *retriesSpent) Unwrap() error { return e.err }

// retriesText is "after 1 retry", "after 3 retries".
func retriesText(n int) string {
	if n == 1 {
		return "after 1 retry"
	}
	return fmt.Sprintf("after %d retries", n)
}

// failedOver is err, the turn's failure, with the fallbacks it turned to or
// passed over before it.
func (tc *turnCtx) failedOver(err error) error {
	if len(tc.fallbackNotes) == 0 {
		return err
	}
	return &fallbacksFailed{err: err, notes: strings.Join(tc.fallbackNotes, "; ")}
}

type fallbacksFailed struct {
	err   error
	notes string
}

func (e *fallbacksFailed) Error() string { return fmt.Sprintf("%v (before it: %s)", e.err, e.notes) }
func (e *fallbacksFailed) Unwrap() error { return e.err }
