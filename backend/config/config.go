// Package config resolves Atrium's data home and reads its config.yaml.
package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goccy/go-yaml"

	"atrium/backend/apperr"
	"atrium/backend/hooks"
	"atrium/backend/limits"
)

// Home is the data folder of one profile.
type Home struct {
	Root    string // ATRIUM_HOME
	Profile string // "default" for the root home
	Dir     string // Root, or Root/profiles/<Profile>
}

// ResolveHome picks the data home: flag, then $ATRIUM_HOME, then
// $XDG_DATA_HOME/atrium, then ~/.local/share/atrium; and the profile's folder
// inside it.
func ResolveHome(flagHome, profile string) (Home, error) {
	root := flagHome
	if root == "" {
		root = os.Getenv("ATRIUM_HOME")
	}
	if root == "" {
		if x := os.Getenv("XDG_DATA_HOME"); x != "" {
			root = filepath.Join(x, "atrium")
		} else {
			h, err := os.UserHomeDir()
			if err != nil {
				return Home{}, apperr.Wrap(apperr.Invalid, err, "cannot find a home folder: set ATRIUM_HOME or pass --home")
			}
			root = filepath.Join(h, ".local", "share", "atrium")
		}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return Home{}, apperr.Wrap(apperr.Invalid, err, "invalid home %q", root)
	}
	if profile == "" {
		profile = StartupProfile(abs)
	}
	if err := validateProfile(profile); err != nil {
		return Home{}, err
	}
	h := Home{Root: abs, Profile: profile, Dir: abs}
	if profile != "default" {
		h.Dir = filepath.Join(abs, "profiles", profile)
	}
	return h, nil
}

func validateProfile(p string) error {
	for _, r := range p {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return apperr.New(apperr.Invalid, "invalid profile name %q: use letters, digits, '-', '_' or '.'", p)
		}
	}
	if p == "" || strings.Contains(p, "..") || strings.HasPrefix(p, ".") || len(p) > 64 {
		return apperr.New(apperr.Invalid, "invalid profile name %q", p)
	}
	return nil
}

// ForProfile is the home of another profile under the same root.
func (h Home) ForProfile(profile string) (Home, error) { return ResolveHome(h.Root, profile) }

// ConfigPath is the profile's config.yaml.
func (h Home) ConfigPath() string { return filepath.Join(h.Dir, "config.yaml") }

// StatePath is the profile's SQLite store.
func (h Home) StatePath() string { return filepath.Join(h.Dir, "state.db") }

// SessionsDir holds per-session sidecar files (<id>.jsonl, ...).
func (h Home) SessionsDir() string { return filepath.Join(h.Dir, "sessions") }

// PluginsDir holds user plugins.
func (h Home) PluginsDir() string { return filepath.Join(h.Dir, "plugins") }

// MemoriesDir is the folder of the curated memory (MEMORY.md, USER.md),
// where the familiar agent keeps it in its home.
func (h Home) MemoriesDir() string { return filepath.Join(h.Dir, "memories") }

// SkillsDir is the profile's skills: a folder each, with its SKILL.md, as
// the familiar agent keeps them in ~/.hermes/skills.
func (h Home) SkillsDir() string { return filepath.Join(h.Dir, "skills") }

// EnvPath is the profile's .env: keys and tokens, read into the
// environment of every Atrium process of the profile when it starts.
func (h Home) EnvPath() string { return filepath.Join(h.Dir, ".env") }

// MediaDir is where the gateway saves the files people send it.
func (h Home) MediaDir() string { return filepath.Join(h.Dir, "cache", "gateway") }

// StickerCachePath is where the descriptions of the stickers people sent
// are kept, as the familiar agent keeps them (sticker_cache.json).
func (h Home) StickerCachePath() string { return filepath.Join(h.Dir, "sticker_cache.json") }

// Protected are the profile's files and folders the agent's replies may
// never send to a chat as attachments: its configuration, secrets, store
// (and the store's journals), its sessions' sidecar files, its locks.
func (h Home) Protected() []string {
	st := h.StatePath()
	return []string{h.ConfigPath(), h.EnvPath(), filepath.Join(h.Dir, "auth.json"), st, st + "-wal", st + "-shm", st + "-journal",
		h.SessionsDir(), filepath.Join(h.Dir, "run")}
}

// Ensure creates the profile's folders if they are missing, private to
// their owner (0700: transcripts and sidecar files are nobody else's). A
// home that exists but cannot be written (a read-only file system) is left
// as it is: it can still be read.
func (h Home) Ensure() error {
	if h.Root != h.Dir {
		if err := mkdirPrivate(h.Root); err != nil {
			return err
		}
	}
	if err := mkdirPrivate(h.Dir); err != nil {
		return err
	}
	for _, d := range []string{h.SessionsDir(), h.PluginsDir()} {
		if err := mkdirPrivate(d); err != nil && !Unwritable(err) {
			return err
		}
	}
	return nil
}

