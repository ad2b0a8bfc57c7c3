// Package tools is the agent's hands on the machine it runs on: the
// terminal and the file tools (read_file, write_file, patch, search_files),
// under the familiar agent's names, arguments and result shapes, so a
// model prompted for that agent and a plugin that guards its calls
// (pre_tool_call on tool_name "terminal", args["command"]) work unchanged.
//
// Which of them a turn offers is config.yaml's toolsets and
// platform_toolsets, as the familiar agent has them. Every result is a JSON
// object the model reads; a tool never fails a turn.
package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Tool is one of the machine's tools.
type Tool struct {
	Name    string
	Toolset string // terminal or file
	// Description and Parameters are what the model is offered (an OpenAI
	// function's description and its JSON schema).
	Description string
	Parameters  string
	// Writes says the tool changes files (write_file, patch): it never
	// writes the profile's own config.yaml, .env or store.
	Writes bool
	run    func(ctx context.Context, c *Call) any
}

// Call is one call of a tool.
type Call struct {
	Args map[string]any
	// Dir is the conversation's working directory (absolute); a relative
	// path is taken from it. A terminal command's cd carries over to the
	// conversation's next call (NewDir).
	Dir string
	// NewDir is the directory a terminal command ended in ("" when it did
	// not say).
	NewDir   string
	Settings Settings
	// Processes keeps background processes (nil: none can be started);
	// Owner is the conversation they belong to (its session key).
	Processes *Processes
	Owner     string
	// Platform is the conversation's platform (cli, desktop, telegram,
	// ...; "": not known).
	Platform string
	// Changed are the files the call wrote, moved or deleted (write_file,
	// patch).
	Changed []string
	// AskSecret asks the person at the surface for a variable a skill
	// being loaded needs (nil: nobody can be asked unseen here).
	AskSecret SecretAsker
	// Granted are the variables the conversation's loaded skills declared
	// (Grants), which its commands get; Grants are those a skill loaded
	// by this call declared.
	Granted, Grants []string
	// Transform, when set, may replace a terminal command's output before
	// the model reads it (transform_terminal_output); what it returns is
	// bounded as the output is.
	Transform func(command, output string, exitCode int) string
}

// Run runs the tool: its result as the JSON text the model reads.
func (t Tool) Run(ctx context.Context, c *Call) string {
	if c.Args == nil {
		c.Args = map[string]any{}
	}
	b, err := json.Marshal(t.run(ctx, c))
	if err != nil { // every result is built of plain values
		return `{"error":"the result could not be written as JSON"}`
	}
	return string(b)
}

// All is every tool of the machine, in the order they are offered.
func All() []Tool {
	return []Tool{terminalTool(), processTool(), readFileTool(), writeFileTool(), patchTool(), searchFilesTool(), webSearchTool(), webExtractTool(),
		sendMessageTool(), visionAnalyzeTool(), textToSpeechTool(), skillsListTool(), skillViewTool(), skillManageTool()}
}

// Names is the names of All.
func Names() []string {
	var out []string
	for _, t := range All() {
		out = append(out, t.Name)
	}
	return out
}

// SessionSearch is the model's recall of past conversations: a tool of the
// store (the turn loop runs it), chosen by toolsets as the machine's are.
const SessionSearch = "session_search"

// Offered is every tool name toolsets can offer: the machine's, the
// store's, the curated memory, the task list, the person's answer and
// the subagents.
func Offered() []string {
	return append(Names(), SessionSearch, MemoryTool, TodoTool, ClarifyTool, DelegateTool)
}

