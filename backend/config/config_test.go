package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atrium/backend/apperr"
)

func TestResolveHome(t *testing.T) {
	t.Setenv("ATRIUM_HOME", "/tmp/from-env")
	h, err := ResolveHome("", "")
	if err != nil || h.Dir != "/tmp/from-env" || h.Profile != "default" {
		t.Fatalf("%+v %v", h, err)
	}
	h, err = ResolveHome("/tmp/flag", "work")
	if err != nil || h.Dir != "/tmp/flag/profiles/work" || h.StatePath() != "/tmp/flag/profiles/work/state.db" {
		t.Fatalf("%+v %v", h, err)
	}
	t.Setenv("ATRIUM_HOME", "")
	t.Setenv("XDG_DATA_HOME", "/tmp/xdg")
	if h, _ := ResolveHome("", ""); h.Root != "/tmp/xdg/atrium" {
		t.Fatalf("xdg: %+v", h)
	}
	for _, p := range []string{"../x", "a/b", ".hidden", "a b"} {
		if _, err := ResolveHome("/tmp", p); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("profile %q: %v", p, err)
		}
	}
}

func TestLoadDefaultsValuesAndErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, w, err := Load(filepath.Join(dir, "missing.yaml"))
	if err != nil || len(w) != 0 || c.RetentionDays() != 90 || c.HookTimeout() != 30*time.Second || c.ReceiptTTL() != 24*time.Hour {
		t.Fatalf("defaults: %+v %v %v", c, w, err)
	}
	write := func(body string) string {
		p := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c, _, err = Load(write("plugins:\n  hook_callback_timeout: 0\nsessions:\n  retention_days: 7\n  auto_prune: true\nstorage:\n  synchronous: full\n"))
	if err != nil || c.HookTimeout() != 0 || c.RetentionDays() != 7 || !c.Sessions.AutoPrune || c.Storage.Synchronous != "full" {
		t.Fatalf("values: %+v %v", c, err)
	}
	if c.CronApproves() {
		t.Fatal("scheduled runs approve by default")
	}
	if c, _, err := Load(write("approvals:\n  cron_mode: approve\n")); err != nil || !c.CronApproves() {
		t.Fatalf("approvals.cron_mode: %+v %v", c.Approvals, err)
	}
	// The familiar agent's approvals block loads as it is, without a warning.
	if c, w, err := Load(write("approvals:\n  mode: manual\n  timeout: 60\n  cron_mode: deny\ncommand_allowlist: []\n")); err != nil || len(w) != 0 ||
		c.ApprovalsOff() || c.ApprovalTimeout() != time.Minute || c.CronApproves() {
		t.Fatalf("the familiar approvals block: %+v %v %v", c.Approvals, w, err)
	}
	// The familiar agent's keys for its tools.
	if c, w, err := Load(write("toolsets: [hermes-cli]\nplatform_toolsets:\n  telegram: [file]\nterminal:\n  backend: local\n  cwd: ~/work\n" +
		"  timeout: 60\n  env_passthrough: [GITHUB_TOKEN]\nagent:\n  max_turns: 40\nfile_read_max_chars: 5000\ncontext_file_max_chars: 40000\n")); err != nil || len(w) != 0 ||
		fmt.Sprint(c.Toolsets, c.PlatformToolsets, c.Terminal, c.Agent.MaxTurns, c.FileReadMaxChars, c.ContextFileMaxChars) != "[hermes-cli] map[telegram:[file]] {local ~/work 60 [GITHUB_TOKEN]} 40 5000 40000" {
		t.Fatalf("the tools' keys: %+v %v %v", c, w, err)
	}
	// The familiar agent's memory block loads as it is, without a warning.
	if c, w, err := Load(write("memory:\n  memory_enabled: true\n  user_profile_enabled: false\n  memory_char_limit: 3000\n  user_char_limit: 900\n  provider: ''\n")); err != nil ||
		len(w) != 0 || *c.Memory.MemoryEnabled != true || *c.Memory.UserProfileEnabled != false || c.Memory.MemoryCharLimit != 3000 || c.Memory.UserCharLimit != 900 {
		t.Fatalf("the memory block: %+v %v %v", c.Memory, w, err)
	}
	if c, _, err := Load(write("toolsets: terminal, file\nplatform_toolsets:\n  cli: []\n")); err != nil || fmt.Sprint(c.Toolsets) != "[terminal file]" ||
		c.PlatformToolsets["cli"] == nil || len(c.PlatformToolsets["cli"]) != 0 {
		t.Fatalf("toolsets as one string; an empty list: %+v %v", c, err)
	}
	if c, _, err := Load(write("approvals:\n  mode: OFF\n")); err != nil || !c.ApprovalsOff() || c.ApprovalTimeout() != 0 {
		t.Fatalf("approvals.mode: off: %+v %v", c.Approvals, err)
	}
	c, _, _ = Load(write("plugins:\n  hook_callback_timeout: 5000\n"))
	if c.HookTimeout() != 600*time.Second {
		t.Fatalf("cap: %v", c.HookTimeout())
	}
	for body, line := range map[string]string{
		"sessions:\n  retention_days: [x\n":     ":2:",
		"storage:\n  synchronous: sometimes\n":  "synchronous",
		"sessions:\n  retention_days: -1\n":     "retention_days",
		"approvals:\n  cron_mode: ask\n":        "approvals.cron_mode must be deny or approve",
		"approvals:\n  mode: yolo\n":            "approvals.mode must be manual, off or smart",
		"approvals:\n  timeout: -1\n":           "approvals.timeout must be 0 (the default) to 3600 seconds",
		"approvals:\n  timeout: 7200\n":         "approvals.timeout must be 0 (the default) to 3600 seconds",
		"\tbad":                                 ":1:",
		"terminal:\n  timeout: 900\n":           "terminal.timeout must be 1 to 600 seconds",
		"agent:\n  max_turns: -3\n":             "agent.max_turns must be 1 to 10000",
		"file_read_max_chars: -1\n":             "file_read_max_chars must be positive",
		"context_file_max_chars: -1\n":          "context_file_max_chars must be positive",
		"memory:\n  memory_char_limit: -5\n":    "memory.memory_char_limit must be 1 to 1000000",
		"memory:\n  user_char_limit: 9999999\n": "memory.user_char_limit must be 1 to 1000000",
		"toolsets: {a: 1}\n":                    "a list of names",
	} {
		p := write(body)
		_, _, err := Load(p)
		if apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), line) {
			t.Errorf("%q: %v", body, err)
		}
	}
	// Bounds: a config nested past the depth limit or over the size limit
	// is refused before the YAML library reads it.
	for body, msg := range map[string]string{
		"plugins:\n  entries:\n    x: " + strings.Repeat("[", 50_000) + strings.Repeat("]", 50_000) + "\n": "nested deeper than 32 levels",
		"sessions:\n  retention_days: 3\n" + strings.Repeat("# padding\n", 120_000):                        "over the 1 MiB limit for a config file",
	} {
		p := write(body)
		_, _, err := Load(p)
		if apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%.40q: %v", body, err)
		}
	}
	_, w, err = Load(write("sessions:\n  colour: blue\n"))
	if err != nil || len(w) != 1 || !strings.Contains(w[0], "colour") {
		t.Fatalf("unknown key: %v %v", w, err)
	}
}

