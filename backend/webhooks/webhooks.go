// Package webhooks posts hook events to the URLs config.yaml's
// hooks.outbound names, in the familiar agent's shape (body, headers,
// HMAC-SHA256 signature), from the durable event log: each target is a
// bus subscriber, so an event waits in the log while its receiver is down,
// is tried again with backoff, with the same delivery_id, until it is
// taken or its deadline passes, and each attempt is on record.
package webhooks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"atrium/backend/hooks"
	"atrium/backend/shellhooks"
)

// Defaults and bounds of a target.
const (
	DefaultTimeout  = 10 * time.Second
	MaxTimeout      = 60 * time.Second
	DefaultDeadline = 24 * time.Hour
	firstBackoff    = time.Second
	maxBackoff      = 5 * time.Minute
)

// SubscriberPrefix starts a target's bus subscriber name: "webhook:" and
// its name (else its URL).
const SubscriberPrefix = "webhook:"

// Target is one hooks.outbound entry.
type Target struct {
	Name      string        `json:"name,omitempty"`
	URL       string        `json:"url"`
	Events    []string      `json:"events"`
	Matcher   string        `json:"matcher,omitempty"`
	Timeout   time.Duration `json:"timeout"`
	Deadline  time.Duration `json:"deadline"`
	SecretEnv string        `json:"secret_env,omitempty"`
	Signed    bool          `json:"signed"`

	secret string
	match  shellhooks.Matcher
}

// Subscriber is the target's bus subscriber name.
func (t Target) Subscriber() string {
	if t.Name != "" {
		return SubscriberPrefix + t.Name
	}
	return SubscriberPrefix + t.URL
}

// Label names the target in messages.
func (t Target) Label() string {
	if t.Name != "" {
		return t.Name
	}
	return t.URL
}

// Parse reads hooks.outbound: every target that can be posted to, and a
// warning for each entry (or event) that cannot. getenv resolves
// secret_env (nil: the process environment).
func Parse(raw any, getenv func(string) string) ([]Target, []string) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var warns []string
	warn := func(format string, a ...any) { warns = append(warns, fmt.Sprintf(format, a...)) }
	if raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, []string{"hooks.outbound must be a list of webhook targets"}
	}
	var out []Target
	seen := map[string]bool{}
	for i, e := range list {
		at := fmt.Sprintf("hooks.outbound[%d]", i)
		m, ok := e.(map[string]any)
		if !ok {
			warn("%s must be a mapping with 'url' and 'events'", at)
			continue
		}
		t := Target{Timeout: DefaultTimeout, Deadline: DefaultDeadline}
		t.URL, _ = m["url"].(string)
		t.URL = strings.TrimSpace(t.URL)
		lower := strings.ToLower(t.URL)
		switch {
		case t.URL == "":
			warn("%s is missing a non-empty 'url'", at)
			continue
		case !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://"):
			warn("%s.url must be http(s), got %q: skipped", at, t.URL)
			continue
		case strings.HasPrefix(lower, "http://") && !loopback(t.URL):
			warn("%s.url uses plain http://: payloads (tool inputs included) travel unencrypted; prefer https", at)
		}
		t.Name, _ = m["name"].(string)
		t.Name = strings.TrimSpace(t.Name)
		evs, _ := m["events"].([]any)
		for _, v := range evs {
			name, _ := v.(string)
			kind, err := hooks.Lookup(name)
			switch {
			case err != nil:
				warn("%s: unknown event %q ignored (known: %s)", at, name, strings.Join(hooks.Names(), ", "))
			case kind != hooks.Observer:
				warn("%s: %s is called in line and not kept in the event log, so it cannot be delivered reliably; ignored (post_tool_call, on_session_end and the other observer hooks can)", at, name)
			case !slices.Contains(t.Events, name):
				t.Events = append(t.Events, name)
			}
		}
		if len(t.Events) == 0 {
			warn("%s has no event Atrium can post: skipped", at)
			continue
		}
		if mt, _ := m["matcher"].(string); strings.TrimSpace(mt) != "" {
			if !slices.Contains(t.Events, hooks.PostToolCall) {
				warn("%s.matcher is ignored: it applies only to post_tool_call", at)
			} else {
				var err error
				t.Matcher = strings.TrimSpace(mt)
				if t.match, err = shellhooks.CompileMatcher(t.Matcher, shellhooks.Hermes); err != nil {
					warn("%s.matcher %q is not a valid regular expression (%v); it matches that exact tool name", at, mt, err)
				}
			}
		}
		if v, ok := shellhooks.Number(m["timeout"]); ok {
			t.Timeout = min(max(time.Duration(v*float64(time.Second)), time.Second), MaxTimeout)
		} else if m["timeout"] != nil {
			warn("%s.timeout must be a number of seconds; using %d", at, int(DefaultTimeout/time.Second))
		}
		if v, ok := shellhooks.Number(m["deadline_hours"]); ok && v > 0 && v < 24*365 {
			t.Deadline = time.Duration(v * float64(time.Hour))
		} else if m["deadline_hours"] != nil {
			warn("%s.deadline_hours must be a number of hours above 0 and below a year; using %d", at, int(DefaultDeadline/time.Hour))
		}
		if env, _ := m["secret_env"].(string); strings.TrimSpace(env) != "" {
			t.SecretEnv = strings.TrimSpace(env)
			if t.secret = getenv(t.SecretEnv); t.secret == "" {
				warn("%s.secret_env %s is not set: deliveries to %s go UNSIGNED", at, t.SecretEnv, t.Label())
			}
		} else if s, _ := m["secret"].(string); s != "" {
			t.secret = s
		}
		t.Signed = t.secret != ""
		if seen[t.Subscriber()] {
			warn("%s: a second target named %s: skipped (give it another name)", at, t.Label())
			continue
		}
		seen[t.Subscriber()] = true
		out = append(out, t)
	}
	return out, warns
}

