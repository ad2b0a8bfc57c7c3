package tools

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"

	"atrium/backend/atomicfile"
	"atrium/backend/limits"
)

// Skills are the familiar agent's skills: the agent's procedural memory,
// a folder each (<profile>/skills/[<category>/]<name>/) holding SKILL.md
// (YAML frontmatter with its name and description, then its instructions)
// and files beside it (references/, templates/, scripts/, assets/). A
// conversation's system prompt lists them; the model loads one with
// skill_view when it matches the task, and writes them with skill_manage.
// A person runs one as a command, /<name>.
type Skills struct {
	// Dir is the profile's skills folder: read, and where skill_manage
	// writes ("": no skills).
	Dir string
	// External are skills.external_dirs: folders of skills shared with
	// other tools or people, read after Dir and never written.
	External []string
	// Disabled is skills.disabled, PlatformDisabled
	// skills.platform_disabled: skills not offered (everywhere, on one
	// platform).
	Disabled         []string
	PlatformDisabled map[string][]string
	// OS is the machine's, as a skill's platforms list names it (macos,
	// linux, windows; "": this one's).
	OS string
	// Plugins lists the skills the running plugins ship (register_skill):
	// listed as "<plugin>:<name>", loaded by that name, never written,
	// not in the system prompt's index (a plugin's tools name them). It is
	// asked only when a skills tool needs them: the plugin host may be
	// another process (nil: none).
	Plugins func() []PluginSkill
	// RefreshEnv gives this process the profile's .env as it is now (a
	// key another process set since): skill_view asks it before it says
	// which of a skill's variables are missing (nil: the environment as
	// it is).
	RefreshEnv func()
	// Managed reports a variable holding one of Atrium's own keys (the
	// model's, a chat platform's token, ...): a skill that declares one
	// is not handed it, as the familiar agent refuses a skill its
	// provider credentials (GHSA-rhgp-j443-p4rf). nil: none.
	Managed func(name string) bool
}

// managed is Managed's answer (false without one).
func (s Skills) managed(name string) bool { return s.Managed != nil && s.Managed(name) }

// plugins is what Plugins lists.
func (s Skills) plugins() []PluginSkill {
	if s.Plugins == nil {
		return nil
	}
	return s.Plugins()
}

// PluginSkill is a skill a plugin ships: its SKILL.md.
type PluginSkill struct {
	Plugin, Name, Path, Description string
}

// pluginNamespace is a plugin's name as a skill's namespace.
var pluginNamespace = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// The skills tools, as the familiar agent names them.
const (
	SkillsListTool  = "skills_list"
	SkillViewTool   = "skill_view"
	SkillManageTool = "skill_manage"
)

const (
	maxSkillName        = 64
	maxSkillDescription = 1024
	// maxSkillFile bounds a SKILL.md or a file beside it that Atrium reads
	// or writes; maxSkillShown what skill_view hands the model of one.
	maxSkillFile  = 1 << 20
	maxSkillShown = 100_000
	// A listing reads the first maxSkillHead bytes of each SKILL.md (its
	// frontmatter), visits at most maxSkillEntries entries of a folder
	// tree, maxSkillDepth folders deep, and lists at most maxSkills.
	maxSkillHead    = 4000
	maxSkillEntries = 20_000
	maxSkillDepth   = 6
	maxSkills       = 1000
	// skillIndexChars is how much of a description the system prompt's
	// index shows; maxSkillIndex bounds the index's lines (about 300
	// skills), which every conversation's prompt carries.
	skillIndexChars = 60
	maxSkillIndex   = 24_000
)

// skillName is a name skill_manage may give (and a category): lower case,
// digits, dots, hyphens and underscores, from a letter or digit.
var skillName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// skillSubdirs are the folders of a skill that skill_manage writes in.
var skillSubdirs = []string{"assets", "references", "scripts", "templates"}

// skippedSkillDirs are folders a listing does not enter.
var skippedSkillDirs = map[string]bool{".git": true, ".github": true, ".hub": true, "node_modules": true, "__pycache__": true}

// Skill is one skill found.
type Skill struct {
	Name, Description string
	Category          string // the folder it is in under the skills folder ("" at the top)
	Dir, File         string // its folder, its SKILL.md
	Root              string // the skills folder it was found in
	External          bool   // found in skills.external_dirs: read only
	front             map[string]any
}

// On says whether skills are kept here.
func (s Skills) On() bool { return s.Dir != "" }

// Problem says why the skills tools are not offered ("" when they are).
func (s Skills) Problem() string {
	if !s.On() {
		return "skills: this profile keeps no skills folder"
	}
	return ""
}

// roots are the folders skills are read from, the profile's first.
func (s Skills) roots() []string {
	out := []string{s.Dir}
	for _, d := range s.External {
		d = filepath.Clean(expandHome(strings.TrimSpace(d)))
		if filepath.IsAbs(d) && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

func (s Skills) os() string {
	o := s.OS
	if o == "" {
		o = runtime.GOOS
	}
	if o == "darwin" {
		return "macos"
	}
	return o
}

// disabled says whether name is not offered on platform.
func (s Skills) disabled(name, platform string) bool {
	return slices.Contains(s.Disabled, name) || slices.Contains(s.platformDisabled(platform), name)
}

// platformDisabled is skills.platform_disabled's list for platform: the
// window and the dashboard take cli's when they have none, as with
// platform_toolsets.
func (s Skills) platformDisabled(platform string) []string {
	list, ok := s.PlatformDisabled[platform]
	if !ok && (platform == "desktop" || platform == "dashboard") {
		list = s.PlatformDisabled["cli"]
	}
	return list
}

// found is every skill in the folders, the first of a name winning (the
// profile's over an external one), and what could not be read.
func (s Skills) found() ([]Skill, []string) {
	var out []Skill
	var problems []string
	seen := map[string]bool{}
	for i, root := range s.roots() {
		if root == "" {
			continue
		}
		files, problem := skillFiles(root)
		if problem != "" {
			problems = append(problems, problem)
		}
		for _, file := range files {
			sk, err := cachedSkillHead(root, file)
			if err != nil {
				problems = append(problems, err.Error())
				continue
			}
			if seen[sk.Name] || len(out) >= maxSkills {
				continue
			}
			seen[sk.Name] = true
			sk.External = i > 0
			out = append(out, sk)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Category != out[j].Category {
			return out[i].Category < out[j].Category
		}
		return out[i].Name < out[j].Name
	})
	return out, problems
}

// Available is the skills offered on platform: those whose platforms list
// (none: every one) names this machine's, less the disabled ones.
func (s Skills) Available(platform string) []Skill {
	all, _ := s.found()
	return slices.DeleteFunc(all, func(sk Skill) bool {
		return s.disabled(sk.Name, platform) || !sk.runsOn(s.os())
	})
}

// skillFiles lists the SKILL.md files under root, in a bounded walk that
// follows no link to a folder.
func skillFiles(root string) ([]string, string) {
	var files []string
	complete, err := walkBounded(root, maxSkillEntries, maxSkillDepth, func(name string) bool { return skippedSkillDirs[name] },
		func(path string, d fs.DirEntry) bool {
			// A SKILL.md in the skills folder itself is no skill: its
			// folder is the whole collection (deleting "it" would delete
			// them all).
			if d.Name() == "SKILL.md" && filepath.Dir(path) != root {
				files = append(files, path)
			}
			return true
		})
	switch {
	case err != nil && os.IsNotExist(err):
		return nil, ""
	case err != nil:
		return nil, fmt.Sprintf("skills folder %s: %v", root, err)
	case !complete:
		return files, fmt.Sprintf("skills folder %s: more than %d entries; only the first were read", root, maxSkillEntries)
	}
	return files, ""
}

// walkBounded walks root without following a link to a folder: at most
// maxEntries entries, into folders at most maxDepth below root and none
// whose name skip takes; file sees every other entry that is no folder,
// and ends the walk by answering false. complete is false when the entry
// bound cut the walk; err is root's own (an unreadable folder below it is
// passed over).
func walkBounded(root string, maxEntries, maxDepth int, skip func(name string) bool, file func(path string, d fs.DirEntry) bool) (complete bool, err error) {
	visited := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil && path == root:
			return err
		case err != nil:
			return nil
		}
		if visited++; visited > maxEntries {
			return fs.SkipAll
		}
		if d.IsDir() {
			if path != root && (skip(d.Name()) || strings.Count(strings.TrimPrefix(path, root), string(filepath.Separator)) > maxDepth) {
				return filepath.SkipDir
			}
			return nil
		}
		if !file(path, d) {
			return fs.SkipAll
		}
		return nil
	})
	return visited <= maxEntries, err
}

