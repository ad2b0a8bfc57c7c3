package app

import (
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/samber/lo"

	"atrium/backend/apperr"
	"atrium/backend/approvals"
	"atrium/backend/config"
	"atrium/backend/dotenv"
	"atrium/backend/limits"
	"atrium/backend/plugins"
	"atrium/backend/stack"
	"atrium/backend/tools"
)

// Settings reads and writes the editable keys of the profile's config.yaml,
// and the profile opened next time.
type Settings struct {
	home      config.Home
	standing  *approvals.Standing
	platform  string
	version   string
	ready     func()
	readyOnce sync.Once
}

// NewSettings binds the config file of st's profile; ready (may be nil) runs
// once, when the UI reports its first paint.
func NewSettings(st *stack.Stack, platform, version string, ready func()) *Settings {
	return &Settings{home: st.Home, standing: st.Standing, platform: platform, version: version, ready: ready}
}

// Ready is the UI saying its first page is painted: work kept back so the
// window paints sooner (starting plugin processes) may begin. Only the first
// call counts.
func (s *Settings) Ready() {
	s.readyOnce.Do(func() {
		if s.ready != nil {
			s.ready()
		}
	})
}

// Info tells the UI which build, surface, profile and home it shows.
func (s *Settings) Info() InfoDTO {
	return InfoDTO{Version: s.version, Platform: s.platform, Profile: s.home.Profile, Home: s.home.Dir}
}

// Get returns the settings as config.yaml has them now (defaults filled).
func (s *Settings) Get() (SettingsDTO, error) {
	cfg, _, err := config.Load(s.home.ConfigPath())
	if err != nil {
		return SettingsDTO{}, err
	}
	return SettingsDTO{HookTimeoutSeconds: cfg.HookTimeout().Seconds(), RetentionDays: cfg.RetentionDays(),
		ApprovalsMode: lo.ToPtr(cfg.ApprovalsMode()), ApprovalTimeoutSeconds: lo.ToPtr(cfg.Approvals.Timeout),
		ApprovalsReviewerModel: lo.ToPtr(strings.TrimSpace(cfg.Auxiliary.Approval.Model)), ApprovalsSmartPolicy: lo.ToPtr(cfg.Approvals.SmartPolicy),
		ArchiveIdleDays: cfg.Sessions.ArchiveIdleDays, TrashDays: lo.ToPtr(cfg.TrashDays()), TrashAutomatic: lo.ToPtr(cfg.TrashAutomatic()),
		AutoPrune: lo.ToPtr(cfg.Sessions.AutoPrune), Profile: config.StartupProfile(s.home.Root),
		Profiles: config.Profiles(s.home.Root), Model: lo.ToPtr(s.modelSettings(cfg)), Tools: lo.ToPtr(s.toolsSettings(cfg))}, nil
}

// toolsSettings is the agent's tools as config.yaml has them.
func (s *Settings) toolsSettings(cfg config.Config) ToolsSettingsDTO {
	on, _ := tools.Settings{Toolsets: cfg.Toolsets}.Enabled("")
	listed, _ := tools.Listed(cfg.Toolsets)
	out := ToolsSettingsDTO{Terminal: on["terminal"], Files: on["read_file"], Memory: on[tools.MemoryTool], Cwd: cfg.Terminal.Cwd,
		TimeoutSeconds: cfg.Terminal.Timeout, MaxTurns: cfg.Agent.MaxTurns, OwnLists: append([]string{}, slices.Sorted(maps.Keys(cfg.PlatformToolsets))...)}
	out.Problem = tools.Settings{Backend: cfg.Terminal.Backend}.TerminalProblem()
	_ = s.home.RefreshEnv() // a key set by another process since counts
	web := tools.Web{Backend: cfg.Web.Backend}
	out.Web, out.WebBackend = listed[tools.WebSearchTool] || listed[tools.WebExtractTool], strings.ToLower(strings.TrimSpace(cfg.Web.Backend))
	out.WebProvider, out.WebKey, out.WebProblem = web.Provider(), s.keyStatus(web.KeyVariable()), web.Problem()
	out.ProcessEnds, out.ToolProgress = cfg.ProcessNotifications(), cfg.ToolProgressMode()
	return out
}