// loopback tells whether a URL's host is this machine.
func loopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Body is what a target receives: the familiar agent's wire shape of the
// event's payload, with delivery_id (the event's id, the same on every
// attempt) and the attempt's timestamp.
func Body(ev hooks.Event, env shellhooks.Env, now time.Time) ([]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		return nil, fmt.Errorf("payload of %s: %w", ev.Hook, err)
	}
	return json.Marshal(struct {
		shellhooks.Wire
		DeliveryID string `json:"delivery_id"`
		Timestamp  string `json:"timestamp"`
	}{shellhooks.WireOf(ev.Hook, env, p), ev.ID, now.UTC().Format("2006-01-02T15:04:05.000000Z")})
}

// Sign is the signature header's value for body: sha256=<hex HMAC-SHA256>.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Options configure a Registry.
type Options struct {
	Bus    *hooks.Bus
	Env    shellhooks.Env
	Logger *slog.Logger
	Client *http.Client // nil: one that follows no redirect
	Now    func() time.Time
}

// Registry keeps the webhook targets registered on one bus in line with
// the ones it is given.
type Registry struct {
	o     Options
	log   *slog.Logger
	group hooks.Group[Target]
}

// NewRegistry makes an empty registry.
func NewRegistry(o Options) *Registry {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Registry{o: o, log: o.Logger}
}

// Apply registers exactly targets (again only when they changed) and
// returns the subscriber names in use.
func (r *Registry) Apply(targets []Target) ([]string, error) {
	b, _ := json.Marshal(targets)
	sig := string(b) + fmt.Sprint(signatures(targets))
	_, err := r.group.Replace(sig, func() ([]*hooks.Context, []Target, error) {
		var ctxs []*hooks.Context
		var errs []error
		for _, t := range targets {
			c := r.o.Bus.Plugin(t.Subscriber())
			for _, ev := range t.Events {
				if err := c.RegisterHook(ev, r.handler(t)); err != nil {
					errs = append(errs, fmt.Errorf("webhook %s: %w", t.Label(), err))
				}
			}
			ctxs = append(ctxs, c)
		}
		return ctxs, slices.Clone(targets), errors.Join(errs...)
	})
	return r.group.Names(), err
}

// signatures tells changed secrets apart without keeping them in sig.
func signatures(ts []Target) []string {
	var out []string
	for _, t := range ts {
		out = append(out, Sign(t.secret, []byte(t.URL)))
	}
	return out
}

// Registered lists the targets registered here.
func (r *Registry) Registered() []Target { return r.group.Items() }