// A threshold of 0 turns automatic compaction at that point off, as the
// README says; below 0 or above 1 is an error.
func TestCompactionThresholdZeroTurnsItOff(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]string{
		"compaction:\n  threshold: 0\n  soft_threshold: 0\n": "",
		"compaction:\n  threshold: -0.1\n":                   "compaction.threshold must be in [0, 1] (0 turns it off), not -0.1",
		"compaction:\n  soft_threshold: 1.5\n":               "compaction.soft_threshold must be in [0, 1] (0 turns it off), not 1.5",
	} {
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		c, _, err := Load(path)
		switch {
		case want == "" && (err != nil || c.Compaction.Threshold == nil || *c.Compaction.Threshold != 0):
			t.Errorf("%q: %+v %v", body, c.Compaction, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: error %v, want %q", body, err, want)
		}
	}
}

// The clarify tool's time to answer is read as the familiar agent reads
// it: clarify.timeout over agent.clarify_timeout, 0 or less is no limit,
// a value that is no number is the default.
func TestClarifyTimeout(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want time.Duration
		set  bool
	}{
		{"", 0, false},
		{"agent:\n  clarify_timeout: 120\n", 2 * time.Minute, true},
		{"agent:\n  clarify_timeout: 120\nclarify:\n  timeout: \"30\"\n", 30 * time.Second, true},
		{"agent:\n  clarify_timeout: 90.9\n", 90 * time.Second, true},
		{"agent:\n  clarify_timeout: 0\n", 0, true},
		{"clarify:\n  timeout: -5\n", 0, true},
		{"agent:\n  clarify_timeout: soon\n", 0, false},
		{"agent:\n  clarify_timeout: 1000000000000\n", 0, true},
	} {
		cfg, err := loadYAML(t, c.yaml)
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if got, set := cfg.ClarifyTimeout(); got != c.want || set != c.set {
			t.Errorf("%q: %v %v, want %v %v", c.yaml, got, set, c.want, c.set)
		}
	}
}