// skillHeads keeps what readSkillHead read of each SKILL.md, while the file
// keeps its size and modification time: a conversation's first turn, /help
// and each skill command list the skills, and parsing every frontmatter
// again is most of what a listing costs.
var skillHeads = struct {
	sync.Mutex
	m map[string]skillHead
}{m: map[string]skillHead{}}

type skillHead struct {
	size int64
	mod  time.Time
	sk   Skill
}

// maxSkillHeads bounds skillHeads (files of skills since deleted stay until
// it is full, then all go).
const maxSkillHeads = 4096

// cachedSkillHead is readSkillHead, from skillHeads when the file has not
// changed.
func cachedSkillHead(root, file string) (Skill, error) {
	info, err := os.Stat(file)
	if err != nil {
		return Skill{}, err
	}
	key := root + "\x00" + file
	skillHeads.Lock()
	h, ok := skillHeads.m[key]
	skillHeads.Unlock()
	if ok && h.size == info.Size() && h.mod.Equal(info.ModTime()) {
		return h.sk, nil
	}
	sk, err := readSkillHead(root, file)
	if err != nil {
		return Skill{}, err
	}
	skillHeads.Lock()
	if len(skillHeads.m) >= maxSkillHeads {
		clear(skillHeads.m)
	}
	skillHeads.m[key] = skillHead{size: info.Size(), mod: info.ModTime(), sk: sk}
	skillHeads.Unlock()
	return sk, nil
}

// readSkillHead reads what a listing needs of the skill whose SKILL.md is
// file: its frontmatter's name and description.
func readSkillHead(root, file string) (Skill, error) {
	f, err := os.Open(file)
	if err != nil {
		return Skill{}, err
	}
	defer f.Close()
	head := make([]byte, maxSkillHead)
	n, _ := io.ReadFull(f, head)
	text := string(head[:n])
	if n == maxSkillHead && strings.HasPrefix(text, "---") && frontmatterEnd.FindStringIndex(text[3:]) == nil {
		// A frontmatter longer than the head: the whole file, bounded.
		b, err := limits.ReadFile(file, maxSkillFile, "a SKILL.md")
		if err != nil {
			return Skill{}, err
		}
		text = string(b)
	}
	sk := skillAt(root, file)
	front, body := skillHeadFrontmatter(text)
	sk.front = front
	if name := frontString(front, "name"); name != "" {
		sk.Name = clipRunes(name, maxSkillName)
	}
	sk.Description = frontString(front, "description")
	if sk.Description == "" {
		for _, line := range strings.Split(body, "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				sk.Description = line
				break
			}
		}
	}
	if utf8.RuneCountInString(sk.Description) > maxSkillDescription {
		sk.Description = string([]rune(sk.Description)[:maxSkillDescription-3]) + "..."
	}
	return sk, nil
}

// skillAt is the skill whose SKILL.md is file under root, before it is
// read: named after its folder, in the category of its first folder when
// it is deeper than one.
func skillAt(root, file string) Skill {
	dir := filepath.Dir(file)
	sk := Skill{Name: filepath.Base(dir), Dir: dir, File: file, Root: root}
	if rel, err := filepath.Rel(root, file); err == nil {
		if parts := strings.Split(filepath.ToSlash(rel), "/"); len(parts) >= 3 {
			sk.Category = parts[0]
		}
	}
	return sk
}

