package plugins_test

import (
	"slices"
	"strings"
	"testing"

	"atrium/backend/plugins"
)

// A manifest written for the familiar Python plugin API, every field in its
// usual shapes, loads as written.
func TestHermesManifestFields(t *testing.T) {
	t.Parallel()
	m, warnings, err := plugins.ParseManifest([]byte(`name: recall
version: 1.4.0
description: remembers
author: {name: Ada, email: ada@example.invalid, url: https://example.invalid}
kind: exclusive
label: Recall
license: MIT
homepage: https://example.invalid/recall
tags: [memory]
requires_hermes: ">=0.19,<0.22"
requires_env:
  - RECALL_KEY
  - {name: RECALL_URL, description: where, url: https://example.invalid/docs, secret: false}
optional_env: [{name: RECALL_DEBUG}]
requires_plugins: [base, {id: helper, version_range: "^2.0"}]
provides_tools: [recall_search]
provides_hooks: [pre_llm_call, on_memory_write]
platforms: [linux]
external_dependencies: [{name: sqlite, version: ">=3.40"}]
pip_dependencies: [requests]
python_dependencies: ["httpx>=0.27"]
manifest_version: 3
api_version: 2
config_schema:
  depth: {type: integer, default: 3}
  ratio: {type: number, default: 1}
  tags: {type: array, default: []}
  opts: {type: object, default: {}}
  flag: {type: boolean}
capabilities: [memory.write]
`), "recall/plugin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if m.Runtime != "" || m.Author != "Ada, ada@example.invalid, https://example.invalid" || m.Kind != plugins.KindExclusive ||
		len(m.RequiresEnv) != 2 || m.RequiresEnv[1].Name != "RECALL_URL" || m.RequiresEnv[1].URL == "" || len(m.OptionalEnv) != 1 ||
		len(m.RequiresPlugins) != 2 || m.RequiresPlugins[1] != (plugins.Dependency{ID: "helper", VersionRange: "^2.0"}) ||
		m.ManifestVersion != 3 || m.APIVersion == nil || *m.APIVersion != 2 || m.ExternalDeps[0] != "sqlite >=3.40" ||
		m.ConfigSchema["depth"].Type != plugins.TypeInt || m.ConfigSchema["opts"].Type != plugins.TypeDict || m.Reserved["capabilities"] == nil {
		t.Fatalf("manifest %+v", m)
	}
	if got := strings.Join(m.DeclaredHooks(), ","); got != "pre_llm_call" {
		t.Errorf("declared hooks %q, want provides_hooks' known ones", got)
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{"manifest_version 3 is newer", `unknown hook "on_memory_write"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing warning %q in %q", want, warnings)
		}
	}
	if err := m.ResolveRuntime(true); err != nil || m.Runtime != plugins.RuntimePython {
		t.Fatalf("a Python package is a Python plugin: %v %q", err, m.Runtime)
	}
	if err := m.CheckAtrium("v0.9.0"); err != nil {
		t.Fatalf("requires_hermes >=0.19,<0.22 against Atrium's level: %v", err)
	}
	m.RequiresHermes = ">=0.30"
	if err := m.CheckAtrium("v0.9.0"); err == nil || !strings.Contains(err.Error(), "requires_hermes >=0.30") {
		t.Fatalf("an API level Atrium does not reach: %v", err)
	}
}

func TestSemverRanges(t *testing.T) {
	t.Parallel()
	for _, sc := range []struct {
		rng, version string
		ok           bool
	}{
		{"^1.2", "1.9.0", true},
		{"^1.2", "2.0.0", false},
		{"~1.4", "1.4.9", true},
		{"~1.4", "1.5.0", false},
		{"~=1.4", "1.9.2", true},
		{"~=1.4", "2.0.0", false},
		{"~=1.4.2", "1.4.9", true},
		{"~=1.4.2", "1.5.0", false},
		{"==1.2.3", "1.2.3", true},
		{"1.x", "1.7.0", true},
		{">=1 <2 || >=3", "3.1.0", true},
		{">=1.0.0-rc.1", "1.0.0-rc.2", true},
		{">=1.0.0", "1.0.0-rc.2", false}, // a pre-release only meets a range that names one
		{">=0.3.0 <2", "v0.4.1-3-gabc123", true},
	} {
		r, err := plugins.ParseRange(sc.rng)
		if err != nil {
			t.Fatalf("%q: %v", sc.rng, err)
		}
		if got := r.Allows(sc.version); got != sc.ok {
			t.Errorf("%q allows %q = %v, want %v", sc.rng, sc.version, got, sc.ok)
		}
	}
}

// requires_plugins sets the load order: dependencies first, ties
// alphabetical; a missing dependency and a cycle are warnings.
func TestLoadOrder(t *testing.T) {
	t.Parallel()
	p := func(name string, deps ...string) plugins.Plugin {
		var d []plugins.Dependency
		for _, x := range deps {
			d = append(d, plugins.Dependency{ID: x})
		}
		return plugins.Plugin{Manifest: plugins.Manifest{Name: name, Version: "1.0.0", RequiresPlugins: d}}
	}
	order, warnings := plugins.LoadOrder([]plugins.Plugin{p("zeta"), p("alpha", "zeta"), p("mid", "alpha", "ghost"), p("beta")})
	if !slices.Equal(order, []string{"beta", "zeta", "alpha", "mid"}) {
		t.Fatalf("order %v", order)
	}
	if len(warnings["mid"]) != 1 || !strings.Contains(warnings["mid"][0], "requires plugin ghost") {
		t.Fatalf("warnings %v", warnings)
	}
	order, warnings = plugins.LoadOrder([]plugins.Plugin{p("b", "a"), p("a", "b"), p("c")})
	if !slices.Equal(order, []string{"a", "b", "c"}) || len(warnings["a"]) != 1 || !strings.Contains(warnings["a"][0], "cycle") {
		t.Fatalf("cycle: %v %v", order, warnings)
	}
}

// A folder of plugin folders is a category; dunder folders are skipped.
func TestCategoryFoldersAndPluginYml(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	user := e.home.PluginsDir()
	MustWrite(t, user, "memory/recall", "name: recall\n", "__init__.py", "def register(ctx): pass\n")
	MustWrite(t, user, "memory/__pycache__", "")
	MustWrite(t, user, "__pycache__", "")
	dir := MustWrite(t, user, "plain", "", "__init__.py", "def register(ctx): pass\n")
	if err := writeFile(dir+"/plugin.yml", "name: plain\n"); err != nil {
		t.Fatal(err)
	}
	e.cfg.Plugins.Enabled = []string{"memory/recall", "plain"}
	got := e.discoverByID()
	if p, ok := got["memory/recall"]; !ok || p.State != plugins.StateStopped || p.Manifest.Runtime != plugins.RuntimePython {
		t.Fatalf("category plugin: %+v (have %v)", p, keys(got))
	}
	if p, ok := got["plain"]; !ok || p.State != plugins.StateStopped {
		t.Fatalf("plugin.yml: %+v", p)
	}
	if _, ok := got["__pycache__"]; ok {
		t.Fatal("a dunder folder was read as a plugin")
	}
}
