package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/compaction"
	"atrium/backend/config"
	"atrium/backend/hooks"
	"atrium/backend/llm"
	"atrium/backend/tools"
	"atrium/backend/turns"
)

// ModelFlags override the configured model on one command.
type ModelFlags struct {
	Provider string // offline, openai, or one of the familiar agent's (config.Model.Endpoint)
	BaseURL  string
	Model    string
	APIKey   string // environment variable name
	// Approve asks a person about a tool call a plugin wants approved
	// (nil: such calls are blocked).
	Approve func(ctx context.Context, a turns.Approval) (turns.Answer, error)
	// Clarify asks the person at the surface the clarify tool's question
	// (nil: the tool is not offered).
	Clarify func(ctx context.Context, q turns.Question) (turns.Reply, error)
	// AskSecret asks the person at the surface, unseen, for a variable a
	// skill being loaded needs, and keeps it (turns.Options.AskSecret).
	AskSecret tools.SecretAsker
	// NoBetweenTurns: the caller compacts between messages itself (the
	// gateway's hygiene).
	NoBetweenTurns bool
}

// compactionConfig maps config.yaml onto the engine's configuration.
func compactionConfig(c config.Compaction) compaction.Config {
	out := compaction.DefaultConfig()
	if c.Rotate != nil {
		out.Rotate = *c.Rotate
	}
	if c.Threshold != nil {
		out.Threshold = *c.Threshold
	}
	if c.SoftThreshold != nil {
		out.SoftThreshold = *c.SoftThreshold
	}
	if c.CooldownSeconds != nil {
		out.Cooldown = time.Duration(*c.CooldownSeconds * float64(time.Second))
	}
	if c.ProtectTurns != nil {
		out.ProtectTurns = *c.ProtectTurns
	}
	return out
}

// liveModel is the model as config.yaml says it at each call, with a
// process's overrides (ModelFlags) over it, and the key as the profile's
// .env has it then unless the process was started with it (a key saved
// from the window, or by `atrium config set` in another process, counts at
// the next turn). A provider is built again only when what it is built
// from changed.
type liveModel struct {
	home  config.Home
	watch *configWatch
	f     ModelFlags

	mu      sync.Mutex
	ep      config.Endpoint
	key     string
	timeout time.Duration
	cur     turns.Model
}

func (s *Stack) liveModel(f ModelFlags) *liveModel {
	return &liveModel{home: s.Home, watch: s.watch, f: f}
}

// endpoint is model with f's overrides, resolved.
func (f ModelFlags) endpoint(m config.Model) (config.Endpoint, error) {
	if f.Provider != "" {
		m.Provider = f.Provider
	}
	if f.BaseURL != "" {
		m.BaseURL = f.BaseURL
	}
	if f.Model != "" {
		m.Name = f.Model
	}
	if f.APIKey != "" {
		m.APIKeyEnv = f.APIKey
	}
	return m.Endpoint(os.Getenv)
}

// resolve is the model to ask now.
func (m *liveModel) resolve() (turns.Model, error) { return m.resolveIn(m.watch.current()) }

// resolveIn is the model to ask now, cfg and err being config.yaml now
// (the watch's current).
func (m *liveModel) resolveIn(cfg config.Config, err error) (turns.Model, error) {
	// A .env that cannot be read now leaves the keys as they were read
	// (the start warned of it).
	_ = m.home.RefreshEnv()
	if err != nil {
		return turns.Model{}, err
	}
	model := cfg.Model
	m.mu.Lock()
	defer m.mu.Unlock()
	ep, err := m.f.endpoint(model)
	if err != nil {
		return turns.Model{}, err
	}
	var key string
	if ep.APIKeyEnv != "" {
		key = os.Getenv(ep.APIKeyEnv)
	}
	timeout := time.Duration(model.TimeoutSecs * float64(time.Second))
	if m.cur.Provider != nil && ep == m.ep && key == m.key && timeout == m.timeout {
		return m.cur, nil
	}
	p, err := NewProvider(ep, timeout)
	if err != nil {
		return turns.Model{}, err
	}
	m.ep, m.key, m.timeout, m.cur = ep, key, timeout, turns.Model{Provider: p, Name: ep.Name} // no name: the loop takes the provider's
	return m.cur, nil
}