// skillFrontmatter splits a SKILL.md into its frontmatter (nil when it has
// none, or when it does not read as YAML and has no key: value lines) and
// its body.
func skillFrontmatter(content string) (map[string]any, string) {
	content = strings.TrimPrefix(content, "\ufeff")
	if !strings.HasPrefix(content, "---") {
		return nil, content
	}
	end := frontmatterEnd.FindStringIndex(content[3:])
	if end == nil {
		return nil, content
	}
	text, body := content[3:3+end[0]], content[3+end[1]:]
	front := map[string]any{}
	if limits.CheckYAMLDepth([]byte(text), limits.YAMLDepth, "SKILL.md") != nil || !decodeYAML(text, &front) {
		front = map[string]any{}
		for _, line := range strings.Split(text, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) != "" {
				front[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}
	return front, body
}

// skillHeadFrontmatter is skillFrontmatter for a listing, which needs the
// name, the description and the platforms only: when the frontmatter
// gives each on a line of its own as a plain or simply quoted value (most
// do), they are read from those lines, without the YAML parser, which is
// most of what a listing costs; else the whole frontmatter is parsed.
func skillHeadFrontmatter(content string) (map[string]any, string) {
	trimmed := strings.TrimPrefix(content, "\ufeff")
	if strings.HasPrefix(trimmed, "---") {
		if end := frontmatterEnd.FindStringIndex(trimmed[3:]); end != nil {
			if front, ok := quickFront(trimmed[3 : 3+end[0]]); ok {
				return front, trimmed[3+end[1]:]
			}
		}
	}
	return skillFrontmatter(content)
}

// quickFront reads name, description and platforms from a frontmatter's
// top-level lines, when each is a one-line value the YAML parser would
// read as the same text (a plain value that is not a number, a boolean or
// null; one quoted without escapes; platforms as a flow list of such);
// false when any is not, the text is not plainly a mapping, or it says
// what the skill needs (its variables: read by the parser, whole).
func quickFront(text string) (map[string]any, bool) {
	if !utf8.ValidString(text) || strings.IndexFunc(text, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\r' }) >= 0 {
		return nil, false // tabs and other control characters: the parser's to read
	}
	out := map[string]any{}
	lines := strings.Split(text, "\n")
	top := false // a line at the left margin came
	for i, line := range lines {
		line = strings.TrimRight(line, "\r")
		switch {
		case strings.TrimSpace(line) == "" || line[0] == '#':
			continue
		case line[0] == ' ' || line[0] == '\t':
			if !top {
				return nil, false // the mapping itself is indented
			}
			continue
		}
		top = true
		key, val, ok := strings.Cut(line, ":")
		if !ok || key == "" || strings.ContainsAny(key[:1], "\"'-?[{&*!|>%@`") || val != "" && val[0] != ' ' {
			return nil, false // not plainly "key: value"
		}
		key = strings.TrimSpace(key)
		switch key {
		case "required_environment_variables", "setup", "prerequisites":
			return nil, false // what a skill needs: the parser's to read whole
		case "name", "description", "platforms":
		default:
			continue
		}
		if _, dup := out[key]; dup {
			return nil, false
		}
		for _, next := range lines[i+1:] {
			if strings.TrimSpace(next) == "" {
				continue
			}
			if next[0] == ' ' || next[0] == '\t' {
				return nil, false // a block, or a value on more lines
			}
			break
		}
		val = strings.TrimSpace(val)
		if key == "platforms" && strings.HasPrefix(val, "[") && strings.HasSuffix(val, "]") {
			var items []any
			for _, it := range strings.Split(val[1:len(val)-1], ",") {
				v, ok := quickScalar(strings.TrimSpace(it))
				if !ok || v == nil {
					return nil, false
				}
				items = append(items, v)
			}
			out[key] = items
			continue
		}
		v, ok := quickScalar(val)
		if !ok {
			return nil, false
		}
		out[key] = v
	}
	return out, true
}

// quickScalar is a one-line YAML value as the parser would read it, when it
// is plain text or quoted without escapes (nil for an empty one); false
// for anything else.
func quickScalar(v string) (any, bool) {
	switch {
	case v == "":
		return nil, true
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		return nil, false // a line break folded, a tab: the parser's to read
	case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
		if inner := v[1 : len(v)-1]; !strings.Contains(inner, "'") {
			return inner, true
		}
		return nil, false
	case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
		if inner := v[1 : len(v)-1]; !strings.ContainsAny(inner, "\"\\") {
			return inner, true
		}
		return nil, false
	case strings.ContainsAny(v[:1], "\"'>|&*![]{}@`%#,?-:~"), strings.Contains(v, ": "), strings.Contains(v, " #"),
		strings.HasSuffix(v, ":"), strings.ContainsAny(v, "\t"):
		return nil, false
	}
	switch strings.ToLower(v) {
	case "null", "true", "false", "yes", "no", "on", "off", "y", "n", ".nan", ".inf", "-.inf", "+.inf":
		return nil, false
	}
	if strings.IndexFunc(v, func(r rune) bool { return !strings.ContainsRune("0123456789+-.eExXoObB_abcdefABCDEF", r) }) < 0 {
		return nil, false // it may read as a number
	}
	return v, true
}

var frontmatterEnd = regexp.MustCompile(`\n---[ \t]*(\r?\n|$)`)

// decodeYAML decodes text into v, a panic of the parser being a failure.
func decodeYAML(text string, v any) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return yaml.Unmarshal([]byte(text), v) == nil
}

// frontString is a frontmatter value as text ("" when it is none or not a
// scalar).
func frontString(front map[string]any, key string) string { return scalarText(front[key]) }

// scalarText is v as text when it is a scalar, else "".
func scalarText(v any) string {
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v)
	case int, int64, uint64, float64, bool:
		return fmt.Sprint(v)
	}
	return ""
}

// frontList reads a list in the frontmatter: metadata.hermes.<key> first,
// as the agentskills.io layout has it, then <key>; a list, "[a, b]" or
// "a, b".
func frontList(front map[string]any, key string) []string {
	var v any
	if meta, ok := front["metadata"].(map[string]any); ok {
		if h, ok := meta["hermes"].(map[string]any); ok {
			v = h[key]
		}
	}
	if v == nil {
		v = front[key]
	}
	var out []string
	switch v := v.(type) {
	case []any:
		for _, it := range v {
			// Only scalars: a list's own lists could be an alias bomb,
			// which printing would expand.
			if s := scalarText(it); s != "" && len(out) < 64 {
				out = append(out, clipRunes(s, 200))
			}
		}
	case string:
		s := strings.TrimSpace(v)
		s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
		for _, t := range strings.Split(s, ",") {
			if t = strings.Trim(strings.TrimSpace(t), `"'`); t != "" && len(out) < 64 {
				out = append(out, t)
			}
		}
	}
	return out
}

// platforms is the frontmatter's platforms list (top level only, as the
// familiar agent reads it).
func (sk Skill) platforms() []string {
	return frontList(map[string]any{"platforms": sk.front["platforms"]}, "platforms")
}

// runsOn says whether the skill's platforms list (none: every one) names
// os.
func (sk Skill) runsOn(os string) bool {
	list := sk.platforms()
	if len(list) == 0 {
		return true
	}
	for _, p := range list {
		switch strings.ToLower(p) {
		case os, "all", "any":
			return true
		case "darwin", "mac", "osx":
			if os == "macos" {
				return true
			}
		case "win32", "win":
			if os == "windows" {
				return true
			}
		}
	}
	return false
}

// find is the skill name names: a skill's name, or its folder under a
// skills folder (category/name).
func (s Skills) find(name string) (Skill, bool) {
	all, _ := s.found()
	name = strings.TrimSpace(name)
	for _, sk := range all {
		if sk.Name == name {
			return sk, true
		}
	}
	for _, sk := range all {
		if rel, err := filepath.Rel(sk.Root, sk.Dir); err == nil && filepath.ToSlash(rel) == name || filepath.Base(sk.Dir) == name {
			return sk, true
		}
	}
	return Skill{}, false
}

// SkillInfo is a skill as a person's listing shows it.
type SkillInfo struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Category    string `json:"category"`
	Path        string `json:"path"`     // its SKILL.md
	External    bool   `json:"external"` // in skills.external_dirs: read only
	// NotOffered says why the model is not offered it on the platform (""
	// when it is).
	NotOffered string `json:"not_offered,omitempty"`
	// Env are the variables it declares (required_environment_variables
	// and the familiar agent's other ways), Missing those of them it
	// needs that this process does not have.
	Env     []SkillEnv `json:"env,omitempty"`
	Missing []string   `json:"missing,omitempty"`
}

