package sessions

import "time"

// SetSidecarDelay sets how long after a commit the sidecar task runs, for
// stores opened after the call, and returns the undo.
func SetSidecarDelay(d time.Duration) (restore func()) {
	old := sidecarDelay
	sidecarDelay = d
	return func() { sidecarDelay = old }
}
