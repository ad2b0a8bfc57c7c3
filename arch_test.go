package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowed lists, per package, the atrium packages it may import (the house
// style's dependency direction). Third-party modules are checked separately.
var allowed = map[string][]string{
	"backend/apperr":      {},
	"backend/limits":      {"backend/apperr"},
	"backend/atomicfile":  {},
	"backend/hostlock":    {},
	"backend/db":          {"backend/apperr"},
	"backend/llm":         {"backend/apperr"},
	"backend/hooks":       {"backend/db", "backend/apperr"},
	"backend/config":      {"backend/apperr", "backend/hooks", "backend/limits", "backend/dotenv"},
	"backend/sessions":    {"backend/hooks", "backend/db", "backend/apperr", "backend/llm", "backend/limits"},
	"backend/receipts":    {"backend/sessions", "backend/db", "backend/apperr", "backend/limits"},
	"backend/compaction":  {"backend/sessions", "backend/hooks", "backend/db", "backend/apperr", "backend/llm"},
	"backend/maintenance": {"backend/sessions", "backend/receipts", "backend/hooks", "backend/db", "backend/apperr"},
	// Readers of other agents' history: they read foreign files and hand
	// the store what they found; nothing else.
	"backend/imports": {"backend/sessions", "backend/apperr"},
	// The turn loop reaches plugins only through the hook bus: never proc.
	"backend/turns": {"backend/compaction", "backend/sessions", "backend/hooks", "backend/db", "backend/apperr", "backend/llm", "backend/atomicfile", "backend/tools"},
	"backend/tools": {"backend/atomicfile", "backend/limits"},
	// The gateway and the scheduler run turns; they reach plugins only
	// through the hook bus.
	"backend/gateway": {"backend/turns", "backend/sessions", "backend/hooks", "backend/db", "backend/apperr", "backend/atomicfile", "backend/markup"},
	// Writes a model's Markdown in a platform's or a terminal's markup; knows
	// nothing of Atrium.
	"backend/markup": {},
	// Transcribes audio as config.yaml's stt block says; the gateway is
	// handed it as a function by the stack.
	"backend/stt": {"backend/config", "backend/apperr", "backend/cmdprovider", "backend/apianswer"},
	// Reads an API's refusal; knows nothing of Atrium.
	"backend/apianswer": {},
	// Runs the familiar command providers (stt's, tts's): knows nothing
	// of Atrium.
	"backend/cmdprovider": {},
	// What the command providers' tests wait on.
	"backend/cmdprovider/proctest": {"backend/cmdprovider"},
	// Speaks text as config.yaml's tts block says; the tools are handed
	// it as a function by the stack.
	"backend/tts":     {"backend/config", "backend/cmdprovider", "backend/apianswer"},
	"backend/cron":    {"backend/gateway", "backend/turns", "backend/sessions", "backend/hooks", "backend/db", "backend/apperr"},
	"backend/plugins": {"backend/config", "backend/apperr", "backend/hooks", "backend/limits", "backend/atomicfile", "backend/plugins/proc", "backend/plugins/runner", "backend/shellhooks", "backend/webhooks", "backend/yamledit", "plugins"},
	// Edits a YAML text in place; knows nothing of Atrium.
	"backend/yamledit": {},
	// Reads and edits a .env as python-dotenv reads it; knows nothing of
	// Atrium.
	"backend/dotenv": {"backend/atomicfile"},
	// Shell hooks reach Atrium only through the hook bus.
	"backend/shellhooks": {"backend/hooks", "backend/atomicfile", "backend/limits"},
	"backend/webhooks":   {"backend/hooks", "backend/shellhooks"},
	// The familiar agent's gateway event hooks: processes under the
	// plugin process host, told of the gateway through the hook bus.
	"backend/gatewayhooks":   {"backend/config", "backend/hooks", "backend/limits", "backend/plugins/proc", "backend/plugins/runner"},
	"backend/plugins/runner": {"backend/atomicfile"},
	"backend/plugins/proc":   {"backend/hooks", "backend/apperr"},
	"backend/pluginhost":     {"backend/hooks", "backend/apperr", "backend/hostlock"},
	"app":                    {"backend"},
	"desktop":                {"app", "backend", "build", "frontend"},
	"desktop/floor":          {},
}

// TestImportRules is the depguard of this repo: dependencies point inward,
// nothing under backend/ imports Wails, nothing imports app/, no dot-imports.
func TestImportRules(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "frontend") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		test := strings.HasSuffix(path, "_test.go")
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if imp.Name != nil && imp.Name.Name == "." {
				t.Errorf("%s: dot-import of %s", path, p)
			}
			if strings.Contains(p, "wailsapp/wails") && pkg != "desktop" && pkg != "desktop/floor" {
				t.Errorf("%s: only desktop/ imports Wails (%s)", path, p)
			}
			// Only the composition roots (main and the cli that builds
			// `atrium serve`) may wire app/ in, and app's own tests use it;
			// nothing else imports it.
			if (p == "atrium/app" || strings.HasPrefix(p, "atrium/app/")) && pkg != "." && pkg != "cli" && pkg != "app" && pkg != "desktop" {
				t.Errorf("%s: nothing imports app/ (%s)", path, p)
			}
			if !strings.HasPrefix(p, "atrium/") || test {
				continue
			}
			rules, ok := allowed[pkg]
			if !ok {
				continue
			}
			target := strings.TrimPrefix(p, "atrium/")
			if !within(rules, target) {
				t.Errorf("%s: %s may not import %s (allowed: %v)", path, pkg, target, rules)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func within(list []string, s string) bool {
	for _, x := range list {
		if x == s || strings.HasPrefix(s, x+"/") {
			return true
		}
	}
	return false
}