// Listing is every skill found, for a person: those not offered on
// platform with why; and what could not be read.
func (s Skills) Listing(platform string) ([]SkillInfo, []string) {
	all, problems := s.found()
	out := make([]SkillInfo, 0, len(all))
	for _, sk := range all {
		info := SkillInfo{Name: sk.Name, Description: sk.Description, Category: sk.Category, Path: sk.File, External: sk.External,
			Env: skillRequiredEnv(sk.front)}
		for _, e := range info.Env {
			if s.missing(e) {
				info.Missing = append(info.Missing, e.Name)
			}
		}
		switch {
		case slices.Contains(s.Disabled, sk.Name):
			info.NotOffered = "disabled (skills.disabled)"
		case slices.Contains(s.platformDisabled(platform), sk.Name):
			info.NotOffered = "disabled on " + platform + " (skills.platform_disabled)"
		case !sk.runsOn(s.os()):
			info.NotOffered = "not for this machine (its platforms: " + strings.Join(sk.platforms(), ", ") + ")"
		}
		out = append(out, info)
	}
	return out, problems
}

// View is skill_view for a person: the skill name names (or one of its
// files), as the tool answers it.
func (s Skills) View(name, file, platform string) map[string]any {
	args := map[string]any{"name": name}
	if file != "" {
		args["file_path"] = file
	}
	out, _ := skillView(context.Background(), &Call{Args: args, Settings: Settings{Skills: s}, Platform: platform}).(map[string]any)
	return out
}

// SkillIndex is the system prompt's list of the skills offered on
// platform, as the familiar agent writes it ("" when there are none);
// manage says skill_manage is offered too.
func (s Skills) SkillIndex(platform string, manage bool) string {
	if !s.On() {
		return ""
	}
	skills := s.Available(platform)
	if len(skills) == 0 {
		return ""
	}
	byCategory := map[string][]Skill{}
	var categories []string
	for _, sk := range skills {
		c := sk.Category
		if c == "" {
			c = "general"
		}
		if byCategory[c] == nil {
			categories = append(categories, c)
		}
		byCategory[c] = append(byCategory[c], sk)
	}
	sort.Strings(categories)
	var lines []string
	size, left := 0, len(skills)
	add := func(line string) { lines, size = append(lines, line), size+len(line)+1 }
	for _, c := range categories {
		if size > maxSkillIndex {
			break
		}
		line := "  " + c + ":"
		if d := s.categoryDescription(c); d != "" {
			line += " " + d
		}
		add(line)
		for _, sk := range byCategory[c] {
			if size > maxSkillIndex {
				break
			}
			desc := strings.Join(strings.Fields(sk.Description), " ")
			if utf8.RuneCountInString(desc) > skillIndexChars {
				desc = string([]rune(desc)[:skillIndexChars-3]) + "..."
			}
			if desc != "" {
				add("    - " + sk.Name + ": " + desc)
			} else {
				add("    - " + sk.Name)
			}
			left--
		}
	}
	if left > 0 {
		// Past the budget: the prompt of every conversation carries it.
		add(fmt.Sprintf("  ... and %d more: skills_list lists them all", left))
	}
	fix := ""
	if manage {
		fix = " If a skill has issues, fix it with skill_manage(action='patch')."
	}
	return "## Skills (mandatory)\n" +
		"Before replying, scan the skills below. If one clearly matches your task, load it with skill_view(name) and follow its instructions." + fix + "\n\n" +
		"<available_skills>\n" + strings.Join(lines, "\n") + "\n</available_skills>\n\n" +
		"If none match, proceed normally without loading a skill."
}

// SkillsGuidance is what the system prompt says when skill_manage is
// offered, in the familiar agent's newer words.
const SkillsGuidance = "When you work out a non-trivial workflow, record it with skill_manage for future reuse."

// categoryDescription is a category's DESCRIPTION.md's description.
func (s Skills) categoryDescription(category string) string {
	for _, root := range s.roots() {
		b, err := limits.ReadFile(filepath.Join(root, category, "DESCRIPTION.md"), maxSkillHead*4, "a category description")
		if err != nil {
			continue
		}
		front, _ := skillFrontmatter(string(b))
		if d := frontString(front, "description"); d != "" {
			return clipRunes(strings.Join(strings.Fields(d), " "), 200)
		}
	}
	return ""
}

// Invocation is the message a person's /<skill> command sends in their
// place, as the familiar agent writes it, and the variables of the skill
// that are set (which the conversation's commands are then given, as
// after skill_view; ask, when set, asks for those missing first); false
// when no skill offered on platform has that command.
func (s Skills) Invocation(ctx context.Context, command, instruction, platform string, ask SecretAsker) (string, []string, bool) {
	if !s.On() {
		return "", nil, false
	}
	var sk Skill
	ok := false
	for _, c := range s.Available(platform) {
		if SkillCommand(c.Name) == command {
			sk, ok = c, true
			break
		}
	}
	if !ok {
		return "", nil, false
	}
	b, err := limits.ReadFile(sk.File, maxSkillFile, "a SKILL.md")
	if err != nil {
		return "[Failed to load skill: " + sk.Name + "]", nil, true
	}
	content := strings.ToValidUTF8(string(b), "\uFFFD")
	parts := []string{fmt.Sprintf(`[IMPORTANT: The user has invoked the "%s" skill, indicating they want you to follow its instructions. The full skill content is loaded below.]`, sk.Name),
		"", strings.TrimSpace(clipRunes(content, maxSkillShown)),
		"", fmt.Sprintf("[Skill directory: %s]", sk.Dir),
		"Resolve any relative paths in this skill (e.g. `scripts/foo.js`, `templates/config.yaml`) against that directory, " +
			"then run them with the terminal tool using the absolute path."}
	front, _ := skillFrontmatter(content)
	ready, granted := s.readiness(ctx, front, platform, sk.Name, ask)
	note, _ := ready["setup_note"].(string)
	hint, _ := ready["gateway_setup_hint"].(string)
	switch {
	case ready["setup_skipped"] == true:
		parts = append(parts, "", "[Skill setup note: Required environment setup was skipped. Continue loading the skill and explain any reduced functionality if it matters.]")
	case hint != "":
		parts = append(parts, "", "[Skill setup note: "+hint+"]")
	case note != "":
		parts = append(parts, "", "[Skill setup note: "+note+"]")
	}
	if files := sk.supporting(); len(files) > 0 {
		target := filepath.Base(sk.Dir) // a skill of an external folder: by its name
		if sk.Root == s.Dir {
			target = relTo(s.Dir, sk.Dir)
		}
		parts = append(parts, "", "[This skill has supporting files (paths relative to the skill directory above):]")
		for _, f := range files {
			parts = append(parts, "- "+f)
		}
		parts = append(parts, fmt.Sprintf("\nLoad any of these with skill_view(name=\"%s\", file_path=\"<path>\"), or run scripts directly "+
			"by absolute path (e.g. `node %s/scripts/foo.js`).", target, sk.Dir))
	}
	if instruction = strings.TrimSpace(instruction); instruction != "" {
		parts = append(parts, "", "The user has provided the following instruction alongside the skill invocation: "+instruction)
	}
	return strings.Join(parts, "\n"), granted, true
}

