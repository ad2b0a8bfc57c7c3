package app

import (
	"atrium/backend/config"
	"atrium/backend/plugins"
	"atrium/backend/stack"
)

// Settings reads and writes the editable keys of the profile's config.yaml.
type Settings struct {
	path string
}

// NewSettings binds the config file of st's profile.
func NewSettings(st *stack.Stack) *Settings { return &Settings{path: st.Home.ConfigPath()} }

// Get returns the settings as config.yaml has them now (defaults filled).
func (s *Settings) Get() (SettingsDTO, error) {
	cfg, _, err := config.Load(s.path)
	if err != nil {
		return SettingsDTO{}, err
	}
	return SettingsDTO{HookTimeoutSeconds: cfg.HookTimeout().Seconds(), RetentionDays: cfg.RetentionDays(),
		ArchiveIdleDays: cfg.Sessions.ArchiveIdleDays}, nil
}

// Set writes all three settings; an invalid value changes nothing.
func (s *Settings) Set(in SettingsDTO) (SettingsDTO, error) {
	err := plugins.EditConfig(s.path,
		plugins.ConfigEdit{Section: "plugins", Key: "hook_callback_timeout", Value: in.HookTimeoutSeconds},
		plugins.ConfigEdit{Section: "sessions", Key: "retention_days", Value: in.RetentionDays},
		plugins.ConfigEdit{Section: "sessions", Key: "archive_idle_days", Value: in.ArchiveIdleDays})
	if err != nil {
		return SettingsDTO{}, err
	}
	return s.Get()
}