// Settings are config.yaml's keys for the machine's tools, as the familiar
// agent names them.
type Settings struct {
	// Toolsets is toolsets: the toolsets every platform offers (default:
	// all of them, as hermes-cli).
	Toolsets []string
	// PlatformToolsets is platform_toolsets: a platform's own list, over
	// Toolsets (cli, telegram, discord, ...; the window and the dashboard
	// take cli's when they have none of their own).
	PlatformToolsets map[string][]string
	// Backend is terminal.backend: local ("" too) is the only one Atrium
	// has; with any other (docker, ssh, modal, ...) the terminal is not
	// offered rather than run on this machine unsandboxed.
	Backend string
	// Cwd is terminal.cwd: where a conversation's commands start (default:
	// the command line's own folder in a terminal, the home folder
	// elsewhere).
	Cwd string
	// Timeout is terminal.timeout: a command's time when the model names
	// none (default 180 s).
	Timeout time.Duration
	// MaxReadChars is file_read_max_chars (default 100,000): a longer read
	// is refused, and the model told to read a range.
	MaxReadChars int
	// Env is the environment commands run with (nil: this process's, the
	// profile's keys and tokens left out).
	Env []string
	// Protected are files no tool writes: the profile's config.yaml (its
	// standing approvals among them), .env and store.
	Protected []string
	// Secrets are files no tool reads either: the profile's .env, where its
	// keys and tokens are (they are for the model's provider and the chat
	// platforms, not for the model).
	Secrets []string
	// Memory is the curated memory (memory.*): the memory tool's files
	// and budgets.
	Memory Memory
	// Web is the web tools' provider (web.backend, its key) and what
	// web_extract may name (security.allow_private_urls).
	Web Web
	// Messaging is how send_message reaches the chat platforms.
	Messaging Messaging
	// Vision is how vision_analyze reaches a model that can see.
	Vision Vision
	// Speech is how text_to_speech reaches a provider that speaks.
	Speech Speech
	// Skills are the profile's skills (skills.*): what skills_list,
	// skill_view and skill_manage read and write.
	Skills Skills
	// Soul is the profile's SOUL.md: the persona that opens a
	// conversation's system prompt (SoulPrompt).
	Soul string
	// ContextMaxChars is context_file_max_chars: a context file's budget
	// (0: from the model's context window, ContextBudget).
	ContextMaxChars int
}

// secret says whether path is one of Settings.Secrets (through a link
// too).
func (s Settings) secret(path string) bool {
	_, ok := listed(path, s.Secrets, false)
	return ok
}

// secretNames are the file names a secret can have (its own and its
// link's target's): a search resolves links only for files so named.
func (s Settings) secretNames() map[string]bool {
	names := map[string]bool{}
	for _, p := range s.Secrets {
		if p == "" {
			continue
		}
		names[filepath.Base(p)] = true
		if r, err := filepath.EvalSymlinks(p); err == nil {
			names[filepath.Base(r)] = true
		}
	}
	return names
}

// Defaults of Settings.
const (
	DefaultTimeout      = 180 * time.Second
	MaxTimeout          = 600 * time.Second
	DefaultMaxReadChars = 100_000
)

// toolsetsOf are the toolsets Atrium has, and the composite ones of the
// familiar agent that take them in.
var toolsetsOf = map[string][]string{
	"terminal":      {"terminal", "process"},
	"file":          {"read_file", "write_file", "patch", "search_files"},
	"debugging":     {"terminal", "process", "read_file", "write_file", "patch", "search_files"},
	SessionSearch:   {SessionSearch},
	MemoryTool:      {MemoryTool},
	TodoTool:        {TodoTool},
	ClarifyTool:     {ClarifyTool},
	DelegateToolset: {DelegateTool},
	"web":           {WebSearchTool, WebExtractTool},
	"search":        {WebSearchTool},
	"messaging":     {SendMessageTool},
	"vision":        {VisionAnalyzeTool},
	"tts":           {TextToSpeechTool},
	"skills":        {SkillsListTool, SkillViewTool, SkillManageTool},
}

// elsewhere are the familiar agent's toolsets of tools Atrium does not have
// (a browser, image generation, ...): named in a list, they
// offer nothing and are not an error.
var elsewhere = []string{"browser", "image_gen",
	"code_execution", "cronjob", "moa", "rl", "homeassistant",
	"safe", "research", "spotify", "kanban", "discord", "feishu", "mcp", "computer_use"}

// Toolset is what name stands for in a toolsets list: the tools it offers
// and true when Atrium resolves it (all, *, hermes-*, one of its toolsets,
// or one of its tools named alone); known says the name is one of the
// familiar agent's toolsets of tools Atrium does not have (a browser, image generation,
// ...), which offers nothing and is no mistake.
func Toolset(name string) (tools []string, ours, known bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch {
	case n == "all" || n == "*" || strings.HasPrefix(n, "hermes-"):
		return Offered(), true, true
	case toolsetsOf[n] != nil:
		return toolsetsOf[n], true, true
	case slices.Contains(Offered(), n):
		return []string{n}, true, true // a tool named alone, as the familiar agent accepts
	}
	return nil, false, slices.Contains(elsewhere, n)
}