// toolsEdits are the edits of config.yaml that make it say in: toolsets
// names the two switches (the familiar agent's other toolsets in the list
// are kept), and a key at its default goes rather than say it.
func toolsEdits(cfg config.Config, in ToolsSettingsDTO) []plugins.ConfigEdit {
	var list []string
	for _, n := range cfg.Toolsets {
		if _, ours, _ := tools.Toolset(n); !ours {
			list = append(list, n) // a toolset of tools Atrium does not have (browser, image_gen, ...)
		}
	}
	if in.Terminal {
		list = append(list, "terminal")
	}
	if in.Files {
		list = append(list, "file")
	}
	if in.Memory {
		list = append(list, tools.MemoryTool)
	}
	if in.Web {
		list = append(list, "web")
	}
	// What has no switch is kept as it was: recall, the task list, the
	// person's answer, the subagents, messages to chat platforms, the look
	// at an image, speech, the skills.
	on, _ := tools.Listed(cfg.Toolsets)
	for _, kept := range []string{tools.SessionSearch, tools.TodoTool, tools.ClarifyTool} {
		if on[kept] && !slices.Contains(list, kept) {
			list = append(list, kept)
		}
	}
	if on[tools.DelegateTool] && !slices.Contains(list, tools.DelegateToolset) {
		list = append(list, tools.DelegateToolset)
	}
	if on[tools.SendMessageTool] && !slices.Contains(list, "messaging") {
		list = append(list, "messaging")
	}
	if on[tools.VisionAnalyzeTool] && !slices.Contains(list, "vision") {
		list = append(list, "vision")
	}
	if on[tools.TextToSpeechTool] && !slices.Contains(list, "tts") {
		list = append(list, "tts")
	}
	if on[tools.SkillViewTool] && !slices.Contains(list, "skills") {
		list = append(list, "skills")
	}
	var toolsets any = list
	if in.Terminal && in.Files && in.Memory && in.Web && cfg.Toolsets == nil {
		toolsets = nil // the default: all of them
	}
	orNil := func(n int) any {
		if n == 0 {
			return nil
		}
		return n
	}
	var cwd any = strings.TrimSpace(in.Cwd)
	if cwd == "" {
		cwd = nil
	}
	var backend any = strings.ToLower(strings.TrimSpace(in.WebBackend))
	if backend == "" {
		backend = nil // the provider whose key is set
	}
	edits := []plugins.ConfigEdit{{Section: "toolsets", Value: toolsets}, {Section: "web", Key: "backend", Value: backend}, {Section: "terminal", Key: "cwd", Value: cwd},
		{Section: "terminal", Key: "timeout", Value: orNil(in.TimeoutSeconds)}, {Section: "agent", Key: "max_turns", Value: orNil(in.MaxTurns)}}
	edits = append(edits, displayEdit("background_process_notifications", in.ProcessEnds, cfg.ProcessNotifications(), config.NotifyAll)...)
	return append(edits, displayEdit("tool_progress", in.ToolProgress, cfg.ToolProgressMode(), config.ProgressAll)...)
}

// displayEdit sets display.key to mode ("" leaves it) when config.yaml
// says another now; all, the default, goes rather than be said.
func displayEdit(key, mode, now, all string) []plugins.ConfigEdit {
	m := strings.ToLower(strings.TrimSpace(mode))
	if m == "" || m == now {
		return nil
	}
	var v any = m
	if m == all {
		v = nil
	}
	return []plugins.ConfigEdit{{Section: "display", Key: key, Value: v}}
}

// reviewerEdits are smart mode's reviewer keys of in: its model and the
// operator's rules ("" removes the key).
func reviewerEdits(in SettingsDTO) ([]plugins.ConfigEdit, error) {
	var edits []plugins.ConfigEdit
	if m := in.ApprovalsReviewerModel; m != nil {
		model := strings.TrimSpace(*m)
		if len(model) > 200 || strings.ContainsAny(model, "\n\r") {
			return nil, apperr.New(apperr.Invalid, "auxiliary.approval.model is one model's name (at most 200 characters), not %s", limits.Echo(model))
		}
		edits = append(edits, plugins.ConfigEdit{Path: []string{"auxiliary", "approval", "model"}, Value: lo.Ternary[any](model == "", nil, model)})
	}
	if p := in.ApprovalsSmartPolicy; p != nil {
		policy := strings.TrimSpace(strings.ReplaceAll(*p, "\r\n", "\n"))
		if n := utf8.RuneCountInString(policy); n > 4000 {
			return nil, apperr.New(apperr.Invalid, "approvals.smart_policy is at most 4000 characters, not %d", n)
		}
		edits = append(edits, plugins.ConfigEdit{Section: "approvals", Key: "smart_policy", Value: lo.Ternary[any](policy == "", nil, policy)})
	}
	return edits, nil
}