// SkillCommand is the command that runs the skill named name.
func SkillCommand(name string) string {
	return strings.NewReplacer(" ", "-", "_", "-").Replace(strings.ToLower(strings.TrimSpace(name)))
}

// SkillCommands are the commands of the skills offered on platform: name
// and description.
func (s Skills) SkillCommands(platform string) [][2]string {
	if !s.On() {
		return nil
	}
	var out [][2]string
	for _, sk := range s.Available(platform) {
		d := sk.Description
		if d == "" {
			d = "Invoke the " + sk.Name + " skill"
		}
		out = append(out, [2]string{SkillCommand(sk.Name), d})
	}
	return out
}

// supporting are the files beside a skill's SKILL.md in its folders
// (references/..., ...), relative to its folder, at most 200.
func (sk Skill) supporting() []string {
	var out []string
	for _, sub := range skillSubdirs {
		_ = filepath.WalkDir(filepath.Join(sk.Dir, sub), func(path string, d fs.DirEntry, err error) error {
			if err != nil || len(out) >= 200 {
				return fs.SkipDir
			}
			if d.Type().IsRegular() {
				if rel, err := filepath.Rel(sk.Dir, path); err == nil {
					out = append(out, filepath.ToSlash(rel))
				}
			}
			return nil
		})
	}
	sort.Strings(out)
	return out
}

func skillsListTool() Tool {
	return Tool{Name: SkillsListTool, Toolset: "skills", run: skillsList,
		Description: "List available skills (name + description). Use skill_view(name) to load full content.",
		Parameters: `{"type":"object","properties":{` +
			`"category":{"type":"string","description":"Optional category filter to narrow results"}` +
			`},"required":[]}`}
}

func skillViewTool() Tool {
	return Tool{Name: SkillViewTool, Toolset: "skills", run: skillView,
		Description: "Load a skill's instructions, or one of the files beside them. A skill is a reusable way of doing one " +
			"kind of task, with its scripts and templates. The first call answers the skill's SKILL.md and, in " +
			"linked_files, the files beside it (references, templates, scripts, assets); call again with file_path " +
			"to read one of those.",
		Parameters: `{"type":"object","properties":{` +
			`"name":{"type":"string","description":"The skill name (use skills_list to see available skills)"},` +
			`"file_path":{"type":"string","description":"OPTIONAL: Path to a linked file within the skill (e.g., 'references/api.md', 'templates/config.yaml', 'scripts/validate.py'). Omit to get the main SKILL.md content."}` +
			`},"required":["name"]}`}
}

func skillManageTool() Tool {
	return Tool{Name: SkillManageTool, Toolset: "skills", run: skillManage,
		Description: "Create, change and delete skills: your procedural memory, a reusable way of doing one kind of task. " +
			"New skills go to the profile's skills folder.\n\nActions: create (the whole SKILL.md, and an optional " +
			"category), patch (old_string/new_string: best for fixes), edit (the whole SKILL.md again: for a rewrite), " +
			"delete, write_file and remove_file (a file under references/, templates/, scripts/ or assets/).\n\n" +
			"Create one when a task of several steps worked out, after an error overcome, or when the user asks you to " +
			"remember a procedure; change one whose steps were wrong or missing. Ask the user before creating or " +
			"deleting one. A good skill says when it applies, gives numbered steps with exact commands, its pitfalls " +
			"and how to check the result.",
		Parameters: `{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["create","patch","edit","delete","write_file","remove_file"],"description":"The action to perform."},` +
			`"name":{"type":"string","description":"Skill name (lowercase, hyphens/underscores, max 64 chars). Must match an existing skill for patch/edit/delete/write_file/remove_file."},` +
			`"content":{"type":"string","description":"Full SKILL.md content (YAML frontmatter with name and description, then the instructions). Required for 'create' and 'edit'."},` +
			`"old_string":{"type":"string","description":"Text to find in the file (required for 'patch'). Must be unique unless replace_all=true."},` +
			`"new_string":{"type":"string","description":"Replacement text (required for 'patch'). Can be empty string to delete the matched text."},` +
			`"replace_all":{"type":"boolean","description":"For 'patch': replace all occurrences instead of requiring a unique match (default: false)."},` +
			`"category":{"type":"string","description":"Optional category for organizing the skill (e.g. 'devops'): a folder above it. Only used with 'create'."},` +
			`"file_path":{"type":"string","description":"A file beside SKILL.md: for 'write_file'/'remove_file' required, under references/, templates/, scripts/ or assets/; for 'patch' optional (default SKILL.md)."},` +
			`"file_content":{"type":"string","description":"Content for the file. Required for 'write_file'."}` +
			`},"required":["action","name"]}`}
}

func skillFailure(msg string, extra ...any) map[string]any {
	out := map[string]any{"success": false, "error": msg}
	for i := 0; i+1 < len(extra); i += 2 {
		out[extra[i].(string)] = extra[i+1]
	}
	return out
}

func skillsList(_ context.Context, c *Call) any {
	s := c.Settings.Skills
	if !s.On() {
		return skillFailure("skills are not kept here")
	}
	all, plugins := s.Available(c.Platform), s.plugins()
	if len(all) == 0 && len(plugins) == 0 {
		return map[string]any{"success": true, "skills": []any{}, "categories": []any{}, "message": "No skills found in skills/ directory."}
	}
	category, _ := c.str("category")
	category = strings.TrimSpace(category)
	skills := []map[string]any{}
	categories := []string{}
	for _, sk := range all {
		if category != "" && sk.Category != category {
			continue
		}
		var cat any
		if sk.Category != "" {
			cat = sk.Category
			if !slices.Contains(categories, sk.Category) {
				categories = append(categories, sk.Category)
			}
		}
		skills = append(skills, map[string]any{"name": sk.Name, "description": sk.Description, "category": cat})
	}
	if category == "" {
		for _, p := range plugins {
			if full := p.Plugin + ":" + p.Name; !s.disabled(full, c.Platform) {
				skills = append(skills, map[string]any{"name": full, "description": p.Description, "category": nil})
			}
		}
	}
	sort.Strings(categories)
	return map[string]any{"success": true, "skills": skills, "categories": categories, "count": len(skills),
		"hint": "Use skill_view(name) to see full content, tags, and linked files"}
}

