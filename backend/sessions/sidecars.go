package sessions

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/samber/lo"

	"atrium/backend/db"
)

// Sidecar files (<id>.* and a folder <id> in the profile's sessions/
// folder, an agent's transcripts and notes) go with their session when it
// is deleted for good. Finding them means reading the folder's names, which
// grows with the folder: ~15 µs for a few files, 3-4 ms for 10,000 (one per
// session, as agents keep them). A delete therefore does not read the
// folder itself: it records its ids in sidecar_pending, in its own
// transaction, and a background task of the store removes the files of
// every recorded id with one reading of the folder: shortly after the
// commit (sidecarDelay: a burst of deletes reads it once), when the store
// closes (a command's single delete is done before the command exits) and
// when a store opens for writing (a process that stopped in between, a
// crash or a kill, left its ids recorded: a deleted conversation's files
// do not stay on disk for it).
//
// The records of removed files are cleared by the next write transaction
// that the store makes anyway: the next delete's own, or one of the search
// indexer's (which follow a delete of messages once its burst has ended, and
// appends), or when the store closes; not by a write of the task's own: that
// write would wake the checkpointer again after every delete, and its
// checkpoint would land in whatever the user does next. A process stopped
// before clearing them leaves records whose files are gone; the next one
// reads the folder once for them and finds nothing to remove.
var sidecarDelay = 100 * time.Millisecond

// sidecarBatch bounds the ids one run of the task takes (it runs again
// while more are left).
const sidecarBatch = 2000

// sidecarState is what this process knows of sidecar_pending: whether a
// delete committed since the task last looked (or the store just opened),
// and which recorded ids have had their files removed already.
type sidecarState struct {
	mu   sync.Mutex
	look bool
	done map[string]bool
}

// forget takes ids out of done (their records were cleared, or written
// anew) and, with look, has the task look at the records again.
func (st *sidecarState) forget(ids []string, look bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, id := range ids {
		delete(st.done, id)
	}
	st.look = st.look || look
}

// doneIDs lists the recorded ids whose files were removed.
func (st *sidecarState) doneIDs() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return lo.Keys(st.done)
}

// clearDoneSidecarsTx clears, in tx, the records of the ids whose files
// were removed; they leave done when tx commits. The search indexer calls
// it in every store, with a sessions folder or without.
func (s *Service) clearDoneSidecarsTx(ctx context.Context, tx *db.Tx) error {
	st := s.sidecars
	if st == nil { // a store with no sessions folder
		return nil
	}
	cleared := st.doneIDs()
	if len(cleared) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM sidecar_pending WHERE id IN (SELECT value FROM json_each(?))`, jsonArray(cleared)); err != nil {
		return fmt.Errorf("clear sidecar records: %w", err)
	}
	tx.AfterCommit(func() { st.forget(cleared, false) })
	return nil
}

// recordSidecarsTx records, in tx, that the sidecar files of ids are to go,
// and clears the records of files removed since. An id deleted again
// (imported anew since) is recorded again: the records are cleared before
// the new ones are written, and the ids leave done at commit.
func (s *Service) recordSidecarsTx(ctx context.Context, tx *db.Tx, ids []string) error {
	if err := s.clearDoneSidecarsTx(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT OR IGNORE INTO sidecar_pending (id) SELECT value FROM json_each(?)`, jsonArray(ids)); err != nil {
		return fmt.Errorf("record sidecar files: %w", err)
	}
	tx.AfterCommit(func() { s.sidecars.forget(ids, true) })
	return nil
}

// removePendingSidecars is the task: it removes the sidecar files of the
// recorded ids not removed yet, except those of an id that is a session
// again (imported anew since it was deleted): its files are the new
// session's. A failure, or a batch with more after it, leaves the task
// looking for the next run. At the store's close it also clears the
// records of the removed files.
func (s *Service) removePendingSidecars(ctx context.Context) (bool, error) {
	st := s.sidecars
	st.mu.Lock()
	look := st.look
	st.look = false
	st.mu.Unlock()
	if look {
		more, err := s.removeRecordedSidecars(ctx, st)
		if err != nil || more {
			st.mu.Lock()
			st.look = true
			st.mu.Unlock()
			return more, err
		}
	}
	if !db.FinalRun(ctx) {
		return false, nil
	}
	if len(st.doneIDs()) == 0 {
		return false, nil
	}
	return false, s.db.InTx(ctx, func(tx *db.Tx) error { return s.clearDoneSidecarsTx(ctx, tx) })
}

// removeRecordedSidecars removes the files of up to sidecarBatch recorded
// ids that are not done, and says whether more are left.
func (s *Service) removeRecordedSidecars(ctx context.Context, st *sidecarState) (bool, error) {
	skip := st.doneIDs()
	ids, err := queryColumn[string](ctx, s.db.Query, `SELECT id FROM sidecar_pending
		WHERE id NOT IN (SELECT value FROM json_each(?))`+db.Limit(sidecarBatch), jsonArray(skip))
	if err != nil || len(ids) == 0 {
		if err != nil {
			err = fmt.Errorf("sidecar files: %w", err)
		}
		return false, err
	}
	back, err := queryColumn[string](ctx, s.db.Query, `SELECT id FROM sessions WHERE id IN (SELECT value FROM json_each(?))`, jsonArray(ids))
	if err != nil {
		return false, fmt.Errorf("sidecar files: %w", err)
	}
	if err := s.removeSidecars(lo.Without(ids, back...)); err != nil {
		return false, fmt.Errorf("sidecar files: %w", err)
	}
	st.mu.Lock()
	for _, id := range ids {
		st.done[id] = true
	}
	st.mu.Unlock()
	return len(ids) == sidecarBatch, nil
}
