package gateway

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
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Webhook signature headers: X-Atrium-Timestamp carries Unix seconds and
// X-Atrium-Signature-256 "sha256=" + hex(HMAC-SHA256(secret, timestamp + "." + body)),
// both ways (the messages Atrium receives and the replies it sends).
const (
	HeaderTimestamp = "X-Atrium-Timestamp"
	HeaderSignature = "X-Atrium-Signature-256"
	WebhookPath     = "/messages"
	// MaxSkew is how far a request's timestamp may be from now.
	MaxSkew = 5 * time.Minute
)

// WebhookOptions configure the generic webhook adapter.
type WebhookOptions struct {
	Name      string // the platform name (default "webhook")
	Secret    string // the shared secret, from the environment
	SecretEnv string
	Listen    string       // default 127.0.0.1:8791, path /messages
	Listener  net.Listener // serve on this instead (tests)
	ReplyURL  string       // where replies are POSTed
	Client    *http.Client
	Now       func() time.Time
}

// Webhook is the adapter any platform can be bridged to: a signed JSON POST
// in, a signed JSON POST out with the reply.
//
// In: POST /messages with {"id", "text", "user_id", "user_name", "chat_id",
// "chat_type", "thread_id"}; 202 {"accepted": true}. Out: POST to reply_url
// with {"delivery_id", "platform", "chat_id", "thread_id", "reply_to",
// "text", "timestamp"}; any 2xx is delivered, 4xx (but 408 and 429) is
// refused for good, the rest is retried.
type Webhook struct {
	o    WebhookOptions
	mu   sync.Mutex
	addr string
	in   Inbox
}

// NewWebhook builds the adapter.
func NewWebhook(o WebhookOptions) *Webhook {
	if o.Name == "" {
		o.Name = "webhook"
	}
	if o.Listen == "" {
		o.Listen = "127.0.0.1:8791"
	}
	if o.SecretEnv == "" {
		o.SecretEnv = "ATRIUM_WEBHOOK_SECRET"
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 30 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Webhook{o: o}
}

// Platform implements Adapter.
func (w *Webhook) Platform() string { return w.o.Name }

// Addr is the address it listens on ("" before Run).
func (w *Webhook) Addr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.addr
}

// Sign is the signature header value for body at ts.
func Sign(secret string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "%d.", ts)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a request's timestamp and signature headers against body.
func Verify(secret string, h http.Header, body []byte, now time.Time) error {
	ts, err := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
	if err != nil {
		return errors.New("missing or malformed " + HeaderTimestamp)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > MaxSkew || d < -MaxSkew {
		return errors.New("timestamp too far from now")
	}
	if !hmac.Equal([]byte(h.Get(HeaderSignature)), []byte(Sign(secret, ts, body))) {
		return errors.New("signature does not match")
	}
	return nil
}

// Run implements Adapter.
func (w *Webhook) Run(ctx context.Context, in Inbox, report Reporter) error {
	if w.o.Secret == "" {
		return errMissingSecret(w.o.Name, w.o.SecretEnv)
	}
	if w.o.ReplyURL == "" {
		return fmt.Errorf("%s: gateway.webhook.reply_url is not set: replies need somewhere to go", w.o.Name)
	}
	ln := w.o.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", w.o.Listen); err != nil {
			return fmt.Errorf("%s: cannot listen on %s: %w", w.o.Name, w.o.Listen, err)
		}
	}
	w.mu.Lock()
	w.addr, w.in = ln.Addr().String(), in
	w.mu.Unlock()
	mux := http.NewServeMux()
	mux.Handle(WebhookPath, w)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	report(Connected, fmt.Sprintf("messages on http://%s%s, replies to %s", ln.Addr(), WebhookPath, w.o.ReplyURL), nil)
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		return nil
	case err := <-served:
		return fmt.Errorf("%s: the endpoint stopped: %w", w.o.Name, err)
	}
}

// webhookIn is an incoming message.
type webhookIn struct {
	ID       string `json:"id"`
	Text     string `json:"text"`
	UserID   string `json:"user_id"`
	UserName string `json:"user_name"`
	ChatID   string `json:"chat_id"`
	ChatType string `json:"chat_type"`
	ThreadID string `json:"thread_id"`
}

func (w *Webhook) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(rw, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20+1))
	if err != nil || len(body) > 1<<20 {
		http.Error(rw, "body too large or unreadable", http.StatusRequestEntityTooLarge)
		return
	}
	if err := Verify(w.o.Secret, r.Header, body, w.o.Now()); err != nil {
		http.Error(rw, "unauthorized: "+err.Error(), http.StatusUnauthorized)
		return
	}
	var m webhookIn
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&m); err != nil {
		http.Error(rw, "invalid JSON: "+err.Error(), http.StatusBadRequest)
		return
	}
	var missing []string
	for k, v := range map[string]string{"id": m.ID, "user_id": m.UserID, "chat_id": m.ChatID, "text": m.Text} {
		if strings.TrimSpace(v) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		http.Error(rw, "missing fields: "+strings.Join(missing, ", "), http.StatusBadRequest)
		return
	}
	if m.ChatType == "" {
		m.ChatType = "dm"
	}
	w.mu.Lock()
	in := w.in
	w.mu.Unlock()
	in(Inbound{EventID: m.ID, MessageID: m.ID, Text: m.Text, UserID: m.UserID, UserName: m.UserName, ChatID: m.ChatID,
		ChatType: m.ChatType, ThreadID: m.ThreadID, ReplyTo: m.ID, At: w.o.Now().UTC()})
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(http.StatusAccepted)
	_, _ = rw.Write([]byte(`{"accepted":true}` + "\n"))
}

// WebhookReply is the body of a reply.
type WebhookReply struct {
	DeliveryID string `json:"delivery_id"`
	Platform   string `json:"platform"`
	ChatID     string `json:"chat_id"`
	ThreadID   string `json:"thread_id"`
	ReplyTo    string `json:"reply_to"`
	Text       string `json:"text"`
	Timestamp  int64  `json:"timestamp"`
}

// Send implements Adapter: a signed POST to reply_url.
func (w *Webhook) Send(ctx context.Context, m Message) (string, error) {
	if w.o.ReplyURL == "" {
		return "", Permanent(errors.New("no reply_url"))
	}
	now := w.o.Now()
	id := uuid.Must(uuid.NewV7()).String()
	body, err := json.Marshal(WebhookReply{DeliveryID: id, Platform: w.o.Name, ChatID: m.ChatID, ThreadID: m.ThreadID,
		ReplyTo: m.ReplyTo, Text: m.Text, Timestamp: now.Unix()})
	if err != nil {
		return "", Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.o.ReplyURL, bytes.NewReader(body))
	if err != nil {
		return "", Permanent(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(HeaderSignature, Sign(w.o.Secret, now.Unix(), body))
	resp, err := w.o.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s reply: %w", w.o.Name, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return id, nil
	case c == http.StatusTooManyRequests:
		after := 5 * time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
		return "", RetryAfter(fmt.Errorf("%s reply: HTTP %d", w.o.Name, c), after)
	case c >= 400 && c < 500 && c != http.StatusRequestTimeout:
		return "", Permanent(fmt.Errorf("%s reply: the receiver refused it (HTTP %d)", w.o.Name, c))
	default:
		return "", fmt.Errorf("%s reply: HTTP %d", w.o.Name, c)
	}
}
