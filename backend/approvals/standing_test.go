package approvals_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/approvals"
	"atrium/backend/config"
)

func homeWith(t *testing.T, text string) config.Home {
	t.Helper()
	dir := t.TempDir()
	h := config.Home{Root: dir, Dir: dir, Profile: "default"}
	if text != "" {
		if err := os.WriteFile(h.ConfigPath(), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// The familiar agent's list is read as it is: a list, or a list an older
// version wrote as one string; a key it holds is allowed.
func TestStandingReadsTheFamiliarList(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, text, want string }{
		{"none", "", ""},
		{"list", "command_allowlist:\n  - plugin_rule:deploy\n  - script execution via -e/-c flag\n", "plugin_rule:deploy|script execution via -e/-c flag"},
		{"legacy string", "command_allowlist: \"['plugin_rule:deploy', 'plugin_rule:x']\"\n", "plugin_rule:deploy|plugin_rule:x"},
		{"one string", "command_allowlist: plugin_rule:deploy\n", "plugin_rule:deploy"},
		{"empty", "command_allowlist: []\n", ""},
	} {
		s := approvals.New(homeWith(t, c.text))
		keys, err := s.List()
		if err != nil || strings.Join(keys, "|") != c.want {
			t.Fatalf("%s: %q %v", c.name, keys, err)
		}
		if ok, err := s.Allows("plugin_rule:deploy"); err != nil || ok != strings.Contains(c.want, "plugin_rule:deploy") {
			t.Fatalf("%s: allows %v %v", c.name, ok, err)
		}
	}
}

// A list that is not of strings, or a config that does not load, allows
// nothing and is never written over; the error says what to fix.
func TestStandingThatCannotBeReadAllowsNothingAndIsLeftAlone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, text, says string }{
		{"a mapping", "command_allowlist:\n  deploy: yes\n", "must be a list of strings"},
		{"an item", "command_allowlist:\n  - plugin_rule:deploy\n  - 42\n", "item 2 is not one"},
		{"broken yaml", "command_allowlist: [plugin_rule:deploy\n", "config"},
	} {
		h := homeWith(t, c.text)
		s := approvals.New(h)
		if ok, err := s.Allows("plugin_rule:deploy"); ok || err == nil || !strings.Contains(err.Error(), c.says) {
			t.Fatalf("%s: allows %v, %v", c.name, ok, err)
		}
		if err := s.Allow("plugin_rule:other"); err == nil || !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("%s: allow wrote over it: %v", c.name, err)
		}
		if _, err := s.Revoke("plugin_rule:deploy"); err == nil {
			t.Fatalf("%s: revoke wrote over it", c.name)
		}
		if data, _ := os.ReadFile(h.ConfigPath()); string(data) != c.text {
			t.Fatalf("%s: changed to %q", c.name, data)
		}
	}
}