// Set writes the settings; an invalid value changes nothing. The config
// keys apply at once in every running process of the profile (the model at
// the next turn, approvals at the next ask), the startup profile at the next
// launch. An empty Profile leaves the startup profile as it is.
func (s *Settings) Set(in SettingsDTO) (SettingsDTO, error) {
	if in.Profile != "" {
		if _, err := s.home.ForProfile(in.Profile); err != nil {
			return SettingsDTO{}, err
		}
	}
	if in.TrashDays != nil && (*in.TrashDays < 0 || *in.TrashDays > 3650) {
		return SettingsDTO{}, apperr.New(apperr.Invalid, "trash_days must be 0 (delete at once) to 3650, not %d", *in.TrashDays)
	}
	edits := []plugins.ConfigEdit{
		{Section: "plugins", Key: "hook_callback_timeout", Value: in.HookTimeoutSeconds},
		{Section: "sessions", Key: "retention_days", Value: in.RetentionDays},
		{Section: "sessions", Key: "archive_idle_days", Value: in.ArchiveIdleDays},
	}
	if in.TrashDays != nil {
		edits = append(edits, plugins.ConfigEdit{Section: "sessions", Key: "trash_days", Value: *in.TrashDays})
	}
	if in.TrashAutomatic != nil {
		edits = append(edits, plugins.ConfigEdit{Section: "sessions", Key: "trash_automatic", Value: *in.TrashAutomatic})
	}
	if in.AutoPrune != nil {
		edits = append(edits, plugins.ConfigEdit{Section: "sessions", Key: "auto_prune", Value: *in.AutoPrune})
	}
	if in.ApprovalsMode != nil {
		edits = append(edits, plugins.ConfigEdit{Section: "approvals", Key: "mode", Value: strings.ToLower(*in.ApprovalsMode)})
	}
	if in.ApprovalTimeoutSeconds != nil {
		// 0 is the surfaces' default: the key goes rather than say 0.
		var v any = *in.ApprovalTimeoutSeconds
		if *in.ApprovalTimeoutSeconds == 0 {
			v = nil
		}
		edits = append(edits, plugins.ConfigEdit{Section: "approvals", Key: "timeout", Value: v})
	}
	more, err := reviewerEdits(in)
	if err != nil {
		return SettingsDTO{}, err
	}
	edits = append(edits, more...)
	if in.Tools != nil {
		cfg, _, err := config.Load(s.home.ConfigPath())
		if err != nil {
			return SettingsDTO{}, err
		}
		if t := in.Tools.TimeoutSeconds; t < 0 || t > 600 {
			return SettingsDTO{}, apperr.New(apperr.Invalid, "terminal.timeout must be 1 to 600 seconds (0: 180), not %d", t)
		}
		if n := in.Tools.MaxTurns; n < 0 || n > 10000 {
			return SettingsDTO{}, apperr.New(apperr.Invalid, "agent.max_turns must be 1 to 10000 (0: 90), not %d", n)
		}
		if c := strings.TrimSpace(in.Tools.Cwd); c != "" && c != "." && !filepath.IsAbs(c) && c != "~" && !strings.HasPrefix(c, "~/") {
			return SettingsDTO{}, apperr.New(apperr.Invalid, "terminal.cwd must be an absolute folder (or ~/...), not %q", c)
		}
		if b := strings.ToLower(strings.TrimSpace(in.Tools.WebBackend)); b != "" && !slices.Contains(tools.WebBackends, b) &&
			b != strings.ToLower(strings.TrimSpace(cfg.Web.Backend)) {
			return SettingsDTO{}, apperr.New(apperr.Invalid, "web.backend must be firecrawl or tavily (or empty: the provider whose key is set), not %q", b)
		}
		switch m := strings.ToLower(strings.TrimSpace(in.Tools.ProcessEnds)); m {
		case "", config.NotifyAll, config.NotifyResult, config.NotifyError, config.NotifyOff:
		default:
			return SettingsDTO{}, apperr.New(apperr.Invalid, "display.background_process_notifications must be all, result, error or off, not %q", m)
		}
		switch m := strings.ToLower(strings.TrimSpace(in.Tools.ToolProgress)); m {
		case "", config.ProgressAll, config.ProgressNew, config.ProgressVerbose, config.ProgressLog, config.ProgressOff:
		default:
			return SettingsDTO{}, apperr.New(apperr.Invalid, "display.tool_progress must be all, new, verbose, log or off, not %q", m)
		}
		edits = append(edits, toolsEdits(cfg, *in.Tools)...)
	}
	if in.Model != nil {
		cfg, _, err := config.Load(s.home.ConfigPath())
		if err != nil {
			return SettingsDTO{}, err
		}
		more, err := modelEdits(cfg, *in.Model)
		if err != nil {
			return SettingsDTO{}, err
		}
		edits = append(edits, more...)
	}
	if err := plugins.EditConfig(s.home.ConfigPath(), edits...); err != nil {
		return SettingsDTO{}, err
	}
	if in.Profile != "" && in.Profile != config.StartupProfile(s.home.Root) {
		if err := config.SetStartupProfile(s.home.Root, in.Profile); err != nil {
			return SettingsDTO{}, err
		}
	}
	return s.Get()
}