func skillView(ctx context.Context, c *Call) any {
	s := c.Settings.Skills
	if !s.On() {
		return skillFailure("skills are not kept here")
	}
	name, _ := c.str("name")
	if problem := skillLookupProblem(name); problem != "" {
		return skillFailure(problem)
	}
	fp, _ := c.str("file_path")
	if ns, bare, ok := strings.Cut(strings.TrimSpace(name), ":"); ok {
		if out, answered := s.viewPlugin(ns, bare, strings.TrimSpace(fp), c.Platform); answered {
			return out
		}
		name = ns + "/" + bare // a local skill's category:name, as the familiar agent reads it then
	}
	sk, ok := s.find(name)
	if !ok || s.disabled(sk.Name, c.Platform) {
		var names []string
		for i, a := range s.Available(c.Platform) {
			if i == 20 {
				break
			}
			names = append(names, a.Name)
		}
		msg := fmt.Sprintf("Skill '%s' not found.", strings.TrimSpace(name))
		if ok {
			msg = fmt.Sprintf("Skill '%s' is disabled (skills.disabled).", sk.Name)
		}
		return skillFailure(msg, "available_skills", names, "hint", "Use skills_list to see all available skills")
	}
	if strings.TrimSpace(fp) != "" {
		return sk.viewFile(strings.TrimSpace(fp))
	}
	out, front, err := sk.view()
	if err != nil {
		return skillFailure(err.Error())
	}
	// What it needs: the variables of it that are set reach the
	// conversation's commands from now on.
	ready, granted := s.readiness(ctx, front, c.Platform, sk.Name, c.AskSecret)
	maps.Copy(out, ready)
	c.Grants = append(c.Grants, granted...)
	return out
}

// view is skill_view of the skill's SKILL.md, and its frontmatter.
func (sk Skill) view() (map[string]any, map[string]any, error) {
	b, err := limits.ReadFile(sk.File, maxSkillFile, "a SKILL.md")
	if err != nil {
		return nil, nil, err
	}
	content := strings.ToValidUTF8(string(b), "\uFFFD")
	front, _ := skillFrontmatter(content)
	description := frontString(front, "description")
	if description == "" {
		description = sk.Description
	}
	out := map[string]any{"success": true, "name": sk.Name, "description": description,
		"tags": orEmpty(frontList(front, "tags")), "related_skills": orEmpty(frontList(front, "related_skills")),
		"content": shownSkill(content, sk.File), "path": relTo(sk.Root, sk.File), "skill_dir": sk.Dir, "linked_files": nil, "usage_hint": nil}
	if linked := sk.linked(); len(linked) > 0 {
		out["linked_files"] = linked
		out["usage_hint"] = "To view linked files, call skill_view(name, file_path) where file_path is e.g. 'references/api.md' or 'assets/config.yaml'"
	}
	for _, k := range []string{"compatibility", "version", "license"} {
		if v := frontString(front, k); v != "" {
			out[k] = clipRunes(v, 500)
		}
	}
	return out, front, nil
}

// viewPlugin is skill_view of ns:bare when ns is a plugin that ships
// skills; answered is false when no plugin is ns (the name may then be a
// local skill's category:name).
func (s Skills) viewPlugin(ns, bare, file, platform string) (out any, answered bool) {
	if !pluginNamespace.MatchString(ns) {
		return skillFailure(fmt.Sprintf("Invalid namespace '%s' in '%s:%s'. Namespaces must match [a-zA-Z0-9_-]+.", ns, ns, bare)), true
	}
	var theirs []string
	for _, p := range s.plugins() {
		if p.Plugin != ns {
			continue
		}
		theirs = append(theirs, p.Plugin+":"+p.Name)
		if p.Name != bare {
			continue
		}
		if s.disabled(p.Plugin+":"+p.Name, platform) {
			return skillFailure(fmt.Sprintf("Skill '%s:%s' is disabled (skills.disabled).", ns, bare)), true
		}
		if _, err := os.Stat(p.Path); err != nil {
			return skillFailure(fmt.Sprintf("Skill '%s:%s' file no longer exists at %s. The plugin registered it there; "+
				"it is found again once the plugin registers it anew.", ns, bare, p.Path)), true
		}
		sk := Skill{Name: ns + ":" + bare, Description: p.Description, Dir: filepath.Dir(p.Path), File: p.Path, Root: filepath.Dir(p.Path), External: true}
		if file != "" {
			return sk.viewFile(file), true
		}
		out, _, err := sk.view()
		if err != nil {
			return skillFailure(err.Error()), true
		}
		return out, true
	}
	if len(theirs) > 0 {
		return skillFailure(fmt.Sprintf("Skill '%s' not found in plugin '%s'.", bare, ns), "available_skills", theirs,
			"hint", fmt.Sprintf("The '%s' plugin provides %d skill(s).", ns, len(theirs))), true
	}
	return nil, false
}

func orEmpty(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

func relTo(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return path
}

// shownSkill is a skill file's text as the model is handed it: its first
// maxSkillShown characters, and how to read the rest.
func shownSkill(content, path string) string {
	if utf8.RuneCountInString(content) <= maxSkillShown {
		return content
	}
	return string([]rune(content)[:maxSkillShown]) + fmt.Sprintf("\n\n[... %d more characters: read_file %s reads them]",
		utf8.RuneCountInString(content)-maxSkillShown, path)
}

// linked are the files beside SKILL.md by kind, as skill_view names them.
func (sk Skill) linked() map[string][]string {
	out := map[string][]string{}
	for _, f := range sk.supporting() {
		kind, _, _ := strings.Cut(f, "/")
		out[kind] = append(out[kind], f)
	}
	return out
}

// skillLookupProblem says why name cannot name a skill ("" when it can).
func skillLookupProblem(name string) string {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "name is required."
	case filepath.IsAbs(name) || strings.HasPrefix(name, "~"):
		return "Skill name must be a relative path within the skills directory."
	case slices.Contains(strings.Split(filepath.ToSlash(name), "/"), ".."):
		return "Skill name cannot contain '..' path traversal components."
	}
	return ""
}

// viewFile is skill_view of a file beside the skill's SKILL.md.
func (sk Skill) viewFile(rel string) any {
	if slices.Contains(strings.Split(filepath.ToSlash(rel), "/"), "..") {
		return skillFailure("Path traversal ('..') is not allowed.", "hint", "Use a relative path within the skill directory")
	}
	target := filepath.Join(sk.Dir, rel)
	resolved, err := filepath.EvalSymlinks(target)
	dir, derr := filepath.EvalSymlinks(sk.Dir)
	if err == nil && derr == nil && !strings.HasPrefix(resolved, dir+string(filepath.Separator)) {
		return skillFailure("Path escapes skill directory boundary.", "hint", "Use a relative path within the skill directory")
	}
	if err != nil {
		return skillFailure(fmt.Sprintf("File '%s' not found in skill '%s'.", rel, sk.Name), "available_files", sk.linked(),
			"hint", "Use one of the available file paths listed above")
	}
	b, err := limits.ReadFile(resolved, maxSkillFile, "a skill's file")
	if err != nil {
		return skillFailure(err.Error())
	}
	if !utf8.Valid(b) {
		return map[string]any{"success": true, "name": sk.Name, "file": rel, "is_binary": true,
			"content": fmt.Sprintf("[Binary file: %s, size: %d bytes]", filepath.Base(resolved), len(b))}
	}
	return map[string]any{"success": true, "name": sk.Name, "file": rel, "content": shownSkill(string(b), resolved),
		"file_type": filepath.Ext(resolved)}
}