// TerminalProblem says why the terminal is not offered whatever toolsets
// say: a terminal.backend Atrium has not ("" when it has it).
func (s Settings) TerminalProblem() string {
	if s.Backend == "" || strings.EqualFold(s.Backend, "local") {
		return ""
	}
	return "terminal.backend: " + s.Backend + " is not a backend Atrium has (only local): the terminal is not offered"
}

// Enabled is the set of tools a turn on platform offers, and a warning for
// each name in the lists that is no toolset at all.
func (s Settings) Enabled(platform string) (map[string]bool, []string) {
	list := s.listOf(platform)
	on, warnings := Listed(list)
	// A tool that cannot work here is not offered, said only where the
	// list names it (or its toolset): the web tools without a provider (as
	// the familiar agent checks for a key), send_message without a chat
	// platform, vision_analyze without a model that can see,
	// text_to_speech without a provider that can speak.
	for _, c := range []struct {
		problem string
		tools   []string
		names   []string
	}{
		{s.Web.Problem(), []string{WebSearchTool, WebExtractTool}, []string{"web", "search"}},
		{s.Messaging.Problem(), []string{SendMessageTool}, []string{"messaging"}},
		{s.Vision.Problem(), []string{VisionAnalyzeTool}, []string{"vision"}},
		{s.Speech.Problem(), []string{TextToSpeechTool}, []string{"tts"}},
		{s.Skills.Problem(), []string{SkillsListTool, SkillViewTool, SkillManageTool}, []string{"skills"}},
	} {
		if c.problem == "" || !slices.ContainsFunc(c.tools, func(t string) bool { return on[t] }) {
			continue
		}
		for _, t := range c.tools {
			delete(on, t)
		}
		if slices.ContainsFunc(list, func(name string) bool {
			n := strings.ToLower(strings.TrimSpace(name))
			return slices.Contains(c.names, n) || slices.Contains(c.tools, n)
		}) {
			warnings = append(warnings, c.problem)
		}
	}
	if problem := s.TerminalProblem(); on["terminal"] && problem != "" {
		delete(on, "terminal")
		delete(on, "process")
		warnings = append(warnings, problem)
	}
	return on, warnings
}

// listOf is the toolsets list a platform's turns follow: its own in
// platform_toolsets (the window and the dashboard take cli's), else
// toolsets, else all.
func (s Settings) listOf(platform string) []string {
	list, ok := s.PlatformToolsets[platform]
	if !ok && (platform == "desktop" || platform == "dashboard") {
		list, ok = s.PlatformToolsets["cli"]
	}
	if !ok {
		list, ok = s.Toolsets, s.Toolsets != nil
	}
	if !ok {
		list = []string{"all"}
	}
	return list
}

// Listed is the tools a platform's toolsets list names, whether or not
// each can be offered here.
func (s Settings) Listed(platform string) map[string]bool {
	on, _ := Listed(s.listOf(platform))
	return on
}

// Listed is the tools a toolsets list names (nil: all of them), whether
// or not each can be offered here (a terminal backend, a web provider's
// key), and a warning for each name that is no toolset at all.
func Listed(list []string) (map[string]bool, []string) {
	if list == nil {
		list = []string{"all"}
	}
	on := map[string]bool{}
	var warnings []string
	for _, name := range list {
		names, ours, known := Toolset(name)
		for _, t := range names {
			on[t] = true
		}
		if !ours && !known {
			warnings = append(warnings, "toolsets: no toolset "+name+" (Atrium has terminal, file, web, messaging, vision, tts, skills, memory, todo, session_search, clarify and delegation; all, debugging and hermes-* take them in)")
		}
	}
	return on, warnings
}

// StartDir is where a conversation on platform starts: terminal.cwd, else
// the command line's folder in a terminal, else the home folder.
func (s Settings) StartDir(platform string) string {
	cwd := strings.TrimSpace(s.Cwd)
	if cwd != "" && cwd != "." && cwd != "auto" && cwd != "cwd" {
		if p := expandHome(cwd); filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
	}
	if platform == "cli" {
		if wd, err := os.Getwd(); err == nil {
			return wd
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		return home
	}
	return string(filepath.Separator)
}

func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}