// Memory is the agent's curated memory as its files hold it now.
func (s *Settings) Memory() (MemoryDTO, error) {
	m, err := stack.LoadMemory(s.home)
	if err != nil {
		return MemoryDTO{}, err
	}
	file := func(target string) MemoryFileDTO {
		f, err := m.File(target)
		out := MemoryFileDTO{Target: f.Target, Path: f.Path, Entries: f.Entries, Chars: f.Chars, Limit: f.Limit, Off: f.Off}
		if err != nil {
			out.Error = err.Error()
		}
		return out
	}
	return MemoryDTO{Notes: file(tools.TargetMemory), User: file(tools.TargetUser)}, nil
}

// Remember adds an entry as the memory tool would (within the file's
// budget, refusing text that would steer the model): every conversation
// started from now on has it.
func (s *Settings) Remember(in MemoryRequest) (MemoryDTO, error) {
	return s.changeMemory(in, tools.Memory.Remember)
}

// Forget removes the entry that is exactly in.Text.
func (s *Settings) Forget(in MemoryRequest) (MemoryDTO, error) {
	return s.changeMemory(in, tools.Memory.Forget)
}

func (s *Settings) changeMemory(in MemoryRequest, change func(tools.Memory, string, string) error) (MemoryDTO, error) {
	if n := len(in.Text); n > maxMemoryEntry {
		return MemoryDTO{}, limits.TooLarge("the entry", int64(n), maxMemoryEntry, "a memory entry")
	}
	m, err := stack.LoadMemory(s.home)
	if err != nil {
		return MemoryDTO{}, err
	}
	if err := stack.ChangeMemory(m, change, in.Target, in.Text); err != nil {
		return MemoryDTO{}, err
	}
	return s.Memory()
}

// Skills is the profile's skills as the window's conversations are offered
// them.
func (s *Settings) Skills() (SkillsDTO, error) {
	sk, err := stack.LoadSkills(s.home)
	if err != nil {
		return SkillsDTO{}, err
	}
	_ = s.home.RefreshEnv() // a key set by another process since counts
	infos, problems := sk.Listing("desktop")
	out := SkillsDTO{Dir: sk.Dir, Skills: make([]SkillDTO, 0, len(infos)), Problems: problems}
	for _, i := range infos {
		d := SkillDTO{Name: i.Name, Description: i.Description, Category: i.Category, Path: i.Path,
			External: i.External, NotOffered: i.NotOffered, Disabled: slices.Contains(sk.Disabled, i.Name), Needs: []EnvNeedDTO{}}
		for _, e := range i.Env {
			if slices.Contains(i.Missing, e.Name) {
				d.Needs = append(d.Needs, skillNeed(e))
			}
		}
		out.Skills = append(out.Skills, d)
	}
	if out.Problems == nil {
		out.Problems = []string{}
	}
	return out, nil
}

// Skill is a skill's SKILL.md, or one of the files beside it, as the model
// loads it.
func (s *Settings) Skill(in SkillRequest) (SkillViewDTO, error) {
	sk, err := stack.LoadSkills(s.home)
	if err != nil {
		return SkillViewDTO{}, err
	}
	out := sk.View(in.Name, in.File, "")
	if out["success"] != true {
		return SkillViewDTO{}, apperr.New(apperr.NotFound, "%v", out["error"])
	}
	v := SkillViewDTO{Name: fmt.Sprint(out["name"]), File: in.File, Binary: out["is_binary"] == true}
	v.Content, _ = out["content"].(string)
	v.Linked, _ = out["linked_files"].(map[string][]string)
	return v, nil
}