// skillManage is skill_manage: the familiar agent's actions, on the
// profile's skills (an external folder's are read only). What it writes
// goes into later system prompts and turns: text that would steer the
// model, as the memory refuses it, is refused.
func skillManage(_ context.Context, c *Call) any {
	s := c.Settings.Skills
	if !s.On() {
		return skillFailure("skills are not kept here")
	}
	action, _ := c.str("action")
	name, _ := c.str("name")
	name = strings.TrimSpace(name)
	content, hasContent := c.str("content")
	filePath, _ := c.str("file_path")
	filePath = strings.TrimSpace(filePath)
	switch action = strings.TrimSpace(action); action {
	case "create", "edit":
		if !hasContent || content == "" {
			if action == "create" {
				return skillFailure("content is required for 'create'. Provide the full SKILL.md text (frontmatter + body).")
			}
			return skillFailure("content is required for 'edit'. Provide the full updated SKILL.md text.")
		}
		if problem := skillContentProblem(content); problem != "" {
			return skillFailure(problem)
		}
		if action == "create" {
			category, _ := c.str("category")
			return s.create(name, strings.TrimSpace(category), content)
		}
		sk, fail := s.writable(name)
		if fail != nil {
			return fail
		}
		if err := writeSkillFile(sk.File, content); err != nil {
			return skillFailure(err.Error())
		}
		return map[string]any{"success": true, "message": fmt.Sprintf("Skill '%s' updated.", sk.Name), "path": sk.Dir}
	case "patch":
		oldString, _ := c.str("old_string")
		newString, hasNew := c.str("new_string")
		if oldString == "" {
			return skillFailure("old_string is required for 'patch'. Provide the text to find.")
		}
		if !hasNew {
			return skillFailure("new_string is required for 'patch'. Use empty string to delete matched text.")
		}
		return s.patch(name, filePath, oldString, newString, c.boolean("replace_all"))
	case "delete":
		sk, fail := s.writable(name)
		if fail != nil {
			return fail
		}
		if err := os.RemoveAll(sk.Dir); err != nil {
			return skillFailure(err.Error())
		}
		if parent := filepath.Dir(sk.Dir); parent != sk.Root {
			_ = os.Remove(parent) // an empty category folder; one with other skills stays
		}
		return map[string]any{"success": true, "message": fmt.Sprintf("Skill '%s' deleted.", sk.Name)}
	case "write_file":
		fileContent, has := c.str("file_content")
		if filePath == "" {
			return skillFailure("file_path is required for 'write_file'. Example: 'references/api-guide.md'")
		}
		if !has {
			return skillFailure("file_content is required for 'write_file'.")
		}
		if problem := skillFilePathProblem(filePath); problem != "" {
			return skillFailure(problem)
		}
		if what := memoryThreat(fileContent); what != "" {
			return skillFailure(skillThreat(what))
		}
		sk, fail := s.writable(name)
		if fail != nil {
			if fail["error"] == fmt.Sprintf("Skill '%s' not found.", name) {
				fail["error"] = fmt.Sprintf("Skill '%s' not found. Create it first with action='create'.", name)
			}
			return fail
		}
		target := filepath.Join(sk.Dir, filepath.FromSlash(filePath))
		if !sk.holds(target) {
			return skillFailure("Path escapes skill directory boundary.")
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return skillFailure(err.Error())
		}
		if err := writeSkillFile(target, fileContent); err != nil {
			return skillFailure(err.Error())
		}
		return map[string]any{"success": true, "message": fmt.Sprintf("File '%s' written to skill '%s'.", filePath, sk.Name), "path": target}
	case "remove_file":
		if filePath == "" {
			return skillFailure("file_path is required for 'remove_file'.")
		}
		if problem := skillFilePathProblem(filePath); problem != "" {
			return skillFailure(problem)
		}
		sk, fail := s.writable(name)
		if fail != nil {
			return fail
		}
		target := filepath.Join(sk.Dir, filepath.FromSlash(filePath))
		if !sk.holds(target) {
			return skillFailure("Path escapes skill directory boundary.")
		}
		if info, err := os.Lstat(target); err != nil || info.IsDir() {
			var available any
			if files := sk.supporting(); len(files) > 0 {
				available = files
			}
			return skillFailure(fmt.Sprintf("File '%s' not found in skill '%s'.", filePath, sk.Name), "available_files", available)
		}
		if err := os.Remove(target); err != nil {
			return skillFailure(err.Error())
		}
		if parent := filepath.Dir(target); parent != sk.Dir {
			_ = os.Remove(parent) // emptied
		}
		return map[string]any{"success": true, "message": fmt.Sprintf("File '%s' removed from skill '%s'.", filePath, sk.Name)}
	}
	return skillFailure(fmt.Sprintf("Unknown action '%s'. Use: create, edit, patch, delete, write_file, remove_file", action))
}

// create is skill_manage's create: a new folder under the profile's
// skills (in category when given) with its SKILL.md.
func (s Skills) create(name, category, content string) any {
	if problem := skillNameProblem(name, "Skill name"); problem != "" {
		return skillFailure(problem)
	}
	if category != "" {
		if problem := skillNameProblem(category, "Category"); problem != "" {
			return skillFailure(problem)
		}
	}
	if sk, ok := s.find(name); ok {
		return skillFailure(fmt.Sprintf("A skill named '%s' already exists at %s.", name, sk.Dir))
	}
	dir := filepath.Join(s.Dir, category, name)
	if _, err := os.Lstat(dir); err == nil {
		return skillFailure(fmt.Sprintf("A folder already exists at %s.", dir))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return skillFailure(err.Error())
	}
	file := filepath.Join(dir, "SKILL.md")
	if err := writeSkillFile(file, content); err != nil {
		_ = os.RemoveAll(dir)
		return skillFailure(err.Error())
	}
	out := map[string]any{"success": true, "message": fmt.Sprintf("Skill '%s' created.", name), "path": relTo(s.Dir, dir), "skill_md": file,
		"hint": fmt.Sprintf("To add reference files, templates, or scripts, use skill_manage(action='write_file', name='%s', file_path='references/example.md', file_content='...')", name)}
	if category != "" {
		out["category"] = category
	}
	return out
}

