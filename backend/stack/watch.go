package stack

import (
	"log/slog"
	"sync"

	"atrium/backend/config"
	"atrium/backend/maintenance"
)

// configWatch is config.yaml as the file is now, for what a running process
// takes without the profile being opened again: the model (at each turn),
// the trash, retention and idle-archive settings (at each operation that
// reads them), and the hook timeout and the compaction block (with any of
// those). The file is read again only when its config.Stamp no longer
// vouches for it, as the standing approvals read it. A file that does not load leaves those
// settings as they were last read, said once in the log; a turn is told
// why (current's error).
type configWatch struct {
	path string
	log  *slog.Logger
	// changed are told each config that loaded after the first (under
	// the watch's lock: they only store what they take).
	changed []func(config.Config)

	mu    sync.Mutex
	stamp config.Stamp  // the file when it was read last (zero: read it again)
	cfg   config.Config // the last that loaded
	err   error         // why the file as it is now does not load
}

// current is the config as the file has it now, or the last that loaded
// with the error of the file as it is.
func (w *configWatch) current() (config.Config, error) {
	st := config.StatStamp(w.path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stamp.Vouches(st) {
		return w.cfg, w.err
	}
	w.stamp = st.ReadNow()
	cfg, _, err := config.Load(w.path)
	if err != nil {
		if w.err == nil || w.err.Error() != err.Error() {
			w.log.Warn("config.yaml does not load: the settings read before stay until it does", "error", err)
		}
		w.err = err
		return w.cfg, err
	}
	w.cfg, w.err = cfg, nil
	for _, fn := range w.changed {
		fn(cfg)
	}
	return cfg, nil
}

// onChange has fn told each config that loads from now on.
func (w *configWatch) onChange(fn func(config.Config)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changed = append(w.changed, fn)
}

// settled is current without its error: the last config that loaded.
func (w *configWatch) settled() config.Config {
	cfg, _ := w.current()
	return cfg
}

// trash is sessions.trash_days and trash_automatic now.
func (w *configWatch) trash() (int, bool) {
	cfg := w.settled()
	return cfg.TrashDays(), cfg.TrashAutomatic()
}

// maintenanceConfig is what maintenance reads of cfg.
func maintenanceConfig(cfg config.Config) maintenance.Config {
	return maintenance.Config{AutoPrune: cfg.Sessions.AutoPrune, RetentionDays: cfg.RetentionDays(),
		ArchiveIdleDays: cfg.Sessions.ArchiveIdleDays, EventRetention: cfg.EventRetention()}
}