// keyed keeps a value for each conversation (its key) while the process
// runs, the newest maxDirs conversations' at most.
type keyed[V any] struct {
	mu    sync.Mutex
	m     map[string]V
	order []string // oldest first, bounded
}

const maxDirs = 4096

func (k *keyed[V]) get(key string) V {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.m[key]
}

// update sets key's value to what change makes of it.
func (k *keyed[V]) update(key string, change func(V) V) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]V{}
	}
	if _, ok := k.m[key]; !ok {
		k.order = append(k.order, key)
		if len(k.order) > maxDirs {
			delete(k.m, k.order[0])
			k.order = k.order[1:]
		}
	}
	k.m[key] = change(k.m[key])
}

// Dirs keeps each conversation's working directory while the process
// runs, so that a cd in one command holds for the next, as in a terminal.
type Dirs struct{ k keyed[string] }

// Get is key's directory ("" when none was kept).
func (d *Dirs) Get(key string) string { return d.k.get(key) }

// Set keeps key's directory.
func (d *Dirs) Set(key, dir string) { d.k.update(key, func(string) string { return dir }) }

// Move gives to's the directory from had (a conversation that goes on in
// another session); nothing when from had none.
func (d *Dirs) Move(from, to string) {
	if dir := d.Get(from); dir != "" {
		d.Set(to, dir)
	}
}

// Grants keeps, for each conversation, the variables its loaded skills
// declared (required_environment_variables): its terminal commands get
// them from this process although they are keys' variables, which commands
// are not given otherwise (config.CommandEnv), as the familiar agent's
// sandbox passes a loaded skill's variables through.
type Grants struct{ k keyed[[]string] }

// Get is key's granted variables.
func (g *Grants) Get(key string) []string { return slices.Clone(g.k.get(key)) }

// Add grants key names as well.
func (g *Grants) Add(key string, names ...string) {
	if len(names) == 0 {
		return
	}
	g.k.update(key, func(had []string) []string {
		for _, n := range names {
			if !slices.Contains(had, n) {
				had = append(had, n)
			}
		}
		return had
	})
}

// Move gives to's the grants from had (a conversation that goes on in
// another session).
func (g *Grants) Move(from, to string) { g.Add(to, g.Get(from)...) }

// resolve is path as the tool reads it: ~ expanded, a relative one taken
// from the conversation's directory.
func (c *Call) resolve(path string) string {
	p := expandHome(strings.TrimSpace(path))
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.Dir, p)
	}
	return filepath.Clean(p)
}

// str, integer and boolean read an argument as the model sent it (numbers
// and switches may come as text).
func (c *Call) str(name string) (string, bool) {
	v := c.Args[name]
	return text(v), v != nil
}

// text is a value the model sent, as text: a string as it is, nothing as
// "", anything else as its JSON.
func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// list is a list argument as a model sends it: a list, or the JSON text
// of one (false: neither).
func list(v any) ([]any, bool) {
	l, ok := v.([]any)
	if s, isText := v.(string); isText {
		ok = json.Unmarshal([]byte(s), &l) == nil
	}
	return l, ok
}

// Int reads a whole-number argument as a model sends it (a number, or
// text), def when it is missing or no number.
func Int(args map[string]any, name string, def int) int {
	return (&Call{Args: args}).integer(name, def)
}

func (c *Call) integer(name string, def int) int { return intValue(c.Args[name], def) }

// intValue is a whole number as a model sends it (a number, or text), def
// when it is none.
func intValue(v any, def int) int {
	switch v := v.(type) {
	case float64:
		return int(v)
	case int:
		return v
	case int64:
		return int(v)
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return int(i)
		}
	case string:
		var n json.Number = json.Number(strings.TrimSpace(v))
		if i, err := n.Int64(); err == nil {
			return int(i)
		}
	}
	return def
}

func (c *Call) boolean(name string) bool {
	switch v := c.Args[name].(type) {
	case bool:
		return v
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "1", "true", "yes", "on":
			return true
		}
	}
	return false
}

// failure is a result that says what went wrong.
func failure(msg string) map[string]any { return map[string]any{"error": msg} }