// Close unregisters every target.
func (r *Registry) Close() { r.group.Close() }

func (r *Registry) handler(t Target) hooks.Handler {
	return func(ctx context.Context, ev hooks.Event) error {
		if t.Matcher != "" && ev.Hook == hooks.PostToolCall {
			var p struct {
				ToolName string `json:"tool_name"`
			}
			_ = json.Unmarshal(ev.Payload, &p)
			if !t.match.Matches(p.ToolName) {
				return nil
			}
		}
		// The attempts before this one and when the next may be made are
		// the log's (LaterAt): kept across a restart of the process.
		now, attempt := r.o.Now(), ev.Attempts+1
		if now.Before(ev.RetryAt) {
			return hooks.Later(fmt.Errorf("%w: attempt %d at %s UTC", hooks.ErrNotYet, attempt, ev.RetryAt.UTC().Format(time.TimeOnly)))
		}
		code, wait, err := r.post(ctx, t, ev, attempt)
		if err == nil {
			return nil
		}
		if code >= 300 && code < 500 && code != 408 && code != 425 && code != 429 {
			r.log.Warn("webhook refused: not retried", "target", t.Label(), "event_id", ev.ID, "error", err)
			return fmt.Errorf("attempt %d: %v: not retried (the receiver refused the request itself)", attempt, err)
		}
		if age := now.Sub(ev.CreatedAt); age >= t.Deadline {
			r.log.Warn("webhook given up", "target", t.Label(), "event_id", ev.ID, "attempts", attempt, "error", err)
			return fmt.Errorf("attempt %d: %v: given up, %s after the event (deadline %s)", attempt, err, age.Round(time.Second), t.Deadline)
		}
		if wait <= 0 {
			wait = min(firstBackoff<<min(attempt-1, 20), maxBackoff)
		}
		next := now.Add(wait)
		if attempt == 1 {
			r.log.Warn("webhook not delivered; retrying", "target", t.Label(), "event_id", ev.ID, "error", err)
		}
		return hooks.LaterAt(fmt.Errorf("attempt %d: %v; next at %s UTC", attempt, err, next.UTC().Format(time.TimeOnly)), attempt, next)
	}
}

// post sends one attempt. It returns the HTTP status (0 when there was
// none), how long the receiver asked to wait (Retry-After), and an error
// unless the receiver took it (2xx).
func (r *Registry) post(ctx context.Context, t Target, ev hooks.Event, attempt int) (int, time.Duration, error) {
	t.Timeout = r.o.Bus.Within(t.Timeout) // a timeout is this attempt's, not the bus's
	return post(ctx, r.o.Client, t, r.o.Env, ev, attempt, r.o.Now())
}

// Try posts ev to t once, as a delivery would (`atrium hooks test`): the
// HTTP status (0 when there was none) and an error unless it was taken.
func Try(ctx context.Context, t Target, env shellhooks.Env, ev hooks.Event) (int, error) {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	code, _, err := post(ctx, client, t, env, ev, 1, time.Now())
	return code, err
}

func post(ctx context.Context, client *http.Client, t Target, env shellhooks.Env, ev hooks.Event, attempt int, now time.Time) (int, time.Duration, error) {
	body, err := Body(ev, env, now)
	if err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "Atrium-Outbound-Webhook")
	h.Set("X-Hermes-Event", ev.Hook)
	h.Set("X-Hermes-Delivery", ev.ID)
	h.Set("X-Atrium-Attempt", strconv.Itoa(attempt))
	if t.secret != "" {
		sig := Sign(t.secret, body)
		h.Set("X-Hermes-Signature-256", sig)
		h.Set("X-Atrium-Signature-256", sig)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return resp.StatusCode, 0, nil
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return resp.StatusCode, 0, fmt.Errorf("HTTP %d: redirects are not followed (to %s); fix the url", resp.StatusCode, resp.Header.Get("Location"))
	}
	return resp.StatusCode, retryAfter(resp.Header.Get("Retry-After"), now), fmt.Errorf("HTTP %d", resp.StatusCode)
}

// retryAfter reads a Retry-After header (seconds or a date), bounded by
// the longest backoff.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return min(time.Duration(n)*time.Second, maxBackoff)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxBackoff)
	}
	return 0
}
