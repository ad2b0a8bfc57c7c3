package gateway_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"atrium/backend/db"
	"atrium/backend/gateway"
)

// scripted is an adapter whose sends answer as its script says, in order
// (nil: sent), keeping what it sent.
type scripted struct {
	mu     sync.Mutex
	script []error
	sent   []string
}

func (s *scripted) Platform() string { return "telegram" }
func (s *scripted) Run(ctx context.Context, _ gateway.Inbox, _ gateway.Reporter) error {
	<-ctx.Done()
	return nil
}
func (s *scripted) next(what string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	if len(s.script) > 0 {
		err, s.script = s.script[0], s.script[1:]
	}
	if err != nil {
		return "", err
	}
	s.sent = append(s.sent, what)
	return "m" + what, nil
}
func (s *scripted) Send(_ context.Context, m gateway.Message) (string, error) { return s.next(m.Text) }
func (s *scripted) SendFile(_ context.Context, m gateway.Message) (string, error) {
	return s.next(m.File.Name)
}

// SendNow: the rows in order, each once; a file given up is told to the
// chat (the notice sent too); a failure for now stops there, that row and
// those after it left for the gateway.
func TestSendNow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(t.TempDir(), "state.db"), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st := gateway.NewStore(d)
	dir := t.TempDir()
	a, b := writeFile(t, dir, "a.png", []byte("A")), writeFile(t, dir, "b.pdf", []byte("B"))
	out := gateway.Outbound{Platform: "telegram", ChatID: "1", Origin: "send_message", Text: "hi MEDIA:" + a + " MEDIA:" + b}
	ids, err := st.EnqueueAll(ctx, gateway.SplitReply(out, gateway.MediaPolicy{}), 0)
	if err != nil || len(ids) != 3 {
		t.Fatalf("enqueue: %v %v", ids, err)
	}
	ad := &scripted{script: []error{nil, gateway.Permanent(errors.New("a.png: too large")), nil}}
	rows, err := st.SendNow(ctx, ad, ids)
	if err != nil || len(rows) != 3 {
		t.Fatalf("SendNow: %v %v", rows, err)
	}
	if rows[0].State != gateway.StateSent || rows[0].MessageID != "mhi" || rows[1].State != gateway.StateFailed || rows[2].State != gateway.StateSent {
		t.Fatalf("rows %+v", rows)
	}
	if len(ad.sent) != 3 || ad.sent[2] != "⚠️ Could not send a.png: too large" {
		t.Fatalf("sent %q, want the text, b.pdf and the notice", ad.sent)
	}

	ids, _ = st.EnqueueAll(ctx, gateway.SplitReply(gateway.Outbound{Platform: "telegram", ChatID: "1", Text: "again MEDIA:" + b}, gateway.MediaPolicy{}), 0)
	ad = &scripted{script: []error{errors.New("502 Bad Gateway")}}
	rows, err = st.SendNow(ctx, ad, ids)
	if err != nil || rows[0].State != gateway.StatePending || rows[0].Attempts != 1 || rows[1].State != gateway.StatePending || rows[1].Attempts != 0 || len(ad.sent) != 0 {
		t.Fatalf("a failure for now: %+v %v %q", rows, err, ad.sent)
	}
}