// patch is skill_manage's patch: a find-and-replace in SKILL.md or a file
// beside it.
func (s Skills) patch(name, filePath, oldString, newString string, all bool) any {
	sk, fail := s.writable(name)
	if fail != nil {
		return fail
	}
	target := sk.File
	if filePath != "" {
		if problem := skillFilePathProblem(filePath); problem != "" {
			return skillFailure(problem)
		}
		target = filepath.Join(sk.Dir, filepath.FromSlash(filePath))
		if !sk.holds(target) {
			return skillFailure("Path escapes skill directory boundary.")
		}
	}
	b, err := limits.ReadFile(target, maxSkillFile, "a skill's file")
	if err != nil {
		if os.IsNotExist(err) {
			return skillFailure("File not found: " + relTo(sk.Dir, target))
		}
		return skillFailure(err.Error())
	}
	content := string(b)
	count := strings.Count(content, oldString)
	switch {
	case count == 0:
		preview := content
		if utf8.RuneCountInString(preview) > 500 {
			preview = string([]rune(preview)[:500]) + "..."
		}
		return skillFailure("old_string not found in the file.", "file_preview", preview)
	case count > 1 && !all:
		return skillFailure(fmt.Sprintf("old_string matched %d times. Provide more surrounding context to make the match unique, "+
			"or set replace_all=true to replace all occurrences.", count), "match_count", count)
	}
	n := 1
	if all {
		n = -1
	}
	updated := strings.Replace(content, oldString, newString, n)
	if filePath == "" {
		if problem := skillContentProblem(updated); problem != "" {
			return skillFailure("Patch would break SKILL.md structure: " + problem)
		}
	} else if what := memoryThreat(updated); what != "" {
		return skillFailure(skillThreat(what))
	}
	if err := writeSkillFile(target, updated); err != nil {
		return skillFailure(err.Error())
	}
	replaced := 1
	if all {
		replaced = count
	}
	file, plural := "SKILL.md", ""
	if filePath != "" {
		file = filePath
	}
	if replaced > 1 {
		plural = "s"
	}
	return map[string]any{"success": true, "message": fmt.Sprintf("Patched %s in skill '%s' (%d replacement%s).", file, sk.Name, replaced, plural)}
}

// holds says whether path's folder, its links followed, is in the skill's
// folder: a folder beside SKILL.md that links elsewhere is not written
// through.
func (sk Skill) holds(path string) bool {
	dir, err := filepath.EvalSymlinks(sk.Dir)
	if err != nil {
		return false
	}
	// The nearest folder above path that exists decides: what is not
	// there yet is made under it.
	for p := filepath.Dir(path); ; {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return real == dir || strings.HasPrefix(real, dir+string(filepath.Separator))
		}
		next := filepath.Dir(p)
		if !os.IsNotExist(err) || next == p {
			return false
		}
		p = next
	}
}

// writable is the skill name names, when skill_manage may change it.
func (s Skills) writable(name string) (Skill, map[string]any) {
	if problem := skillLookupProblem(name); problem != "" {
		return Skill{}, skillFailure(problem)
	}
	if ns, _, ok := strings.Cut(name, ":"); ok && slices.ContainsFunc(s.plugins(), func(p PluginSkill) bool { return p.Plugin == ns }) {
		return Skill{}, skillFailure(fmt.Sprintf("Skill '%s' comes with plugin %s: Atrium does not change a plugin's skills.", name, ns))
	}
	sk, ok := s.find(name)
	if !ok {
		return Skill{}, skillFailure(fmt.Sprintf("Skill '%s' not found.", name))
	}
	if sk.External {
		return Skill{}, skillFailure(fmt.Sprintf("Skill '%s' is in %s, one of skills.external_dirs: Atrium reads those skills and does not change them.", sk.Name, sk.Root))
	}
	return sk, nil
}

// skillNameProblem says why name cannot be a skill's (or a category's)
// name.
func skillNameProblem(name, what string) string {
	switch {
	case name == "":
		return what + " is required."
	case len(name) > maxSkillName:
		return fmt.Sprintf("%s exceeds %d characters.", what, maxSkillName)
	case !skillName.MatchString(name):
		return fmt.Sprintf("Invalid %s '%s'. Use lowercase letters, numbers, hyphens, dots, and underscores. Must start with a letter or digit.",
			strings.ToLower(what), name)
	}
	return ""
}

// skillFilePathProblem says why path cannot be a file beside a SKILL.md.
func skillFilePathProblem(path string) string {
	parts := strings.Split(filepath.ToSlash(path), "/")
	switch {
	case slices.Contains(parts, ".."):
		return "Path traversal ('..') is not allowed."
	case filepath.IsAbs(path) || !slices.Contains(skillSubdirs, parts[0]):
		return fmt.Sprintf("File must be under one of: %s. Got: '%s'", strings.Join(skillSubdirs, ", "), path)
	case len(parts) < 2 || parts[len(parts)-1] == "":
		return fmt.Sprintf("Provide a file path, not just a directory. Example: '%s/myfile.md'", parts[0])
	}
	return ""
}

// skillContentProblem says why content cannot be a SKILL.md ("" when it
// can).
func skillContentProblem(content string) string {
	if strings.TrimSpace(content) == "" {
		return "Content cannot be empty."
	}
	if len(content) > maxSkillFile {
		return fmt.Sprintf("SKILL.md is %s, over the %s a skill may have.", limits.Size(int64(len(content))), limits.Size(maxSkillFile))
	}
	if !strings.HasPrefix(content, "---") {
		return "SKILL.md must start with YAML frontmatter (---). See existing skills for format."
	}
	end := frontmatterEnd.FindStringIndex(content[3:])
	if end == nil {
		return "SKILL.md frontmatter is not closed. Ensure you have a closing '---' line."
	}
	text := content[3 : 3+end[0]]
	if err := limits.CheckYAMLDepth([]byte(text), limits.YAMLDepth, "frontmatter"); err != nil {
		return "YAML frontmatter parse error: " + err.Error()
	}
	var front any
	if !decodeYAML(text, &front) {
		return "YAML frontmatter parse error: it does not read as YAML."
	}
	m, ok := front.(map[string]any)
	switch {
	case !ok:
		return "Frontmatter must be a YAML mapping (key: value pairs)."
	case m["name"] == nil:
		return "Frontmatter must include 'name' field."
	case m["description"] == nil:
		return "Frontmatter must include 'description' field."
	case scalarText(m["description"]) == "":
		return "Frontmatter 'description' must be text."
	case utf8.RuneCountInString(scalarText(m["description"])) > maxSkillDescription:
		return fmt.Sprintf("Description exceeds %d characters.", maxSkillDescription)
	case strings.TrimSpace(content[3+end[1]:]) == "":
		return "SKILL.md must have content after the frontmatter (instructions, procedures, etc.)."
	}
	if what := memoryThreat(content); what != "" {
		return skillThreat(what)
	}
	return ""
}

func skillThreat(what string) string {
	return "Refused: the text matches '" + what + "'. A skill goes into the model's conversations, so it may not carry " +
		"instructions that override the model's rules or a way to send secrets out."
}

// writeSkillFile writes a skill's file whole (a crash leaves the old one
// or the new one, not half of each).
func writeSkillFile(path, content string) error {
	if len(content) > maxSkillFile {
		return fmt.Errorf("the file would be %s, over the %s a skill's file may have", limits.Size(int64(len(content))), limits.Size(maxSkillFile))
	}
	return atomicfile.Write(path, []byte(content), 0o644, nil)
}