// display.background_process_notifications is read as the familiar agent
// reads it, YAML's off and on included; another value is refused with
// the four it may be.
func TestProcessNotifications(t *testing.T) {
	for _, c := range []struct {
		yaml, want              string
		failed, passed, running bool // told of a failed end, of a good one, of a watch's match
	}{
		{"", "all", true, true, true},
		{"display:\n  background_process_notifications: all\n", "all", true, true, true},
		{"display:\n  background_process_notifications: result\n", "result", true, true, false},
		{"display:\n  background_process_notifications: ERROR\n", "error", true, false, false},
		{"display:\n  background_process_notifications: off\n", "off", false, false, false},
		{"display:\n  background_process_notifications: false\n", "off", false, false, false},
		{"display:\n  background_process_notifications: \"off\"\n", "off", false, false, false},
		{"display:\n  background_process_notifications: on\n", "all", true, true, true},
		{"display:\n  skin: dark\n", "all", true, true, true},
	} {
		cfg, err := loadYAML(t, c.yaml)
		if err != nil {
			t.Fatalf("%q: %v", c.yaml, err)
		}
		if got := cfg.ProcessNotifications(); got != c.want || cfg.NotifiesOfEnd(true) != c.failed || cfg.NotifiesOfEnd(false) != c.passed ||
			cfg.NotifiesWhileRunning() != c.running {
			t.Errorf("%q: %q %v %v %v, want %q %v %v %v", c.yaml, got, cfg.NotifiesOfEnd(true), cfg.NotifiesOfEnd(false),
				cfg.NotifiesWhileRunning(), c.want, c.failed, c.passed, c.running)
		}
	}
	if _, err := loadYAML(t, "display:\n  background_process_notifications: loud\n"); err == nil || !strings.Contains(err.Error(), "display.background_process_notifications must be all, result, error or off, not loud") {
		t.Fatalf("a bad value: %v", err)
	}
}

