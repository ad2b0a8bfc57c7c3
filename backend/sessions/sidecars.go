package sessions

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/samber/lo"
)

// Sidecar files (<id>.* and a folder <id> in the profile's sessions/
// folder, an agent's transcripts and notes) go with their session when it
// is deleted for good. Finding them means reading the folder's names, which
// grows with the folder: ~15 µs for a few files, 3-4 ms for 10,000 (one per
// session, as agents keep them). A delete therefore does not read the
// folder itself: after commit it queues its ids, and a background task of
// the store removes the files of every queued id with one reading of the
// folder, shortly after (sidecarDelay: a burst of deletes reads it once)
// and when the store closes (a command's single delete is done before the
// command exits). A process that crashes in between leaves those files
// behind, as a crash right after the commit always could.
const sidecarDelay = 100 * time.Millisecond

// sidecarQueue holds the ids whose sidecar files are still to be removed.
type sidecarQueue struct {
	mu  sync.Mutex
	ids []string
}

func (q *sidecarQueue) add(ids []string) {
	q.mu.Lock()
	q.ids = append(q.ids, ids...)
	q.mu.Unlock()
}

func (q *sidecarQueue) take() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	ids := q.ids
	q.ids = nil
	return ids
}

// removeQueuedSidecars removes the sidecar files of the queued ids, except
// those of an id that is a session again (imported anew since it was
// deleted): its files are the new session's.
func (s *Service) removeQueuedSidecars(ctx context.Context, q *sidecarQueue) error {
	ids := q.take()
	if len(ids) == 0 {
		return nil
	}
	back, err := queryColumn[string](ctx, s.db.Query, `SELECT id FROM sessions WHERE id IN (SELECT value FROM json_each(?))`, jsonArray(ids))
	if err != nil {
		q.add(ids) // next time
		return fmt.Errorf("sidecar files: %w", err)
	}
	s.removeSidecars(s.sessionsDir, lo.Without(ids, back...))
	return nil
}
