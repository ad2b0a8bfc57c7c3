package sessions_test

import (
	"fmt"
	"testing"

	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

// BenchmarkDeleteOneWithSidecars deletes one session at a time for good
// (each with its <id>.jsonl) from a sessions folder that also holds
// `others` files. Finding a session's sidecar files reads the folder's
// names, which grows with the folder; the deletes queue their ids and a
// background task reads the folder once for every id queued meanwhile
// (sidecars.go), so a delete no longer grows with the folder.
func BenchmarkDeleteOneWithSidecars(b *testing.B) {
	for _, others := range []int{0, 10000} {
		b.Run(fmt.Sprintf("others-%d", others), func(b *testing.B) {
			e := sessionstest.New(b)
			svc := e.Sessions
			for i := range others {
				e.WriteSidecars(b, fmt.Sprintf("other-%06d.jsonl", i))
			}
			var ids []string
			next := func() string {
				if len(ids) == 0 {
					b.StopTimer()
					for range 500 {
						s := e.MustCreate(b, sessions.CreateParams{Title: "x"})
						e.WriteSidecars(b, s.ID+".jsonl")
						ids = append(ids, s.ID)
					}
					b.StartTimer()
				}
				id := ids[0]
				ids = ids[1:]
				return id
			}
			for b.Loop() {
				if _, err := svc.Purge(ctx, []string{next()}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
