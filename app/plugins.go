package app

import (
	"context"

	"github.com/samber/lo"

	"atrium/backend/plugins"
)

// Plugins lists, toggles, installs and removes plugins. Changes take effect
// when the profile is next opened.
type Plugins struct {
	base
	m *plugins.Manager
}

// NewPlugins binds m.
func NewPlugins(ctx context.Context, m *plugins.Manager) *Plugins {
	return &Plugins{base: base{ctx: ctx}, m: m}
}

// List returns every discovered plugin, by name.
func (p *Plugins) List() ([]PluginDTO, error) {
	all, err := p.m.List()
	if err != nil {
		return nil, err
	}
	return lo.Map(all, toPlugin), nil
}

// Enable turns a plugin on in config.yaml.
func (p *Plugins) Enable(name string) (PluginDTO, error) {
	got, err := p.m.Enable(name)
	if err != nil {
		return PluginDTO{}, err
	}
	return toPlugin(got, 0), nil
}

// Disable turns a plugin off in config.yaml.
func (p *Plugins) Disable(name string) (PluginDTO, error) {
	got, err := p.m.Disable(name)
	if err != nil {
		return PluginDTO{}, err
	}
	return toPlugin(got, 0), nil
}

// Install copies a plugin folder or archive into the profile.
func (p *Plugins) Install(req InstallRequest) (PluginDTO, error) {
	ctx, cancel := p.with(writeTimeout)
	defer cancel()
	got, err := p.m.Install(ctx, req.Source, req.Force)
	if err != nil {
		return PluginDTO{}, err
	}
	return toPlugin(got, 0), nil
}

// Remove deletes a user plugin.
func (p *Plugins) Remove(name string) error { return p.m.Remove(name) }