// NewProvider is the model ep names, each request bounded by timeout (<= 0:
// the provider's default).
func NewProvider(ep config.Endpoint, timeout time.Duration) (llm.Provider, error) {
	if ep.Provider == config.ProviderOpenAI {
		return llm.NewOpenAIProvider(llm.OpenAIConfig{BaseURL: ep.BaseURL, Model: ep.Name, APIKeyEnv: ep.APIKeyEnv,
			ContextWindow: ep.ContextWindow, Timeout: timeout})
	}
	return llm.OfflineProvider{Window: ep.ContextWindow, Model: ep.Name}, nil
}

// liveSummarizer is compaction's summarizer: with compaction.summarizer:
// model (as config.yaml says it at each summary), the model it names then
// (an API's; else the offline summary), so a key that is not set yet fails
// a summary, not the start of every command.
type liveSummarizer struct {
	model *liveModel
}

func (s liveSummarizer) Summarize(ctx context.Context, msgs []llm.Message, focus string) (string, error) {
	// One look at config.yaml: which summarizer (as it last loaded), and
	// the model it names.
	if cfg, cfgErr := s.model.watch.current(); cfg.Compaction.Summarizer == "model" {
		m, err := s.model.resolveIn(cfg, cfgErr)
		if err != nil {
			return "", err
		}
		if _, offline := m.Provider.(llm.OfflineProvider); !offline {
			return (&llm.ModelSummarizer{Provider: m.Provider, Model: m.Name}).Summarize(ctx, msgs, focus)
		}
	}
	return llm.OfflineSummarizer{}.Summarize(ctx, msgs, focus)
}

func (s *Stack) summarizer() llm.Summarizer {
	return liveSummarizer{model: s.liveModel(ModelFlags{})}
}

// Loop builds the turn loop. Each turn asks the model config.yaml names as
// the turn starts (f's overrides over it): a model or key changed while
// the process runs is the next turn's, and one that cannot be asked yet
// (no key) fails the turns, not the window, the dashboard, the gateway or
// the scheduler that run them.
func (s *Stack) Loop(f ModelFlags) (*turns.Loop, error) {
	o := turns.Options{Resolve: s.liveModel(f).resolve, MemoryProvider: s.Config.Memory.Provider, Approve: f.Approve, Clarify: f.Clarify, AskSecret: f.AskSecret, Machine: s.machine,
		NoBetweenTurns: f.NoBetweenTurns, NativeCompaction: s.Config.Model.NativeCompaction, Runs: s.Runs, Standing: s.Standing, Processes: s.Processes}
	o.MaxRounds = func() int { cfg, _ := s.watch.current(); return cfg.Agent.MaxTurns }
	o.Delegation = func() turns.Delegation {
		cfg, _ := s.watch.current()
		d := turns.DefaultDelegation()
		d.MaxIterations, d.MaxChildren, d.Model = cfg.Delegation.MaxIterations, cfg.Delegation.MaxConcurrentChildren, cfg.Delegation.Model
		if t, ok := cfg.Delegation.ChildTimeout(); ok {
			d.ChildTimeout = t
		}
		return d
	}
	o.ClarifyTimeout = func() time.Duration {
		cfg, _ := s.watch.current()
		if d, ok := cfg.ClarifyTimeout(); ok {
			return d
		}
		return turns.DefaultClarifyTimeout
	}
	o.MaxRetries = func() int { cfg, _ := s.watch.current(); return cfg.Agent.APIMaxRetries() }
	o.Fallbacks = s.fallbacks
	o.Guardian = func() (turns.Guardian, bool) {
		p := s.Standing.Policy()
		g := turns.Guardian{Model: p.GuardModel, Policy: p.SmartPolicy, Timeout: p.GuardTimeout}
		if p.Smart && p.Guard.Own() {
			g.Provider, g.Model, g.Unavailable = s.guardProvider(p.Guard)
		}
		return g, p.Smart
	}
	if t := s.Config.Model.NativeThreshold; t != nil {
		o.NativeThreshold = *t
	}
	return turns.New(s.DB, s.Sessions, s.Compaction, s.Bus, o)
}

// guardProvider is the reviewing model auxiliary.approval names with a
// provider or a base_url of its own, with its key as the profile's .env
// has it now; err says why it cannot be asked.
func (s *Stack) guardProvider(task config.AuxiliaryTask) (p llm.Provider, model string, err error) {
	m, err := s.modelAt(task.Endpoint, 0)
	if err != nil {
		return nil, "", fmt.Errorf("auxiliary.approval: %w", err)
	}
	return m.Provider, m.Name, nil
}

