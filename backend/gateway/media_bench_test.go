package gateway_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"atrium/backend/db"
	"atrium/backend/gateway"
)

// BenchmarkReplyToOutbox: what a reply costs from the turn's answer to
// the outbox, in a store on disk. text-only is the outbox as it was
// before files (one row, no scan of the reply); split-no-tags is the same
// reply read for MEDIA: tags first (every reply now); split-two-files is
// a reply naming two files (each checked on the disk, three rows in one
// transaction); scan-only is the read for tags alone. The reply is ~4 KB
// of text.
func BenchmarkReplyToOutbox(b *testing.B) {
	ctx := context.Background()
	d, err := db.Open(ctx, filepath.Join(b.TempDir(), "state.db"), db.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	store := gateway.NewStore(d)
	dir := b.TempDir()
	chart, report := writeFile(b, dir, "chart.png", []byte("PNG")), writeFile(b, dir, "report.pdf", []byte("%PDF"))
	policy := gateway.MediaPolicy{Allowed: []string{filepath.Join(dir, "cache")},
		Denied: []string{filepath.Join(dir, ".env"), filepath.Join(dir, "config.yaml"), filepath.Join(dir, "state.db")}}
	text := strings.Repeat("A line of the agent's answer, with a few words in it.\n", 75)
	out := gateway.Outbound{Platform: "telegram", ChatID: "42", ReplyTo: "7", SessionID: "s", Origin: "reply"}
	b.Run("scan-only", func(b *testing.B) { // SplitReply alone, on the reply without tags
		o := out
		o.Text = text
		for b.Loop() {
			_ = gateway.SplitReply(o, policy)
		}
	})
	for _, c := range []struct {
		name  string
		text  string
		split bool
		rows  int
	}{
		{"text-only", text, false, 1},
		{"split-no-tags", text, true, 1},
		{"split-two-files", text + "MEDIA:" + chart + "\nMEDIA:" + report, true, 3},
	} {
		b.Run(c.name, func(b *testing.B) {
			o := out
			o.Text = c.text
			for b.Loop() {
				msgs := []gateway.Outbound{o}
				if c.split {
					msgs = gateway.SplitReply(o, policy)
				}
				if len(msgs) != c.rows {
					b.Fatalf("%d rows, want %d", len(msgs), c.rows)
				}
				if _, err := store.EnqueueAll(ctx, msgs, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