// mkdirPrivate creates dir (and its parents) 0700, and makes an existing
// folder that others could read private, best effort.
func mkdirPrivate(dir string) error {
	if info, err := os.Stat(dir); err == nil && info.IsDir() {
		if info.Mode().Perm()&0o077 != 0 {
			_ = os.Chmod(dir, info.Mode().Perm()&0o700)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}

// Unwritable reports whether err says a file cannot be written because its
// file system is read-only or full, or its folder is not writable by this
// user: the home can still be read.
func Unwritable(err error) bool {
	for _, e := range []error{syscall.EROFS, syscall.EACCES, syscall.EPERM, syscall.ENOSPC, syscall.EDQUOT} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Config is config.yaml. Zero values mean "use the default".
type Config struct {
	Storage     Storage     `yaml:"storage"`
	Sessions    Sessions    `yaml:"sessions"`
	Plugins     Plugins     `yaml:"plugins"`
	Hooks       Hooks       `yaml:"hooks"`
	Receipts    Receipts    `yaml:"receipts"`
	Maintenance Maintenance `yaml:"maintenance"`
	Compaction  Compaction  `yaml:"compaction"`
	Model       Model       `yaml:"model"`
	Memory      Memory      `yaml:"memory"`
	Skills      Skills      `yaml:"skills"`
	Gateway     Gateway     `yaml:"gateway"`
	Approvals   Approvals   `yaml:"approvals"`
	// CommandAllowlist is the familiar agent's standing approvals: the
	// rules (plugin_rule:<key>) a person answered "always", allowed from
	// now on without asking.
	CommandAllowlist Allowlist `yaml:"command_allowlist"`
	Context          Context   `yaml:"context"`
	// Toolsets and PlatformToolsets are the familiar agent's toolsets and
	// platform_toolsets: which of the machine's tools (the terminal, the
	// file tools) a turn offers, on every platform and on one (default:
	// all of them everywhere).
	Toolsets         NameList            `yaml:"toolsets"`
	PlatformToolsets map[string]NameList `yaml:"platform_toolsets"`
	Terminal         Terminal            `yaml:"terminal"`
	Agent            Agent               `yaml:"agent"`
	Clarify          Clarify             `yaml:"clarify"`
	Web              Web                 `yaml:"web"`
	Security         Security            `yaml:"security"`
	Display          Display             `yaml:"display"`
	Delegation       Delegation          `yaml:"delegation"`
	Auxiliary        Auxiliary           `yaml:"auxiliary"`
	// STT is the familiar agent's stt block: how voice messages people
	// send on the chat platforms are transcribed (backend/stt).
	STT STT `yaml:"stt"`
	// TTS is the familiar agent's tts block: how the text_to_speech tool
	// speaks (backend/tts).
	TTS TTS `yaml:"tts"`
	// FallbackProviders and FallbackModel are the familiar agent's chain of
	// models a turn turns to when its own fails (FallbackChain).
	FallbackProviders []Fallback `yaml:"fallback_providers"`
	FallbackModel     *Fallback  `yaml:"fallback_model"`
	// Platforms is the familiar agent's platforms block, its enabled
	// switches (GatewayWithFamiliarEnv).
	Platforms map[string]Platform `yaml:"platforms"`
	// GroupSessionsPerUser gives each person their own conversation with
	// the agent in a shared chat that is not a thread (default true, as
	// the familiar agent's); ThreadSessionsPerUser in a thread (default
	// false: a thread reads as one conversation).
	GroupSessionsPerUser *bool `yaml:"group_sessions_per_user"`
	// UnauthorizedDMBehavior is the familiar unauthorized_dm_behavior: what
	// a person not let in who writes to a chat platform's bot in a DM is
	// answered (pair, ignore; Atrium's refuse), where the platform's block
	// says nothing (Access.UnauthorizedDM).
	UnauthorizedDMBehavior string `yaml:"unauthorized_dm_behavior"`
	ThreadSessionsPerUser  *bool  `yaml:"thread_sessions_per_user"`
	// DiscordSection is the familiar agent's discord: section: how its
	// Discord bot behaves in a server (Config.discordResolved).
	DiscordSection DiscordBehaviour `yaml:"discord"`
	// FileReadMaxChars is file_read_max_chars: the longest read_file
	// answers (default 100,000 characters).
	FileReadMaxChars int `yaml:"file_read_max_chars"`
	// ContextFileMaxChars is context_file_max_chars: how many characters
	// a project's context file (AGENTS.md, CLAUDE.md, ...) and SOUL.md
	// may take of the system prompt (0: 6% of the model's context window,
	// at least 20,000).
	ContextFileMaxChars int `yaml:"context_file_max_chars"`
	// HooksAutoAccept approves every shell hook of hooks: without asking
	// (true, or "true"/"yes"/"on"/"1"), as the familiar agent's
	// hooks_auto_accept.
	HooksAutoAccept any `yaml:"hooks_auto_accept"`
}

// AcceptsHooks reports hooks_auto_accept.
func (c Config) AcceptsHooks() bool {
	switch v := c.HooksAutoAccept.(type) {
	case bool:
		return v
	case string:
		return Truthy(v)
	}
	return false
}

// SessionsPerUser is group_sessions_per_user (default true) and
// thread_sessions_per_user (default false).
func (c Config) SessionsPerUser() (group, thread bool) {
	group = c.GroupSessionsPerUser == nil || *c.GroupSessionsPerUser
	thread = c.ThreadSessionsPerUser != nil && *c.ThreadSessionsPerUser
	return group, thread
}

// Truthy reads a switch written as text: 1, true, yes or on.
func Truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// NameList is a list of names, written as a YAML list or as one string of
// names between commas (as the familiar agent's --toolsets takes them).
// An empty list is an empty list, not the default.
type NameList []string

// UnmarshalYAML reads a list of strings, or a string of names between
// commas.
func (l *NameList) UnmarshalYAML(unmarshal func(any) error) error {
	var one string
	if unmarshal(&one) == nil {
		out := NameList{}
		for _, n := range strings.Split(one, ",") {
			if n = strings.TrimSpace(n); n != "" {
				out = append(out, n)
			}
		}
		*l = out
		return nil
	}
	var list []string
	if err := unmarshal(&list); err != nil {
		return errors.New("a list of names (or one string of names between commas) was expected")
	}
	*l = append(NameList{}, list...)
	return nil
}

// Agent settings, in the familiar agent's keys.
type Agent struct {
	// MaxTurns bounds the rounds of tool calls in one turn (default 90);
	// a turn that reaches it answers with what it has.
	MaxTurns int `yaml:"max_turns"`
	// ClarifyTimeout is agent.clarify_timeout: the seconds a person has to
	// answer the clarify tool's question (default 3600; 0 or less: no
	// limit). A number, or its text.
	ClarifyTimeout any `yaml:"clarify_timeout"`
	// MaxRetries is agent.api_max_retries: how many more times a model
	// call that failed for a reason that may pass is tried (default 3;
	// APIMaxRetries).
	MaxRetries *int `yaml:"api_max_retries"`
}

// Delegation is the familiar agent's delegation block: delegate_task's
// subagents.
type Delegation struct {
	// MaxIterations is a subagent's rounds of tool calls when the call
	// names none (default 50).
	MaxIterations int `yaml:"max_iterations"`
	// MaxConcurrentChildren is the most tasks one call hands over, all
	// run at once (default 3).
	MaxConcurrentChildren int `yaml:"max_concurrent_children"`
	// ChildTimeoutSeconds is a subagent's time (default 600; 0: no limit).
	ChildTimeoutSeconds *float64 `yaml:"child_timeout_seconds"`
	// Model is the model subagents ask, of the same provider ("": the
	// parent's).
	Model string `yaml:"model"`
}

const maxDelegateChildren = 32

// ChildTimeout is delegation.child_timeout_seconds (0: no limit); false
// when it is not set (the default, 600 s, is the turn loop's).
func (d Delegation) ChildTimeout() (time.Duration, bool) {
	if d.ChildTimeoutSeconds == nil {
		return 0, false
	}
	return time.Duration(*d.ChildTimeoutSeconds * float64(time.Second)), true
}

// Web is the familiar agent's web block: which provider web_search and
// web_extract ask.
type Web struct {
	// Backend is firecrawl or tavily ("": the one whose key is set,
	// Firecrawl first); the familiar agent's parallel and exa are not
	// Atrium's.
	Backend string `yaml:"backend"`
}

// Security is the familiar agent's security block, in what Atrium reads
// of it.
type Security struct {
	// AllowPrivateURLs lets web_extract name a private address (true, or
	// "true"/"yes"/"on"/"1"); a cloud's metadata service stays refused.
	AllowPrivateURLs any `yaml:"allow_private_urls"`
}

// PrivateURLs reports security.allow_private_urls.
func (c Config) PrivateURLs() bool {
	switch v := c.Security.AllowPrivateURLs.(type) {
	case bool:
		return v
	case string:
		return Truthy(v)
	}
	return false
}

// Display is the familiar agent's display block; Atrium reads its
// background_process_notifications.
type Display struct {
	// BackgroundProcessNotifications is which ends of background
	// processes started with notify_on_complete start a turn to tell the
	// conversation: all (the default) or result, every one; error, those
	// that failed; off, none. YAML's off and false are off, on and true
	// all.
	BackgroundProcessNotifications any `yaml:"background_process_notifications"`
	// ToolProgress is how a chat platform is shown a turn's tool calls as
	// they start: all (the default: a line for each), new (a line when the
	// tool changes), verbose (each call's arguments), log (no chat line:
	// each call is written to logs/tool_calls.log) or off. YAML's off and
	// false are off.
	ToolProgress any `yaml:"tool_progress"`
	// ToolPreviewLength bounds the arguments verbose shows (0: 200
	// characters); all and new show 40 characters of the main one.
	ToolPreviewLength int `yaml:"tool_preview_length"`
	// ToolProgressGrouping is accumulate (the default: one message, edited
	// as tools run) or separate (a message for each line).
	ToolProgressGrouping string `yaml:"tool_progress_grouping"`
	// ToolProgressCommand lets /verbose on a chat platform cycle
	// tool_progress (off, new, all, verbose), saved here.
	ToolProgressCommand bool `yaml:"tool_progress_command"`
	// Platforms are the same keys for one platform (telegram, slack,
	// cli...), over the ones above, as the familiar agent's
	// display.platforms.<platform>.
	Platforms map[string]DisplayPlatform `yaml:"platforms"`
}

// DisplayPlatform is display.platforms.<platform>: what is set there
// wins over display's own key.
type DisplayPlatform struct {
	ToolProgress         any    `yaml:"tool_progress"`
	ToolProgressGrouping string `yaml:"tool_progress_grouping"`
	ToolPreviewLength    *int   `yaml:"tool_preview_length"`
	// CleanupProgress deletes a turn's progress messages once its reply is
	// delivered (a turn that failed or was stopped keeps them).
	CleanupProgress bool `yaml:"cleanup_progress"`
}

// CleanupProgress is display.platforms.<platform>.cleanup_progress.
func (c Config) CleanupProgress(platform string) bool {
	return c.Display.Platforms[platform].CleanupProgress
}

// ToolProgressFor is display.tool_progress, tool_progress_grouping
// (separate) and tool_preview_length for platform: its own
// display.platforms entry over the profile's; own says whether its
// tool_progress is its own.
func (c Config) ToolProgressFor(platform string) (mode string, separate bool, preview int, own bool) {
	mode, separate, preview = c.ToolProgressMode(), c.ToolProgressSeparate(), c.Display.ToolPreviewLength
	p, ok := c.Display.Platforms[platform]
	if !ok {
		return mode, separate, preview, false
	}
	if p.ToolProgress != nil {
		mode, own = progressMode(p.ToolProgress), true
	}
	if g := strings.TrimSpace(p.ToolProgressGrouping); g != "" {
		separate = strings.EqualFold(g, "separate")
	}
	if p.ToolPreviewLength != nil {
		preview = *p.ToolPreviewLength
	}
	return mode, separate, preview, own
}

// The values of display.tool_progress.
const (
	ProgressAll     = "all"
	ProgressNew     = "new"
	ProgressVerbose = "verbose"
	ProgressLog     = "log"
	ProgressOff     = "off"
)

// ToolProgressMode is display.tool_progress as the familiar agent reads it
// ("" when it is no value of it).
func (c Config) ToolProgressMode() string { return progressMode(c.Display.ToolProgress) }

// progressMode reads a tool_progress value ("" when it is none).
func progressMode(v any) string {
	return displayMode(v, ProgressAll, ProgressNew, ProgressVerbose, ProgressLog, ProgressOff)
}

// checkToolProgress checks the tool progress keys of display at prefix
// (display, or display.platforms.<platform>).
func checkToolProgress(prefix string, mode any, grouping string, preview int) error {
	if progressMode(mode) == "" {
		return fmt.Errorf("%s.tool_progress must be all, new, verbose, log or off, not %v", prefix, mode)
	}
	switch strings.ToLower(strings.TrimSpace(grouping)) {
	case "", "accumulate", "separate":
	default:
		return fmt.Errorf("%s.tool_progress_grouping must be accumulate or separate, not %q", prefix, grouping)
	}
	if preview < 0 || preview > 100000 {
		return fmt.Errorf("%s.tool_preview_length must be 0 (the default) to 100000, not %d", prefix, preview)
	}
	return nil
}

// ToolProgressSeparate reports display.tool_progress_grouping: separate.
func (c Config) ToolProgressSeparate() bool {
	return strings.EqualFold(strings.TrimSpace(c.Display.ToolProgressGrouping), "separate")
}

// The values of display.background_process_notifications.
const (
	NotifyAll    = "all"
	NotifyResult = "result"
	NotifyError  = "error"
	NotifyOff    = "off"
)

// ProcessNotifications is display.background_process_notifications, read
// as the familiar agent reads it ("" when it is no value of it).
func (c Config) ProcessNotifications() string {
	return displayMode(c.Display.BackgroundProcessNotifications, NotifyAll, NotifyResult, NotifyError, NotifyOff)
}

// displayMode reads a display switch as the familiar agent does: unset,
// empty, true (on, yes, 1) is known[0]; false (no, 0) is off; else one of
// known, in any case; "" when it is none of them.
func displayMode(v any, known ...string) string {
	switch v := v.(type) {
	case nil:
		return known[0]
	case bool:
		if v {
			return known[0]
		}
		return "off"
	case string:
		switch m := strings.ToLower(strings.TrimSpace(v)); m {
		case "", "true", "yes", "on", "1":
			return known[0]
		case "false", "no", "0":
			return "off"
		default:
			if slices.Contains(known, m) {
				return m
			}
		}
	}
	return ""
}

// NotifiesOfEnd says whether a background process's end that failed (or
// not) is told to its conversation.
func (c Config) NotifiesOfEnd(failed bool) bool {
	switch c.ProcessNotifications() {
	case NotifyOff:
		return false
	case NotifyError:
		return failed
	}
	return true
}

// NotifiesWhileRunning says whether a background process's notices while it
// runs (a watch_patterns match, and what the watch's limits did) are told:
// only in the mode that tells running output (all), as the familiar
// agent's running-output updates.
func (c Config) NotifiesWhileRunning() bool { return c.ProcessNotifications() == NotifyAll }

// Clarify is the familiar agent's older clarify block: its timeout, when
// set, is taken over agent.clarify_timeout.
type Clarify struct {
	Timeout any `yaml:"timeout"`
}

// maxClarifySeconds is the longest clarify timeout kept as a limit: a
// year.
const maxClarifySeconds = 365 * 24 * 3600

// ClarifyTimeout is how long a person has to answer the clarify tool's
// question: clarify.timeout when set, else agent.clarify_timeout; 0 is no
// limit (a value of 0 or less). false: neither is set, or the value is no
// number, which the familiar agent reads as its default (an hour).
func (c Config) ClarifyTimeout() (time.Duration, bool) {
	raw := c.Clarify.Timeout
	if raw == nil {
		raw = c.Agent.ClarifyTimeout
	}
	secs, ok := limits.YAMLNumber(raw)
	secs = math.Trunc(secs) // whole seconds, as int() takes them
	if s, isText := raw.(string); isText {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return 0, false
		}
		secs, ok = float64(n), true
	}
	if !ok {
		return 0, false
	}
	if secs <= 0 || secs > maxClarifySeconds {
		return 0, true // no limit (a year or more is none either)
	}
	return time.Duration(secs) * time.Second, true
}

// Terminal settings: how the terminal tool runs a command, in the familiar
// agent's keys.
type Terminal struct {
	// Backend: local (the default, and the only one Atrium has; another
	// leaves the terminal out rather than run unsandboxed here).
	Backend string `yaml:"backend"`
	// Cwd is where a conversation's commands start ("" or ".": the
	// command line's folder in a terminal, the home folder elsewhere).
	Cwd string `yaml:"cwd"`
	// Timeout is a command's seconds when the model names none (default
	// 180, at most 600).
	Timeout int `yaml:"timeout"`
	// EnvPassthrough names the keys' and tokens' variables commands get
	// all the same (the others are left out of their environment).
	EnvPassthrough []string `yaml:"env_passthrough"`
}

// Context settings: which context engine compacts.
type Context struct {
	// Engine is context.engine, as the familiar agent has it: "" (the
	// first engine a plugin registered, else the built-in summarizer),
	// "compressor" (the built-in summarizer whatever plugins register), or
	// an engine's name.
	Engine string `yaml:"engine"`
}

// Approvals settings: what becomes of a tool call a plugin wants approved
// ({"action": "approve"}), in the familiar agent's keys.
type Approvals struct {
	// Mode: "manual" (default: a person is asked), "off" (every such call
	// runs without asking, on every surface, each one logged) or "smart"
	// (a terminal command Atrium flags is first put to a reviewing model,
	// auxiliary.approval, which approves it, denies it, or leaves it to
	// the person; as the familiar agent's smart approvals).
	Mode string `yaml:"mode"`
	// SmartPolicy is approvals.smart_policy: the operator's own rules,
	// added to the reviewing model's instructions (trusted, unlike the
	// command it reviews).
	SmartPolicy string `yaml:"smart_policy"`
	// Timeout is how many seconds a person has to answer at the window,
	// the dashboard or a terminal chat (0: 5 minutes there, no limit at
	// a terminal); a chat platform has gateway.approval_timeout_minutes.
	Timeout float64 `yaml:"timeout"`
	// CronMode is for scheduled runs: "deny" (default: the call is
	// blocked) or "approve" (it runs), as the familiar agent's
	// approvals.cron_mode.
	CronMode string `yaml:"cron_mode"`
}

// Auxiliary is the familiar agent's auxiliary block: the models of its side
// tasks. Atrium has two, approval (the reviewer of approvals.mode: smart)
// and vision (the model that looks at images), each asked of the main
// provider unless it names its own (the other tasks are not read, and
// config show says so).
type Auxiliary struct {
	Approval AuxiliaryTask   `yaml:"approval"`
	Vision   AuxiliaryVision `yaml:"vision"`
}

// AuxiliaryVision is auxiliary.vision: the model vision_analyze and the
// gateway's look at a photo ask, with the familiar agent's own keys.
type AuxiliaryVision struct {
	AuxiliaryTask `yaml:",inline"`
	// Temperature is the call's temperature (nil: 0.1, the familiar
	// agent's).
	Temperature *float64 `yaml:"temperature"`
	// DownloadTimeout is how many seconds an image's download may take (0:
	// 30); $HERMES_VISION_DOWNLOAD_TIMEOUT wins, as there.
	DownloadTimeout float64 `yaml:"download_timeout"`
}

// Vision's defaults, as the familiar agent's vision tools have them.
const (
	DefaultVisionTimeout         = 120 * time.Second // a local vision model can take well over 30 s
	DefaultVisionTemperature     = 0.1
	DefaultVisionDownloadTimeout = 30 * time.Second
)

// Vision is auxiliary.vision as the vision calls ask it: the task (its
// endpoint when it names its own), its model ("": the main model, or
// $AUXILIARY_VISION_MODEL, the familiar agent's older override), the
// call's time and temperature, and an image download's time.
func (c Config) Vision(getenv func(string) string) (task AuxiliaryTask, model string, timeout time.Duration, temperature float64, download time.Duration) {
	v := c.Auxiliary.Vision
	task, model = v.AuxiliaryTask, strings.TrimSpace(v.Model)
	if model == "" {
		model = strings.TrimSpace(getenv("AUXILIARY_VISION_MODEL"))
	}
	timeout, temperature, download = DefaultVisionTimeout, DefaultVisionTemperature, DefaultVisionDownloadTimeout
	if v.Timeout > 0 {
		timeout = time.Duration(v.Timeout * float64(time.Second))
	}
	if v.Temperature != nil {
		temperature = *v.Temperature
	}
	if v.DownloadTimeout > 0 {
		download = time.Duration(v.DownloadTimeout * float64(time.Second))
	}
	if d, err := strconv.ParseFloat(strings.TrimSpace(getenv("HERMES_VISION_DOWNLOAD_TIMEOUT")), 64); err == nil && d > 0 && d <= 600 {
		download = time.Duration(d * float64(time.Second))
	}
	return task, model, timeout, temperature, download
}

// AuxiliaryTask is one side task's model, as the familiar agent's
// auxiliary.<task> block names it (Endpoint).
type AuxiliaryTask struct {
	// Provider is the provider asked: auto or main ("", the default: the
	// main model's), or one as model.provider names them (openrouter,
	// custom, ...).
	Provider string `yaml:"provider"`
	// Model is the model asked ("": the main model, of the main provider).
	Model string `yaml:"model"`
	// BaseURL is a direct OpenAI-compatible endpoint; it wins over
	// Provider.
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the variable of the key (default: the provider's,
	// $OPENAI_API_KEY for a base_url).
	APIKeyEnv string `yaml:"api_key_env"`
	// Timeout is how many seconds the model has to answer (0: 30).
	Timeout float64 `yaml:"timeout"`
}

// Own reports whether the task names an endpoint of its own (a base_url,
// or a provider other than auto and main).
func (a AuxiliaryTask) Own() bool {
	switch strings.ToLower(strings.TrimSpace(a.Provider)) {
	case "", "auto", "main":
		return strings.TrimSpace(a.BaseURL) != ""
	}
	return true
}

// Where says where the task's model is asked when it names an endpoint of
// its own (" via openrouter", " at http://..."); "" for the main
// provider.
func (a AuxiliaryTask) Where() string {
	switch {
	case strings.TrimSpace(a.BaseURL) != "":
		return " at " + strings.TrimSpace(a.BaseURL)
	case a.Own():
		return " via " + strings.ToLower(strings.TrimSpace(a.Provider))
	}
	return ""
}

// Endpoint is where the task's model is asked when it names one of its
// own (Own): its base_url (a custom server, with $OPENAI_API_KEY when set),
// else its provider, resolved as model.provider is.
func (a AuxiliaryTask) Endpoint(getenv func(string) string) (Endpoint, error) {
	m := Model{Provider: a.Provider, Name: strings.TrimSpace(a.Model), BaseURL: a.BaseURL, APIKeyEnv: a.APIKeyEnv}
	if strings.TrimSpace(a.BaseURL) != "" {
		m.Provider = "custom"
	}
	return m.Endpoint(getenv)
}

// validate refuses a task no request could be made of (key names it).
func (a AuxiliaryTask) validate(key string) error {
	p := strings.ToLower(strings.TrimSpace(a.Provider))
	if p != "main" {
		if err := CheckProvider(p); err != nil {
			return fmt.Errorf("%s.provider must be auto, main, or one of model.provider's: %w", key, err)
		}
	}
	if err := checkURL(key+".base_url", a.BaseURL); err != nil {
		return err
	}
	if err := checkEnv(key+".api_key_env", a.APIKeyEnv); err != nil {
		return err
	}
	switch {
	case p == ProviderOffline:
		return fmt.Errorf("%s.provider offline is no model to ask", key)
	case strings.TrimSpace(a.BaseURL) == "" && needsBaseURL(p):
		return fmt.Errorf("%s.provider %s needs %s.base_url: the OpenAI-compatible server's API root", key, p, key)
	case a.Own() && strings.TrimSpace(a.Model) == "":
		return fmt.Errorf("%s.model must name the model to ask of %s", key, map[bool]string{true: "its base_url", false: "provider " + p}[a.BaseURL != ""])
	}
	return nil
}

// validate refuses an auxiliary.vision no call could be made with.
func (v AuxiliaryVision) validate() error {
	if t := v.Timeout; t < 0 || t > 3600 || math.IsNaN(t) {
		return fmt.Errorf("auxiliary.vision.timeout must be 0 (120 seconds) to 3600 seconds, not %v", t)
	}
	if t := v.DownloadTimeout; t < 0 || t > 600 || math.IsNaN(t) {
		return fmt.Errorf("auxiliary.vision.download_timeout must be 0 (30 seconds) to 600 seconds, not %v", t)
	}
	if t := v.Temperature; t != nil && (*t < 0 || *t > 2 || math.IsNaN(*t)) {
		return fmt.Errorf("auxiliary.vision.temperature must be 0 to 2, not %v", *t)
	}
	return v.AuxiliaryTask.validate("auxiliary.vision")
}

// DefaultAuxiliaryTimeout is an auxiliary task's timeout when unset, as
// the familiar agent's.
const DefaultAuxiliaryTimeout = 30 * time.Second

// ApprovalGuard is auxiliary.approval as a reviewer asks it: its model
// ("" the main one) and its time.
func (c Config) ApprovalGuard() (model string, timeout time.Duration) {
	timeout = DefaultAuxiliaryTimeout
	if t := c.Auxiliary.Approval.Timeout; t > 0 {
		timeout = time.Duration(t * float64(time.Second))
	}
	return strings.TrimSpace(c.Auxiliary.Approval.Model), timeout
}

// ApprovalsSmart reports whether approvals.mode is smart.
func (c Config) ApprovalsSmart() bool { return c.ApprovalsMode() == ApproveSmart }

// Approval modes of approvals.cron_mode and approvals.mode.
const (
	CronDeny      = "deny"
	CronApprove   = "approve"
	ApproveManual = "manual"
	ApproveOff    = "off"
	ApproveSmart  = "smart"
)

// CronApproves reports whether scheduled runs approve what plugins ask.
func (c Config) CronApproves() bool { return strings.EqualFold(c.Approvals.CronMode, CronApprove) }

// ApprovalsMode is approvals.mode in lower case, manual when unset.
func (c Config) ApprovalsMode() string {
	if c.Approvals.Mode == "" {
		return ApproveManual
	}
	return strings.ToLower(c.Approvals.Mode)
}

// ApprovalsOff reports whether approvals.mode is off.
func (c Config) ApprovalsOff() bool { return c.ApprovalsMode() == ApproveOff }

// ApprovalTimeout is approvals.timeout (0 when unset).
func (c Config) ApprovalTimeout() time.Duration {
	return time.Duration(c.Approvals.Timeout * float64(time.Second))
}

// Memory settings: the one external memory provider a plugin registered
// (register_memory_provider) that the turn loop and compaction drive.
type Memory struct {
	Provider string `yaml:"provider"` // the provider's name; "" or "builtin" for none
	// The curated memory, in the familiar agent's keys: MEMORY.md (the
	// agent's notes) and USER.md (the user's profile) in the profile's
	// memories/ folder. Each is on unless set to false; the limits are in
	// characters (0: 2,200 and 1,375).
	MemoryEnabled      *bool `yaml:"memory_enabled"`
	UserProfileEnabled *bool `yaml:"user_profile_enabled"`
	MemoryCharLimit    int   `yaml:"memory_char_limit"`
	UserCharLimit      int   `yaml:"user_char_limit"`
}

// Skills is the familiar agent's skills block: skill folders shared from
// elsewhere (read, never written), and skills not offered, everywhere or
// on one platform (telegram, discord, cli, ...).
type Skills struct {
	ExternalDirs     []string            `yaml:"external_dirs"`
	Disabled         []string            `yaml:"disabled"`
	PlatformDisabled map[string][]string `yaml:"platform_disabled"`
}

// Compaction settings; nil means the default.
type Compaction struct {
	Rotate          *bool    `yaml:"rotate"`           // default true
	Threshold       *float64 `yaml:"threshold"`        // default 0.8 of the context window
	SoftThreshold   *float64 `yaml:"soft_threshold"`   // default 0.6
	CooldownSeconds *float64 `yaml:"cooldown_seconds"` // default 120
	ProtectTurns    *int     `yaml:"protect_turns"`    // default 2
	Summarizer      string   `yaml:"summarizer"`       // offline (default) or model
}

// Model settings: the provider turns and model summaries use (Endpoint
// resolves them, the familiar agent's names included).
type Model struct {
	Provider      string  `yaml:"provider"`    // offline (default), openai (any OpenAI-compatible API), or one of the familiar agent's (Endpoint)
	BaseURL       string  `yaml:"base_url"`    // e.g. http://127.0.0.1:8080/v1
	Name          string  `yaml:"name"`        // the model name sent to the API
	APIKeyEnv     string  `yaml:"api_key_env"` // environment variable holding the key
	ContextWindow int     `yaml:"context_window"`
	TimeoutSecs   float64 `yaml:"timeout_seconds"`
	// The familiar agent's names: the model as model.default (or
	// model.model), the window as model.context_length.
	Default       string `yaml:"default"`
	AltName       string `yaml:"model"`
	ContextLength int    `yaml:"context_length"`
	// NativeCompaction lets a provider that compacts natively (the offline
	// one plays it) do the automatic compactions: kind provider_native,
	// reason provider. NativeThreshold is the fraction of the window at
	// which it compacts before a call (default compaction.threshold).
	NativeCompaction bool     `yaml:"native_compaction"`
	NativeThreshold  *float64 `yaml:"native_compaction_threshold"`
	// scalar is set when the file gives the model as a name alone.
	scalar bool
}

// UnmarshalYAML reads the model block, or the familiar agent's shorter
// form, the model's name alone (model: anthropic/claude-opus-4), which it
// reads as model.default.
func (m *Model) UnmarshalYAML(unmarshal func(any) error) error {
	var name string
	if err := unmarshal(&name); err == nil {
		*m = Model{Default: name, scalar: name != ""}
		return nil
	}
	type plain Model // the block: its keys, without this method
	return unmarshal((*plain)(m))
}

// Scalar reports whether the file gives the model as a name alone.
func (m Model) Scalar() bool { return m.scalar }

// yamlFields marks Model as a mapping of known keys for unknownKeys, its
// own UnmarshalYAML notwithstanding.
func (Model) yamlFields() {}

// Storage settings.
type Storage struct {
	Synchronous string `yaml:"synchronous"` // normal (default) or full
}

// Sessions settings.
type Sessions struct {
	RetentionDays   *int  `yaml:"retention_days"` // default 90
	AutoPrune       bool  `yaml:"auto_prune"`     // off by default
	ArchiveIdleDays int   `yaml:"archive_idle_days"`
	TrashDays       *int  `yaml:"trash_days"`      // default 30; 0 = delete at once
	TrashAutomatic  *bool `yaml:"trash_automatic"` // default true: automatic deletes go to the trash too
}

// Plugins settings.
type Plugins struct {
	HookCallbackTimeout *float64       `yaml:"hook_callback_timeout"` // seconds; default 30; <= 0 disables; capped at 600
	Enabled             []string       `yaml:"enabled"`
	Disabled            []string       `yaml:"disabled"`
	Entries             map[string]any `yaml:"entries"`
	// Host is where plugins run: "" or "auto" (one plugin host per profile:
	// the window, atrium serve, or a background host a command starts) or
	// "inline" (each process runs the plugins it needs itself).
	Host string `yaml:"host"`
	// HostIdleMinutes is how long a background host stays without work
	// (default 10).
	HostIdleMinutes *float64 `yaml:"host_idle_minutes"`
}

// Plugin host modes (plugins.host).
const (
	PluginHostAuto   = "auto"
	PluginHostInline = "inline"
)

// InlinePlugins tells whether plugins.host is inline.
func (c Config) InlinePlugins() bool { return strings.EqualFold(c.Plugins.Host, PluginHostInline) }

// HostIdle is plugins.host_idle_minutes with its default.
func (c Config) HostIdle() time.Duration {
	if c.Plugins.HostIdleMinutes == nil {
		return 10 * time.Minute
	}
	return time.Duration(*c.Plugins.HostIdleMinutes * float64(time.Minute))
}

// Hooks settings. Beside Atrium's own keys, hooks: holds shell hooks by
// event, in the familiar agent's shape or Claude Code's (read by
// backend/shellhooks), and outbound webhooks: they are kept in Shell as
// plain values, whatever they hold; what cannot run is reported there.
type Hooks struct {
	EventRetentionDays *int           `yaml:"event_retention_days"` // default 30
	Shell              map[string]any `yaml:"-"`
}

// UnmarshalYAML reads event_retention_days and keeps every other key.
func (h *Hooks) UnmarshalYAML(unmarshal func(any) error) error {
	var raw map[string]any
	if err := unmarshal(&raw); err != nil {
		return err
	}
	for k, v := range raw {
		if k != "event_retention_days" {
			if h.Shell == nil {
				h.Shell = map[string]any{}
			}
			h.Shell[k] = plainJSON(v)
			continue
		}
		switch n := v.(type) {
		case nil:
		case uint64:
			d := int(min(n, 1<<31))
			h.EventRetentionDays = &d
		case int64:
			d := int(max(min(n, 1<<31), -1<<31))
			h.EventRetentionDays = &d
		case int:
			h.EventRetentionDays = &n
		default:
			return fmt.Errorf("hooks.event_retention_days must be a whole number of days, not %v", v)
		}
	}
	return nil
}

// Receipts settings.
type Receipts struct {
	TTLHours *float64 `yaml:"ttl_hours"` // default 24
}

// Maintenance settings.
type Maintenance struct {
	Disabled bool `yaml:"disabled"` // no automatic maintenance in long-lived processes
}

// RetentionDays is sessions.retention_days with its default.
func (c Config) RetentionDays() int {
	if c.Sessions.RetentionDays == nil {
		return 90
	}
	return *c.Sessions.RetentionDays
}

// TrashDays is sessions.trash_days with its default (30; 0 = no trash).
func (c Config) TrashDays() int {
	if c.Sessions.TrashDays == nil {
		return 30
	}
	return *c.Sessions.TrashDays
}

// TrashAutomatic is sessions.trash_automatic with its default (true).
func (c Config) TrashAutomatic() bool {
	return c.Sessions.TrashAutomatic == nil || *c.Sessions.TrashAutomatic
}

// HookTimeout is plugins.hook_callback_timeout, normalised (0 = unbounded).
func (c Config) HookTimeout() time.Duration {
	if c.Plugins.HookCallbackTimeout == nil {
		return hooks.DefaultTimeout
	}
	return hooks.NormalizeTimeout(time.Duration(*c.Plugins.HookCallbackTimeout * float64(time.Second)))
}

// EventRetention is how long delivered events are kept.
func (c Config) EventRetention() time.Duration {
	if c.Hooks.EventRetentionDays == nil {
		return hooks.DefaultEventRetention
	}
	return time.Duration(*c.Hooks.EventRetentionDays) * 24 * time.Hour
}

// ReceiptTTL is how long receipts are kept.
func (c Config) ReceiptTTL() time.Duration {
	if c.Receipts.TTLHours == nil {
		return 24 * time.Hour
	}
	return time.Duration(*c.Receipts.TTLHours * float64(time.Hour))
}

// Validate checks values a YAML type check cannot.
func (c Config) Validate() error {
	if err := c.DiscordSection.validate("discord"); err != nil {
		return err
	}
	if err := checkUnknownDM("unauthorized_dm_behavior", c.UnauthorizedDMBehavior); err != nil {
		return err
	}
	switch strings.ToLower(c.Storage.Synchronous) {
	case "", "normal", "full":
	default:
		return fmt.Errorf("storage.synchronous must be normal or full, not %q", c.Storage.Synchronous)
	}
	if c.Sessions.RetentionDays != nil && *c.Sessions.RetentionDays <= 0 {
		return fmt.Errorf("sessions.retention_days must be positive, not %d", *c.Sessions.RetentionDays)
	}
	if c.Sessions.TrashDays != nil && (*c.Sessions.TrashDays < 0 || *c.Sessions.TrashDays > 3650) {
		return fmt.Errorf("sessions.trash_days must be 0 (delete at once) to 3650, not %d", *c.Sessions.TrashDays)
	}
	if c.Sessions.ArchiveIdleDays < 0 {
		return fmt.Errorf("sessions.archive_idle_days must be 0 (off) or positive, not %d", c.Sessions.ArchiveIdleDays)
	}
	switch strings.ToLower(c.Approvals.CronMode) {
	case "", CronDeny, CronApprove:
	default:
		return fmt.Errorf("approvals.cron_mode must be deny or approve, not %q", c.Approvals.CronMode)
	}
	switch c.ApprovalsMode() {
	case ApproveManual, ApproveOff, ApproveSmart:
	default:
		return fmt.Errorf("approvals.mode must be manual, off or smart, not %q", c.Approvals.Mode)
	}
	if t := c.Approvals.Timeout; t < 0 || t > 3600 || math.IsNaN(t) {
		return fmt.Errorf("approvals.timeout must be 0 (the default) to 3600 seconds, not %v", t)
	}
	if t := c.Auxiliary.Approval.Timeout; t < 0 || t > 600 || math.IsNaN(t) {
		return fmt.Errorf("auxiliary.approval.timeout must be 0 (30 seconds) to 600 seconds, not %v", t)
	}
	if err := c.Auxiliary.Approval.validate("auxiliary.approval"); err != nil {
		return err
	}
	if err := c.Auxiliary.Vision.validate(); err != nil {
		return err
	}
	if err := checkToolProgress("display", c.Display.ToolProgress, c.Display.ToolProgressGrouping, c.Display.ToolPreviewLength); err != nil {
		return err
	}
	for name, p := range c.Display.Platforms {
		preview := 0 // unset: the profile's
		if p.ToolPreviewLength != nil {
			preview = *p.ToolPreviewLength
		}
		if err := checkToolProgress("display.platforms."+name, p.ToolProgress, p.ToolProgressGrouping, preview); err != nil {
			return err
		}
	}
	if c.ProcessNotifications() == "" {
		return fmt.Errorf("display.background_process_notifications must be all, result, error or off, not %v", c.Display.BackgroundProcessNotifications)
	}
	if n := c.Delegation.MaxIterations; n < 0 || n > 10000 {
		return fmt.Errorf("delegation.max_iterations must be 1 to 10000 (0: 50), not %d", n)
	}
	if n := c.Delegation.MaxConcurrentChildren; n < 0 || n > maxDelegateChildren {
		return fmt.Errorf("delegation.max_concurrent_children must be 1 to %d (0: 3), not %d", maxDelegateChildren, n)
	}
	if t := c.Delegation.ChildTimeoutSeconds; t != nil && (*t < 0 || *t > 86400 || math.IsNaN(*t)) {
		return fmt.Errorf("delegation.child_timeout_seconds must be 0 (no limit) to 86400, not %v", *t)
	}
	if n := c.Agent.MaxTurns; n < 0 || n > 10000 {
		return fmt.Errorf("agent.max_turns must be 1 to 10000 (0: 90), not %d", n)
	}
	if t := c.Terminal.Timeout; t < 0 || t > 600 {
		return fmt.Errorf("terminal.timeout must be 1 to 600 seconds (0: 180), not %d", t)
	}
	if n := c.Memory.MemoryCharLimit; n < 0 || n > 1_000_000 {
		return fmt.Errorf("memory.memory_char_limit must be 1 to 1000000 characters (0: 2200), not %d", n)
	}
	if n := c.Memory.UserCharLimit; n < 0 || n > 1_000_000 {
		return fmt.Errorf("memory.user_char_limit must be 1 to 1000000 characters (0: 1375), not %d", n)
	}
	if c.ContextFileMaxChars < 0 {
		return fmt.Errorf("context_file_max_chars must be positive (0: from the model's context window), not %d", c.ContextFileMaxChars)
	}
	if c.FileReadMaxChars < 0 {
		return fmt.Errorf("file_read_max_chars must be positive (0: 100000), not %d", c.FileReadMaxChars)
	}
	switch strings.ToLower(c.Plugins.Host) {
	case "", PluginHostAuto, PluginHostInline:
	default:
		return fmt.Errorf("plugins.host must be auto or inline, not %q", c.Plugins.Host)
	}
	if m := c.Plugins.HostIdleMinutes; m != nil && *m <= 0 {
		return fmt.Errorf("plugins.host_idle_minutes must be positive, not %v", *m)
	}
	if c.Hooks.EventRetentionDays != nil && *c.Hooks.EventRetentionDays <= 0 {
		return fmt.Errorf("hooks.event_retention_days must be positive")
	}
	// 0 turns automatic compaction at that point off.
	if t := c.Compaction.Threshold; t != nil && (*t < 0 || *t > 1) {
		return fmt.Errorf("compaction.threshold must be in [0, 1] (0 turns it off), not %v", *t)
	}
	if t := c.Compaction.SoftThreshold; t != nil && (*t < 0 || *t > 1) {
		return fmt.Errorf("compaction.soft_threshold must be in [0, 1] (0 turns it off), not %v", *t)
	}
	switch c.Compaction.Summarizer {
	case "", "offline", "model":
	default:
		return fmt.Errorf("compaction.summarizer must be offline or model, not %q", c.Compaction.Summarizer)
	}
	if err := CheckProvider(c.Model.Provider); err != nil {
		return err
	}
	if c.Receipts.TTLHours != nil && *c.Receipts.TTLHours <= 0 {
		return fmt.Errorf("receipts.ttl_hours must be positive")
	}
	if t := c.Model.NativeThreshold; t != nil && (*t <= 0 || *t > 1) {
		return fmt.Errorf("model.native_compaction_threshold must be in (0, 1], not %v", *t)
	}
	if err := c.validateFallbacks(); err != nil {
		return err
	}
	if err := c.STT.validate(); err != nil {
		return err
	}
	if err := c.TTS.validate(); err != nil {
		return err
	}
	return c.Gateway.Validate()
}

// Load reads path; a missing file gives the defaults. A file that cannot be
// read or parsed is an invalid error naming the file and line. Unknown keys
// are returned as warnings, never as errors.
func Load(path string) (Config, []string, error) {
	var c Config
	data, err := limits.ReadFile(path, limits.ConfigBytes, "a config file")
	if errors.Is(err, os.ErrNotExist) {
		return c, nil, nil
	}
	if apperr.Is(err, apperr.Invalid) {
		return c, nil, err
	}
	if err != nil {
		return c, nil, apperr.Wrap(apperr.Invalid, err, "cannot read config %s", path)
	}
	return Parse(data, path)
}

// Parse is Load of data, the text of the config file at path (named in
// errors): a text about to be written is held to the same bounds and checks
// as the file read.
func Parse(data []byte, path string) (Config, []string, error) {
	var c Config
	if len(data) > limits.ConfigBytes {
		return c, nil, limits.TooLarge(path, int64(len(data)), limits.ConfigBytes, "a config file")
	}
	if err := limits.CheckYAMLDepth(data, limits.YAMLDepth, "config "+path); err != nil {
		return c, nil, err
	}
	if err := unmarshal(data, &c); err != nil {
		return Config{}, nil, apperr.New(apperr.Invalid, "config %s:%s", path, describe(err))
	}
	var warnings []string
	var strict Config
	if err := unmarshal(data, &strict, yaml.Strict()); err != nil {
		if unknown := unknownKeys(data); len(unknown) > 0 {
			warnings = append(warnings, fmt.Sprintf("config %s: %s not Atrium's, ignored: %s", path,
				plural(len(unknown), "setting is", "settings are"), listSome(unknown, 12)))
			for _, k := range unknown {
				if k == "api_key" || strings.HasSuffix(k, ".api_key") {
					// The familiar agent takes a key written in the file.
					warnings = append(warnings, fmt.Sprintf("config %s: %s is not read: Atrium takes keys from the environment or the profile's .env, never from config.yaml; `atrium config set OPENAI_API_KEY ...` (or the variable model.api_key_env names) keeps it there (then remove it from this file)", path, k))
				}
			}
		} else {
			warnings = append(warnings, fmt.Sprintf("config %s:%s (ignored)", path, describe(err)))
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, nil, apperr.Wrap(apperr.Invalid, err, "config %s", path)
	}
	if p := strings.ToLower(c.Model.Provider); slices.Contains(familiarOther, p) {
		warnings = append(warnings, fmt.Sprintf("config %s: model.provider %s is the familiar agent's and not an API Atrium speaks: turns will fail until it is custom (with model.base_url) or openrouter", path, p))
	}
	warnings = append(warnings, c.fallbackWarnings(path)...)
	warnings = append(warnings, c.STT.sttWarnings(path)...)
	warnings = append(warnings, c.TTS.ttsWarnings(path)...)
	return c, warnings, nil
}

// unmarshal is yaml.UnmarshalWithOptions with the library's panics (a tag
// with no value dereferences nil in goccy/go-yaml v1.19.2) as errors.
func unmarshal(data []byte, v any, opts ...yaml.DecodeOption) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the YAML parser could not read this file (%v)", r)
		}
	}()
	return yaml.UnmarshalWithOptions(data, v, opts...)
}

// describe renders a YAML error as "LINE:COL: message" on one line.
func describe(err error) string {
	msg := yaml.FormatError(err, false, false)
	first, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	// goccy formats "[line:col] message"; turn it into "line:col: message".
	if strings.HasPrefix(first, "[") {
		if pos, rest, ok := strings.Cut(first[1:], "]"); ok {
			return pos + ":" + rest
		}
	}
	return " " + first
}