// modelAt is the model endpoint resolves to, with the keys as the
// profile's .env has them now, each request bounded by timeout (<= 0: the
// provider's default).
func (s *Stack) modelAt(endpoint func(getenv func(string) string) (config.Endpoint, error), timeout time.Duration) (turns.Model, error) {
	_ = s.Home.RefreshEnv()
	ep, err := endpoint(os.Getenv)
	if err != nil {
		return turns.Model{}, err
	}
	p, err := NewProvider(ep, timeout)
	if err != nil {
		return turns.Model{}, err
	}
	return turns.Model{Provider: p, Name: ep.Name}, nil
}

// fallbacks is config.yaml's fallback chain as it is now (fallback_providers,
// then fallback_model): each entry built only when a turn turns to it, with
// the key as the profile's .env has it then and model.timeout_seconds.
func (s *Stack) fallbacks() []turns.Fallback {
	cfg, _ := s.watch.current()
	var out []turns.Fallback
	for _, f := range cfg.FallbackChain() {
		timeout := time.Duration(cfg.Model.TimeoutSecs * float64(time.Second))
		out = append(out, turns.Fallback{Label: f.Label(), Resolve: func() (turns.Model, error) { return s.modelAt(f.Endpoint, timeout) }})
	}
	return out
}

// machine is config.yaml's keys for the machine's tools as they are now
// (the last config that loaded, when the file does not load now).
func (s *Stack) machine() tools.Settings {
	cfg, _ := s.watch.current()
	set := ToolsOf(s.Home, cfg)
	set.Messaging = s.messaging(set.Messaging, cfg)
	set.Skills.Plugins = func() []tools.PluginSkill { return PluginSkills(s.Bus) }
	return set
}

// SkillCommands are the commands of the skills offered on platform (name,
// description), less those whose name a registered command has: that
// command wins, as with the familiar agent. /help, the composer and the
// chat platforms' menus list these.
func (s *Stack) SkillCommands(platform string) [][2]string {
	cmds := s.Bus.Commands()
	return slices.DeleteFunc(s.machine().Skills.SkillCommands(platform), func(sc [2]string) bool {
		_, taken := cmds.Lookup(sc[0])
		return taken
	})
}

// PluginSkills are the skills the running plugins ship (register_skill),
// for skill_view("<plugin>:<name>").
func PluginSkills(bus *hooks.Bus) []tools.PluginSkill {
	var out []tools.PluginSkill
	for _, c := range bus.Capabilities(hooks.CapSkill) {
		var spec struct {
			Path        string `json:"path"`
			Description string `json:"description"`
		}
		if json.Unmarshal(c.Spec, &spec) != nil || spec.Path == "" {
			continue
		}
		out = append(out, tools.PluginSkill{Plugin: c.Plugin, Name: c.Name, Path: spec.Path, Description: spec.Description})
	}
	return out
}

// ToolsOf is the agent's tools as cfg, the profile's config.yaml, sets
// them, with this process's environment (its keys left out of commands').
func ToolsOf(home config.Home, cfg config.Config) tools.Settings {
	var platforms map[string][]string
	for p, l := range cfg.PlatformToolsets {
		if platforms == nil {
			platforms = map[string][]string{}
		}
		platforms[p] = l
	}
	return tools.Settings{Toolsets: cfg.Toolsets, PlatformToolsets: platforms, Backend: cfg.Terminal.Backend,
		Cwd: cfg.Terminal.Cwd, Timeout: time.Duration(cfg.Terminal.Timeout) * time.Second, MaxReadChars: cfg.FileReadMaxChars,
		Env: config.CommandEnv(os.Environ(), cfg.Terminal.EnvPassthrough), Protected: []string{home.ConfigPath(), home.EnvPath(), home.StatePath()},
		Secrets: []string{home.EnvPath()}, Memory: MemoryOf(home, cfg),
		Web:       tools.Web{Backend: cfg.Web.Backend, AllowPrivateURLs: cfg.PrivateURLs(), Secrets: secretValues(os.Environ())},
		Messaging: tools.Messaging{Platforms: platformsOf(gatewayOf(cfg))}, Vision: VisionOf(home, cfg), Speech: SpeechOf(home, cfg),
		Skills: SkillsOf(home, cfg), Soul: filepath.Join(home.Dir, "SOUL.md"),
		ContextMaxChars: cfg.ContextFileMaxChars}
}