// The delegation block is read as the familiar agent writes it; a value
// out of range is refused with its range.
func TestDelegation(t *testing.T) {
	cfg, err := loadYAML(t, "delegation:\n  max_iterations: 20\n  max_concurrent_children: 5\n  child_timeout_seconds: 1800\n  model: small-model\n")
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Delegation
	if tm, ok := d.ChildTimeout(); d.MaxIterations != 20 || d.MaxConcurrentChildren != 5 || d.Model != "small-model" || !ok || tm != 30*time.Minute {
		t.Fatalf("%+v %v %v", d, tm, ok)
	}
	if cfg, err := loadYAML(t, "delegation:\n  child_timeout_seconds: 0\n"); err != nil {
		t.Fatal(err)
	} else if tm, ok := cfg.Delegation.ChildTimeout(); !ok || tm != 0 {
		t.Fatalf("0 (no limit): %v %v", tm, ok)
	}
	if cfg, err := loadYAML(t, ""); err != nil {
		t.Fatal(err)
	} else if _, ok := cfg.Delegation.ChildTimeout(); ok {
		t.Fatal("an unset child_timeout_seconds reads as set")
	}
	for text, want := range map[string]string{
		"delegation:\n  max_concurrent_children: 40\n": "delegation.max_concurrent_children must be 1 to 32 (0: 3), not 40",
		"delegation:\n  max_iterations: -1\n":          "delegation.max_iterations must be 1 to 10000 (0: 50), not -1",
		"delegation:\n  child_timeout_seconds: -5\n":   "delegation.child_timeout_seconds must be 0 (no limit) to 86400, not -5",
	} {
		if _, err := loadYAML(t, text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

// auxiliary.approval is read as the familiar agent writes it: its provider,
// its model and its time (30 s unset); the other auxiliary tasks are named
// as not Atrium's; a time out of range is refused with its range.
func TestAuxiliaryApproval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	text := "approvals:\n  mode: smart\n  smart_policy: Escalate anything under /etc.\nauxiliary:\n  approval:\n    provider: openrouter\n    model: guard-mini\n    timeout: 12\n" +
		"  compression:\n    model: small\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, warnings, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if m, tm := cfg.ApprovalGuard(); m != "guard-mini" || tm != 12*time.Second || !cfg.ApprovalsSmart() || cfg.Approvals.SmartPolicy != "Escalate anything under /etc." {
		t.Fatalf("%+v %v %v", cfg.Auxiliary, m, tm)
	}
	if a := cfg.Auxiliary.Approval; a.Provider != "openrouter" || !a.Own() {
		t.Fatalf("the reviewer's provider: %+v", a)
	}
	if len(warnings) != 1 || strings.Contains(warnings[0], "auxiliary.approval.provider") || !strings.Contains(warnings[0], "auxiliary.compression") {
		t.Fatalf("warnings: %q", warnings)
	}
	if cfg, err := loadYAML(t, ""); err != nil {
		t.Fatal(err)
	} else if m, tm := cfg.ApprovalGuard(); m != "" || tm != DefaultAuxiliaryTimeout || cfg.ApprovalsSmart() {
		t.Fatalf("unset: %q %v", m, tm)
	}
	for text, want := range map[string]string{
		"auxiliary:\n  approval:\n    timeout: -1\n":  "auxiliary.approval.timeout must be 0 (30 seconds) to 600 seconds, not -1",
		"auxiliary:\n  approval:\n    timeout: 601\n": "auxiliary.approval.timeout must be 0 (30 seconds) to 600 seconds, not 601",
	} {
		if _, err := loadYAML(t, text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

// auxiliary.vision is read in the familiar agent's keys (its endpoint, its
// model, its time, temperature and download time, with the familiar
// variables), with the familiar defaults when unset; bad values are refused
// with their range.
func TestAuxiliaryVision(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	text := "auxiliary:\n  vision:\n    provider: openrouter\n    model: google/gemini-flash\n    timeout: 45\n    temperature: 0.3\n    download_timeout: 12\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, warnings, err := Load(path)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("%v %q", err, warnings)
	}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	task, model, timeout, temp, download := cfg.Vision(getenv)
	if !task.Own() || task.Provider != "openrouter" || model != "google/gemini-flash" || timeout != 45*time.Second || temp != 0.3 || download != 12*time.Second {
		t.Fatalf("%+v %q %v %v %v", task, model, timeout, temp, download)
	}
	env["HERMES_VISION_DOWNLOAD_TIMEOUT"], env["AUXILIARY_VISION_MODEL"] = "7", "ignored-when-the-file-names-one"
	if _, model, _, _, download := cfg.Vision(getenv); download != 7*time.Second || model != "google/gemini-flash" {
		t.Fatalf("the variable wins the download time, the file the model: %v %q", download, model)
	}
	unset, err := loadYAML(t, "")
	if err != nil {
		t.Fatal(err)
	}
	task, model, timeout, temp, download = unset.Vision(getenv)
	if task.Own() || model != "ignored-when-the-file-names-one" || timeout != DefaultVisionTimeout || temp != DefaultVisionTemperature || download != 7*time.Second {
		t.Fatalf("unset: %+v %q %v %v %v", task, model, timeout, temp, download)
	}
	for text, want := range map[string]string{
		"auxiliary:\n  vision:\n    timeout: -1\n":           "auxiliary.vision.timeout must be 0 (120 seconds) to 3600 seconds, not -1",
		"auxiliary:\n  vision:\n    download_timeout: 900\n": "auxiliary.vision.download_timeout must be 0 (30 seconds) to 600 seconds, not 900",
		"auxiliary:\n  vision:\n    temperature: 3\n":        "auxiliary.vision.temperature must be 0 to 2, not 3",
		"auxiliary:\n  vision:\n    provider: nosuch\n":      "auxiliary.vision.provider must be auto, main, or one of model.provider's",
		"auxiliary:\n  vision:\n    provider: openrouter\n":  "auxiliary.vision.model must name the model to ask of provider openrouter",
	} {
		if _, err := loadYAML(t, text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

// display.tool_progress is read as the familiar agent reads it, YAML's off
// included; a value it does not know is refused with the ones it knows.
func TestToolProgress(t *testing.T) {
	for text, want := range map[string]string{
		"":                                     ProgressAll,
		"display:\n  tool_progress: off\n":     ProgressOff,
		"display:\n  tool_progress: false\n":   ProgressOff,
		"display:\n  tool_progress: New\n":     ProgressNew,
		"display:\n  tool_progress: verbose\n": ProgressVerbose,
		"display:\n  tool_progress: log\n":     ProgressLog,
	} {
		cfg, err := loadYAML(t, text)
		if err != nil || cfg.ToolProgressMode() != want {
			t.Errorf("%q: %q %v, want %q", text, cfg.ToolProgressMode(), err, want)
		}
	}
	cfg, err := loadYAML(t, "display:\n  tool_progress_grouping: separate\n  tool_preview_length: 80\n")
	if err != nil || !cfg.ToolProgressSeparate() || cfg.Display.ToolPreviewLength != 80 {
		t.Fatalf("%+v %v", cfg.Display, err)
	}
	// A platform's own keys win there; another platform has the profile's.
	cfg, err = loadYAML(t, "display:\n  tool_progress: verbose\n  tool_preview_length: 80\n  platforms:\n    slack:\n      tool_progress: off\n"+
		"      tool_progress_grouping: separate\n      tool_preview_length: 20\n    telegram:\n      tool_preview_length: 0\n")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CleanupProgress("slack") {
		t.Fatal("cleanup_progress unset reads as set")
	}
	if c, err := loadYAML(t, "display:\n  platforms:\n    telegram:\n      cleanup_progress: true\n"); err != nil || !c.CleanupProgress("telegram") || c.CleanupProgress("slack") {
		t.Fatalf("cleanup_progress: %v", err)
	}
	for platform, want := range map[string]string{"slack": "off true 20 true", "telegram": "verbose false 0 false", "cli": "verbose false 80 false"} {
		mode, separate, preview, own := cfg.ToolProgressFor(platform)
		if got := fmt.Sprintf("%s %t %d %t", mode, separate, preview, own); got != want {
			t.Errorf("%s: %s, want %s", platform, got, want)
		}
	}
	for text, want := range map[string]string{
		"display:\n  tool_progress: loud\n":                               "display.tool_progress must be all, new, verbose, log or off, not loud",
		"display:\n  tool_progress_grouping: piles\n":                     `display.tool_progress_grouping must be accumulate or separate, not "piles"`,
		"display:\n  tool_preview_length: -1\n":                           "display.tool_preview_length must be 0 (the default) to 100000, not -1",
		"display:\n  platforms:\n    slack:\n      tool_progress: loud\n": "display.platforms.slack.tool_progress must be all, new, verbose, log or off, not loud",
	} {
		if _, err := loadYAML(t, text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}

// loadYAML loads text as a config.yaml.
func loadYAML(t *testing.T, text string) (Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load(path)
	return cfg, err
}