// skillNeed is a variable a skill needs, as the window asks for it: its
// prompt and what it is for, and its help as a link when it is one.
func skillNeed(e tools.SkillEnv) EnvNeedDTO {
	n := EnvNeedDTO{Name: e.Name, Description: e.Prompt, Secret: true}
	if e.RequiredFor != "" {
		n.Description += " (for " + e.RequiredFor + ")"
	}
	if u, err := url.Parse(e.Help); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && !strings.ContainsAny(e.Help, " \t") {
		n.URL = e.Help
	} else if e.Help != "" {
		n.Description += ". " + e.Help
	}
	return n
}

// SetSkillKey keeps a value for a variable the skill declares in the
// profile's .env ("" removes it), as the familiar agent asks for it when
// the skill is loaded; the value is never returned or logged. A variable
// that changes how programs start (PATH, LD_PRELOAD, PYTHONPATH, ...) is
// refused whatever the skill declares. The conversations that load the
// skill from now on get it.
func (s *Settings) SetSkillKey(in SkillKeyRequest) (SkillsDTO, error) {
	sk, err := stack.LoadSkills(s.home)
	if err != nil {
		return SkillsDTO{}, err
	}
	infos, _ := sk.Listing("")
	i := slices.IndexFunc(infos, func(i tools.SkillInfo) bool { return i.Name == strings.TrimSpace(in.Skill) })
	if i < 0 {
		return SkillsDTO{}, apperr.New(apperr.NotFound, "no skill %q in %s", limits.Echo(in.Skill), sk.Dir)
	}
	if !slices.ContainsFunc(infos[i].Env, func(e tools.SkillEnv) bool { return e.Name == in.Name }) || config.ProgramVariable(in.Name) || !dotenv.ValidName(in.Name) ||
		sk.Managed != nil && sk.Managed(in.Name) {
		return SkillsDTO{}, apperr.New(apperr.Invalid, "%s does not declare %s among its variables (required_environment_variables), or it is one that is never written here "+
			"(one of Atrium's own keys, as the model's, is set where that key is, never for a skill)", infos[i].Name, limits.Echo(in.Name))
	}
	if err := keepKey(s.home, in.Name, in.Value); err != nil {
		return SkillsDTO{}, err
	}
	return s.Skills()
}

// OfferSkill takes a skill off skills.disabled (offered) or puts it on:
// every conversation started from now on, on every platform, sees the
// change.
func (s *Settings) OfferSkill(in SkillRequest) (SkillsDTO, error) {
	name := strings.TrimSpace(in.Name)
	sk, err := stack.LoadSkills(s.home)
	if err != nil {
		return SkillsDTO{}, err
	}
	if infos, _ := sk.Listing(""); !in.Offered && !slices.ContainsFunc(infos, func(i tools.SkillInfo) bool { return i.Name == name }) {
		return SkillsDTO{}, apperr.New(apperr.NotFound, "no skill %q in %s", limits.Echo(name), sk.Dir)
	}
	err = plugins.UpdateConfigPath(s.home.ConfigPath(), []string{"skills", "disabled"}, func(current any) (any, error) {
		var list []string
		if cur, ok := current.([]any); ok {
			for _, v := range cur {
				if n, ok := v.(string); ok && n != name {
					list = append(list, n)
				}
			}
		}
		if !in.Offered {
			list = append(list, name)
		}
		if list == nil {
			return []string{}, nil
		}
		return list, nil
	})
	if err != nil {
		return SkillsDTO{}, err
	}
	return s.Skills()
}

// maxMemoryEntry bounds an entry a person sends (the files' budgets are far
// smaller; this bounds the work of checking it).
const maxMemoryEntry = 64 << 10

// StandingApprovals lists the rules a person allowed "always".
func (s *Settings) StandingApprovals() StandingApprovalsDTO {
	rules, err := s.standing.List()
	out := StandingApprovalsDTO{Rules: rules, Path: s.standing.Path()}
	if err != nil {
		out.Error = err.Error()
	}
	return out
}

// RevokeStandingApproval takes rule off the list: the next ask of it, in
// any process of the profile, asks the person again. A rule not on the list
// is not found.
func (s *Settings) RevokeStandingApproval(rule string) (StandingApprovalsDTO, error) {
	found, err := s.standing.Revoke(rule)
	if err != nil {
		return StandingApprovalsDTO{}, err
	}
	if !found {
		return StandingApprovalsDTO{}, apperr.New(apperr.NotFound, "%s is not a standing approval", limits.Echo(rule))
	}
	return s.StandingApprovals(), nil
}