// LoadSkills is the profile's skills as its config.yaml sets them now.
func LoadSkills(home config.Home) (tools.Skills, error) {
	cfg, _, err := config.Load(home.ConfigPath())
	if err != nil {
		return tools.Skills{}, err
	}
	return SkillsOf(home, cfg), nil
}

// SkillsOf is the profile's skills as cfg sets them (skills.*).
func SkillsOf(home config.Home, cfg config.Config) tools.Skills {
	// Walked only when a skill declares a variable, not at every turn.
	creds := sync.OnceValue(cfg.CredentialVariables)
	return tools.Skills{Dir: home.SkillsDir(), External: cfg.Skills.ExternalDirs, Disabled: cfg.Skills.Disabled,
		PlatformDisabled: cfg.Skills.PlatformDisabled, RefreshEnv: func() { _ = home.RefreshEnv() },
		Managed: func(name string) bool {
			return config.ManagedCredential(name) || slices.Contains(creds(), strings.ToUpper(strings.TrimSpace(name)))
		}}
}

// gatewayOf is cfg's gateway as it runs: its blocks, else the familiar
// .env's tokens.
func gatewayOf(cfg config.Config) config.Gateway {
	g, _ := cfg.GatewayWithFamiliarEnv(os.Getenv)
	return g
}

// secretValues are the values of the keys' and tokens' variables in env
// (config.SecretVariable): what no URL the agent hands out may hold.
func secretValues(env []string) []string {
	var out []string
	for _, kv := range env {
		if name, value, ok := strings.Cut(kv, "="); ok && value != "" && config.SecretVariable(name) {
			out = append(out, value)
		}
	}
	return out
}

// MemoryOf is the profile's curated memory as cfg sets it (memory.*).
func MemoryOf(home config.Home, cfg config.Config) tools.Memory {
	return tools.Memory{Dir: home.MemoriesDir(), MemoryChars: cfg.Memory.MemoryCharLimit, UserChars: cfg.Memory.UserCharLimit,
		MemoryOff: off(cfg.Memory.MemoryEnabled), UserOff: off(cfg.Memory.UserProfileEnabled)}
}

// LoadMemory is the profile's curated memory as its config.yaml sets it
// now.
func LoadMemory(home config.Home) (tools.Memory, error) {
	cfg, _, err := config.Load(home.ConfigPath())
	if err != nil {
		return tools.Memory{}, err
	}
	return MemoryOf(home, cfg), nil
}

// ChangeMemory makes a person's change of m (tools.Memory.Remember or
// Forget, from the window, the dashboard or the command line): a refusal
// is an invalid error, an entry that is not there a not-found one.
func ChangeMemory(m tools.Memory, change func(tools.Memory, string, string) error, target, text string) error {
	if err := change(m, target, text); errors.Is(err, tools.ErrNoEntry) {
		return apperr.New(apperr.NotFound, "%s", err.Error())
	} else if err != nil {
		return apperr.New(apperr.Invalid, "%s", err.Error())
	}
	return nil
}

// off says whether a switch is set to false (unset is on).
func off(b *bool) bool { return b != nil && !*b }

// TellEnds adds a surface of this process that runs some conversations'
// turns (tools.Listener): the notices of their background processes (the
// ends of those started with notify_on_complete, the matches of
// watch_patterns) are handed to it, those that
// display.background_process_notifications (as config.yaml has it then)
// lets through. stop takes it away.
func (s *Stack) TellEnds(l tools.Listener) (stop func()) {
	return s.Processes.Listen(func(owner string) func(tools.Completion) {
		deliver := l(owner)
		if deliver == nil {
			return nil
		}
		return func(c tools.Completion) {
			cfg, _ := s.watch.current()
			if c.Kind == tools.NoticeEnd && !cfg.NotifiesOfEnd(c.Failed()) || c.Kind != tools.NoticeEnd && !cfg.NotifiesWhileRunning() {
				s.log.Info("a background process's notice; display.background_process_notifications leaves it untold",
					"process", c.ID, "kind", c.Kind, "exit_code", c.ExitCode, "mode", cfg.ProcessNotifications())
				return
			}
			deliver(c)
		}
	})
}
