package plugins

import (
	"fmt"
	"slices"
	"strings"
)

// LoadOrder is the order plugins load and their callbacks run in: a plugin
// comes after the plugins it names in requires_plugins (topologically),
// ties alphabetical. A dependency that is not among ps is a warning on the
// plugin that names it (it loads anyway; ctx.has_plugin tells at run time),
// as is one whose version is outside the range asked; a cycle is a warning
// and the order falls back to alphabetical for all. ps is usually the
// enabled plugins; warnings are keyed by plugin name.
func LoadOrder(ps []Plugin) ([]string, map[string][]string) {
	warnings := map[string][]string{}
	byName := map[string]Plugin{}
	var names []string
	for _, p := range ps {
		byName[p.Name()] = p
		names = append(names, p.Name())
	}
	slices.Sort(names)
	deps := map[string][]string{}
	for _, n := range names {
		for _, d := range byName[n].Manifest.RequiresPlugins {
			dep, ok := byName[d.ID]
			switch {
			case d.ID == n:
				warnings[n] = append(warnings[n], "requires_plugins names the plugin itself (ignored)")
				continue
			case !ok:
				warnings[n] = append(warnings[n], fmt.Sprintf("requires plugin %s, which is not installed or not enabled; loading anyway (atrium plugins enable %s)", d.ID, d.ID))
				continue
			}
			if d.VersionRange != "" {
				r, err := ParseRange(d.VersionRange)
				switch {
				case err != nil:
					warnings[n] = append(warnings[n], fmt.Sprintf("requires_plugins %s: %v", d.ID, err))
				case !r.Allows(dep.Manifest.Version):
					warnings[n] = append(warnings[n], fmt.Sprintf("requires plugin %s %s, installed is %s; loading anyway", d.ID, d.VersionRange, nonEmpty(dep.Manifest.Version, "unversioned")))
				}
			}
			if !slices.Contains(deps[n], d.ID) {
				deps[n] = append(deps[n], d.ID)
			}
		}
	}
	// Kahn's algorithm, taking every ready plugin in alphabetical order.
	indeg := map[string]int{}
	users := map[string][]string{}
	for _, n := range names {
		indeg[n] = len(deps[n])
		for _, d := range deps[n] {
			users[d] = append(users[d], n)
		}
	}
	var order []string
	done := map[string]bool{}
	for len(order) < len(names) {
		var ready []string
		for _, n := range names {
			if !done[n] && indeg[n] == 0 {
				ready = append(ready, n)
			}
		}
		if len(ready) == 0 {
			var cycle []string
			for _, n := range names {
				if !done[n] {
					cycle = append(cycle, n)
				}
			}
			for _, n := range cycle {
				warnings[n] = append(warnings[n], fmt.Sprintf("requires_plugins forms a cycle (%s); every plugin loads in alphabetical order", strings.Join(cycle, " -> ")))
			}
			return names, warnings
		}
		for _, n := range ready {
			done[n] = true
			order = append(order, n)
			for _, u := range users[n] {
				indeg[u]--
			}
		}
	}
	return order, warnings
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
