package gateway

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// BenchmarkAlbumLooks is the time from an album of four photos to the
// notes the agent reads, each photo looked at by a vision model that
// takes 20 ms (a real one takes seconds): receive-files as the gateway
// receives a message's files now, one-by-one as it did before (the
// baseline, in the same run).
func BenchmarkAlbumLooks(b *testing.B) {
	const look = 20 * time.Millisecond
	s := &Service{o: Options{MediaDir: b.TempDir(), SeeImage: func(ctx context.Context, _, _ string) (string, error) {
		select {
		case <-time.After(look):
			return "a photo", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), stickers: &stickerCache{}}
	album := make([]InFile, 4)
	for i := range album {
		album[i] = InFile{Name: "photo.jpg", MIME: "image/jpeg", Kind: KindImage, Size: 3,
			Fetch: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("jpg")), nil }}
	}
	ctx := context.Background()
	b.Run("receive-files", func(b *testing.B) {
		for b.Loop() {
			_ = s.receiveFiles(ctx, "telegram", album)
		}
	})
	b.Run("one-by-one", func(b *testing.B) {
		for b.Loop() {
			for _, f := range album {
				_ = s.receiveFile(ctx, "telegram", f)
			}
		}
	})
}
