// Package approvals keeps a profile's standing approvals: the rules of the
// tool calls plugins ask about (plugin_rule:<rule_key or tool>) that a person
// answered "always". They live where the familiar agent keeps them, in the
// profile's config.yaml as command_allowlist, so a list brought from there
// is honoured as it is and a person can read and edit it by hand; every
// process of the profile sees a change at its next ask.
package approvals

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/limits"
	"atrium/backend/plugins"
)

// MaxKeyBytes bounds one rule: a plugin chooses its rule_key, and config.yaml
// is no place for a plugin's megabytes.
const MaxKeyBytes = 512

// Standing is the standing approvals of one profile.
type Standing struct {
	path string

	mu     sync.Mutex
	stamp  config.Stamp
	keys   []string
	err    error
	policy Policy
}

// Policy is config.yaml's approvals block as it is now: a person sets it
// in Settings, and every process of the profile follows at its next ask.
type Policy struct {
	// ApproveAll is approvals.mode: off (every call a plugin asks about
	// runs without asking).
	ApproveAll bool
	// Timeout is approvals.timeout: how long a person has to answer (0:
	// the surface's default).
	Timeout time.Duration
	// Smart is approvals.mode: smart: a terminal command Atrium flags is
	// put to a reviewing model before a person, with SmartPolicy (the
	// operator's rules) in its instructions; GuardModel and GuardTimeout
	// are auxiliary.approval's model ("" the main one) and time.
	Smart        bool
	SmartPolicy  string
	GuardModel   string
	GuardTimeout time.Duration
	// Guard is auxiliary.approval whole: the reviewer's own provider or
	// base_url, when it names one (config.AuxiliaryTask.Own).
	Guard config.AuxiliaryTask
}

// New is the standing approvals in the config.yaml of home.
func New(home config.Home) *Standing { return &Standing{path: home.ConfigPath()} }

// Path is the file they are kept in.
func (s *Standing) Path() string { return s.path }

// List is the rules allowed now, in the file's order (never nil). A config
// that does not load, or a command_allowlist that is not a list of strings,
// is an error (and allows nothing).
func (s *Standing) List() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refresh()
	return append([]string{}, s.keys...), s.err
}

// Policy is the approvals block now. A config that does not load asks, as
// approvals.mode: manual, with the surfaces' default timeout.
func (s *Standing) Policy() Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refresh()
	return s.policy
}

// ApprovalPolicy is Policy (turns.Standing).
func (s *Standing) ApprovalPolicy() (approveAll bool, timeout time.Duration) {
	p := s.Policy()
	return p.ApproveAll, p.Timeout
}

// refresh reads the file again when it changed since it was read; s.mu is
// held.
func (s *Standing) refresh() {
	st := config.StatStamp(s.path)
	if s.stamp.Vouches(st) {
		return
	}
	st = st.ReadNow()
	cfg, _, err := config.Load(s.path)
	s.stamp, s.keys, s.err, s.policy = st, nil, nil, Policy{}
	switch {
	case err != nil:
		s.err = err
		return
	case cfg.CommandAllowlist.Err != nil:
		s.err = apperr.Wrap(apperr.Invalid, cfg.CommandAllowlist.Err, "config %s", s.path)
	default:
		s.keys = cfg.CommandAllowlist.Keys
	}
	s.policy = Policy{ApproveAll: cfg.ApprovalsOff(), Timeout: cfg.ApprovalTimeout()}
	if cfg.ApprovalsSmart() {
		s.policy.Smart, s.policy.SmartPolicy = true, strings.TrimSpace(cfg.Approvals.SmartPolicy)
		s.policy.GuardModel, s.policy.GuardTimeout = cfg.ApprovalGuard()
		s.policy.Guard = cfg.Auxiliary.Approval
	}
}

// Allows reports whether key is allowed from now on.
func (s *Standing) Allows(key string) (bool, error) {
	keys, err := s.List()
	if err != nil {
		return false, err
	}
	return slices.Contains(keys, key), nil
}

// Allow adds key to the list (nothing when it is there already), keeping
// the rest of config.yaml, its order and its comments.
func (s *Standing) Allow(key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	return s.update(func(keys []string) ([]string, error) {
		if slices.Contains(keys, key) {
			return nil, errUnchanged
		}
		return append(keys, key), nil
	})
}

// Revoke removes key; it reports whether it was there.
func (s *Standing) Revoke(key string) (bool, error) {
	found := false
	err := s.update(func(keys []string) ([]string, error) {
		if !slices.Contains(keys, key) {
			return nil, errUnchanged
		}
		found = true
		return slices.DeleteFunc(keys, func(k string) bool { return k == key }), nil
	})
	return found, err
}

var errUnchanged = errors.New("unchanged")

// update rewrites command_allowlist under the config file's lock, from the
// list the file holds at that moment (another process may have changed it).
func (s *Standing) update(change func([]string) ([]string, error)) error {
	err := plugins.UpdateConfigPath(s.path, []string{"command_allowlist"}, func(cur any) (any, error) {
		list := config.ReadAllowlist(cur)
		if list.Err != nil {
			return nil, apperr.Wrap(apperr.Invalid, list.Err, "config %s: fix command_allowlist by hand first; nothing was changed", s.path)
		}
		next, err := change(list.Keys)
		if err != nil {
			return nil, err
		}
		if len(next) == 0 {
			return nil, nil // the key goes rather than stay as an empty list
		}
		return next, nil
	})
	s.mu.Lock()
	s.stamp = config.Stamp{} // read again at the next ask
	s.mu.Unlock()
	if errors.Is(err, errUnchanged) {
		return nil
	}
	return err
}

// Check is CheckKey (turns.Standing).
func (s *Standing) Check(key string) error { return CheckKey(key) }

// CheckKey refuses a rule that cannot be kept: empty, longer than
// MaxKeyBytes, or with control characters.
func CheckKey(key string) error {
	switch {
	case strings.TrimSpace(key) == "":
		return apperr.New(apperr.Invalid, "an approval rule cannot be empty")
	case len(key) > MaxKeyBytes:
		return apperr.New(apperr.Invalid, "an approval rule is at most %d bytes, not %d", MaxKeyBytes, len(key))
	case strings.IndexFunc(key, unicode.IsControl) >= 0:
		return apperr.New(apperr.Invalid, "an approval rule cannot hold control characters: %s", limits.Echo(key))
	}
	return nil
}
