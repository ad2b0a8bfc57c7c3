package tools

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
)

// What a skill needs before it works, as the familiar agent reads its
// frontmatter: the variables (keys, tokens) its scripts read. skill_view
// says which are missing and how to set them; those that are set reach
// the conversation's terminal commands (Grants), which are not given keys'
// variables otherwise.

// SkillEnv is one variable a skill needs.
type SkillEnv struct {
	Name        string `json:"name"`
	Prompt      string `json:"prompt"`
	Help        string `json:"help,omitempty"`
	RequiredFor string `json:"required_for,omitempty"`
	Optional    bool   `json:"optional,omitempty"`
}

var envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// skillRequiredEnv is the variables a skill's frontmatter declares, in the
// familiar agent's three ways, the first of a name kept:
// required_environment_variables (names, or mappings with name, prompt,
// help, required_for, optional), setup.collect_secrets (env_var, prompt,
// provider_url or url) and the older prerequisites.env_vars (names);
// setup.help is the help of those without their own.
func skillRequiredEnv(front map[string]any) []SkillEnv {
	setup, _ := front["setup"].(map[string]any)
	setupHelp := cleanText(setup["help"])
	var legacy []any
	if pre, ok := front["prerequisites"].(map[string]any); ok {
		switch v := pre["env_vars"].(type) {
		case string:
			if v != "" {
				legacy = []any{v}
			}
		case []any:
			legacy = v
		}
	}
	var entries []map[string]any
	for _, item := range dictList(front["required_environment_variables"]) {
		switch v := item.(type) {
		case string:
			entries = append(entries, map[string]any{"name": v})
		case map[string]any:
			entries = append(entries, v)
		}
	}
	for _, item := range dictList(setup["collect_secrets"]) {
		if m, ok := item.(map[string]any); ok {
			url := strings.TrimSpace(pyText(firstTruthy(m["provider_url"], m["url"], "")))
			e := map[string]any{"name": m["env_var"], "prompt": m["prompt"]}
			if url != "" {
				e["url"] = url
			}
			entries = append(entries, e)
		}
	}
	for _, v := range legacy {
		if strings.TrimSpace(pyText(v)) != "" {
			entries = append(entries, map[string]any{"name": pyText(v)})
		}
	}
	var out []SkillEnv
	for _, e := range entries {
		name := strings.TrimSpace(pyText(firstTruthy(e["name"], e["env_var"], "")))
		if name == "" || !envVarName.MatchString(name) || slices.ContainsFunc(out, func(x SkillEnv) bool { return x.Name == name }) {
			continue
		}
		env := SkillEnv{Name: name, Prompt: strings.TrimSpace(pyText(firstTruthy(e["prompt"], "Enter value for "+name))),
			Help: cleanText(firstTruthy(e["help"], e["provider_url"], e["url"], setupHelp)), RequiredFor: cleanText(e["required_for"]),
			Optional: truthy(e["optional"])}
		out = append(out, env)
	}
	return out
}

// SecretAsker asks the person at the surface for a variable a skill
// needs, unseen, and keeps what they give (the profile's .env, this
// process's environment), as the familiar agent's terminal asks when a
// skill loads; false when they gave none.
type SecretAsker func(ctx context.Context, skill string, e SkillEnv) (bool, error)

// messagingSetupHint is what skill_view says on a chat platform, where
// nobody can be asked for a key unseen.
const messagingSetupHint = "Secure secret entry is not supported over messaging. Set the key in Atrium's window or dashboard " +
	"(Settings, \"How the agent does things\", the skill), or with `atrium config set NAME VALUE` where Atrium runs."

// readiness is skill_view's account of what the skill named skill needs
// (the familiar agent's fields) and the variables of it that are set,
// which the conversation's commands are then given. ask, when the person
// is at the surface (a terminal chat), is asked for each that is missing
// first; one they skip leaves setup_skipped.
func (s Skills) readiness(ctx context.Context, front map[string]any, platform, skill string, ask SecretAsker) (map[string]any, []string) {
	required := skillRequiredEnv(front)
	if len(required) > 0 && s.RefreshEnv != nil {
		s.RefreshEnv() // a key set since, by another process, counts
	}
	skipped := false
	missing, withheld := []string{}, []string{}
	var available []string
	for _, e := range required {
		if s.missing(e) && ask != nil && ctx.Err() == nil {
			if stored, err := ask(ctx, skill, e); err != nil || !stored {
				skipped = true
			}
		}
		switch {
		case s.managed(e.Name):
			// One of Atrium's own keys: a skill (which a conversation can
			// write) never gets it for its commands, set or not.
			withheld = append(withheld, e.Name)
			slog.Warn("a skill declares one of Atrium's own keys; its commands are not given it", "variable", e.Name)
		case s.missing(e):
			missing = append(missing, e.Name)
		default:
			available = append(available, e.Name)
		}
	}
	skipped = skipped && len(missing) > 0
	status := "available"
	if len(missing) > 0 {
		status = "setup_needed"
	}
	out := map[string]any{"required_environment_variables": orEmptyEnv(required), "required_commands": []string{},
		"missing_required_environment_variables": missing, "missing_credential_files": []string{}, "missing_required_commands": []string{},
		"setup_needed": len(missing) > 0, "setup_skipped": skipped, "readiness_status": status}
	if len(withheld) > 0 {
		out["withheld_environment_variables"] = withheld
		out["withheld_note"] = "These are keys Atrium itself uses (its model's, a chat platform's token, ...): a skill's commands are " +
			"never given them. Use a variable of the skill's own (another name) for its key."
	}
	help := ""
	for _, e := range required {
		if e.Help != "" {
			help = e.Help
			out["setup_help"] = help
			break
		}
	}
	if len(missing) > 0 {
		if !localSurface(platform) {
			out["gateway_setup_hint"] = messagingSetupHint
		}
		items := make([]string, len(missing))
		for i, n := range missing {
			items[i] = "env $" + n
		}
		note := fmt.Sprintf("Setup needed before using this skill: missing %s.", strings.Join(items, ", "))
		if help != "" {
			note += " " + help
		}
		out["setup_note"] = note
	}
	return out, available
}

// missing reports whether e is a variable the skill needs that this
// process does not have; one of Atrium's own keys never is (it is
// withheld, set or not).
func (s Skills) missing(e SkillEnv) bool {
	return !e.Optional && !s.managed(e.Name) && os.Getenv(e.Name) == ""
}

// localSurface reports whether platform is one where the person sits at
// Atrium itself (a terminal, the window, the dashboard).
func localSurface(platform string) bool {
	return platform == "" || platform == "cli" || platform == "desktop" || platform == "dashboard"
}

func orEmptyEnv(v []SkillEnv) []SkillEnv {
	if v == nil {
		return []SkillEnv{}
	}
	return v
}

// dictList is v as a list: a mapping as the one item, a list as it is,
// anything else as none.
func dictList(v any) []any {
	switch v := v.(type) {
	case map[string]any:
		return []any{v}
	case []any:
		return v
	}
	return nil
}

// cleanText is v trimmed when it is text that is not blank, else "".
func cleanText(v any) string {
	if s, ok := v.(string); ok {
		return strings.TrimSpace(s)
	}
	return ""
}

// firstTruthy is the first of vs that Python takes for true (the `or`
// chain of the familiar agent's reading), else the last.
func firstTruthy(vs ...any) any {
	for _, v := range vs {
		if truthy(v) {
			return v
		}
	}
	return vs[len(vs)-1]
}