// Allow and Revoke keep the rest of the file and its comments; a change
// made by hand (or by another process) is seen at once, even within the
// same second; writers in parallel all count.
func TestStandingChangesKeepTheFileAndAllCount(t *testing.T) {
	t.Parallel()
	h := homeWith(t, "# mine\nsessions:\n  retention_days: 30 # a month\ncommand_allowlist:\n  - plugin_rule:mine # by hand\n")
	s := approvals.New(h)
	if ok, _ := s.Allows("plugin_rule:mine"); !ok {
		t.Fatal("the hand-written rule is not allowed")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := approvals.New(h).Allow(fmt.Sprintf("plugin_rule:w%d", i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := s.Allow("plugin_rule:w3"); err != nil { // there already: nothing changes
		t.Fatal(err)
	}
	keys, err := s.List()
	if err != nil || len(keys) != 9 || keys[0] != "plugin_rule:mine" {
		t.Fatalf("after 8 writers: %q %v", keys, err)
	}
	data, _ := os.ReadFile(h.ConfigPath())
	for _, want := range []string{"# mine", "# a month", "retention_days: 30"} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("lost %q:\n%s", want, data)
		}
	}
	if found, err := s.Revoke("plugin_rule:absent"); found || err != nil {
		t.Fatalf("revoke of an absent rule: %v %v", found, err)
	}
	if found, err := s.Revoke("plugin_rule:w3"); !found || err != nil {
		t.Fatalf("revoke: %v %v", found, err)
	}
	// By hand, right after: seen at once.
	if err := os.WriteFile(h.ConfigPath(), []byte("command_allowlist: [plugin_rule:other]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if keys, err := s.List(); err != nil || strings.Join(keys, ",") != "plugin_rule:other" {
		t.Fatalf("after an edit by hand: %q %v", keys, err)
	}
	if _, err := s.Revoke("plugin_rule:other"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(h.ConfigPath()); strings.Contains(string(data), "command_allowlist") {
		t.Fatalf("an emptied list stays:\n%s", data)
	}
}

// A rule that cannot be kept is refused with a reason.
func TestStandingRefusesRulesItCannotKeep(t *testing.T) {
	t.Parallel()
	s := approvals.New(homeWith(t, ""))
	for _, key := range []string{"", "  ", "plugin_rule:" + strings.Repeat("x", approvals.MaxKeyBytes), "plugin_rule:a\nb"} {
		if err := s.Allow(key); err == nil || !apperr.Is(err, apperr.Invalid) {
			t.Fatalf("%q: %v", key, err)
		}
	}
	if keys, err := s.List(); len(keys) != 0 || err != nil {
		t.Fatalf("%q %v", keys, err)
	}
}

// The approvals block is read with the list, as the file is at each ask: a
// change by hand or from another process counts at once (the same second
// too); a config that does not load asks, with the default timeout. Smart
// mode brings its reviewer (auxiliary.approval) and the operator's rules.
func TestPolicyFollowsTheFile(t *testing.T) {
	t.Parallel()
	h := homeWith(t, "")
	s := approvals.New(h)
	for _, c := range []struct {
		text string
		want approvals.Policy
	}{
		{"", approvals.Policy{}},
		{"approvals:\n  mode: off\n", approvals.Policy{ApproveAll: true}},
		{"approvals:\n  mode: OFF\n  timeout: 45\n", approvals.Policy{ApproveAll: true, Timeout: 45 * time.Second}},
		{"approvals:\n  mode: manual\n  timeout: 2.5\n", approvals.Policy{Timeout: 2500 * time.Millisecond}},
		{"approvals:\n  mode: off\n  timeout: -3\n", approvals.Policy{}}, // does not load
		{"approvals: [off]\n", approvals.Policy{}},
		{"approvals:\n  mode: smart\n", approvals.Policy{Smart: true, GuardTimeout: 30 * time.Second}},
		{"approvals:\n  mode: Smart\n  smart_policy: |\n    Never approve /srv.\n  timeout: 20\nauxiliary:\n  approval:\n    model: guard-mini\n    timeout: 4.5\n",
			approvals.Policy{Smart: true, SmartPolicy: "Never approve /srv.", GuardModel: "guard-mini", GuardTimeout: 4500 * time.Millisecond, Timeout: 20 * time.Second,
				Guard: config.AuxiliaryTask{Model: "guard-mini", Timeout: 4.5}}},
		{"approvals:\n  mode: smart\nauxiliary:\n  approval:\n    provider: openrouter\n    model: guard-mini\n",
			approvals.Policy{Smart: true, GuardModel: "guard-mini", GuardTimeout: 30 * time.Second, Guard: config.AuxiliaryTask{Provider: "openrouter", Model: "guard-mini"}}},
		{"approvals:\n  mode: manual\n  smart_policy: unused\nauxiliary:\n  approval:\n    model: guard-mini\n", approvals.Policy{}},
		{"command_allowlist: {a: b}\napprovals:\n  mode: off\n", approvals.Policy{ApproveAll: true}}, // the list alone is broken
	} {
		if err := os.WriteFile(h.ConfigPath(), []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := s.Policy(); got != c.want {
			t.Fatalf("%q: %+v, want %+v", c.text, got, c.want)
		}
	}
}
