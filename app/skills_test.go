package app_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"atrium/app"
	"atrium/backend/apperr"
)

// Settings lists the profile's skills as the window's conversations are
// offered them, shows one as the model reads it, and takes one off
// (skills.disabled in config.yaml, the file's other lines kept) and puts
// it back; an unknown skill is not found, and nothing is written.
func TestSettingsSkills(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := filepath.Join(e.st.Home.SkillsDir(), "devops", "deploy-staging")
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: deploy-staging\ndescription: Deploy to staging\n---\n1. ship\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "scripts", "check.sh"), []byte("curl -f localhost\n"), 0o755)
	cfg := e.st.Home.ConfigPath()
	if err := os.WriteFile(cfg, []byte("# mine\nsessions:\n  trash_days: 7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	list, err := e.app.Settings.Skills()
	if err != nil || list.Dir != e.st.Home.SkillsDir() || len(list.Skills) != 1 || !reflect.DeepEqual(list.Skills[0], app.SkillDTO{Name: "deploy-staging",
		Description: "Deploy to staging", Category: "devops", Path: filepath.Join(dir, "SKILL.md"), Needs: []app.EnvNeedDTO{}}) {
		t.Fatalf("skills: %+v %v", list, err)
	}
	v, err := e.app.Settings.Skill(app.SkillRequest{Name: "deploy-staging"})
	if err != nil || !strings.HasPrefix(v.Content, "---\nname: deploy-staging") || strings.Join(v.Linked["scripts"], ",") != "scripts/check.sh" {
		t.Fatalf("view: %+v %v", v, err)
	}
	if v, err := e.app.Settings.Skill(app.SkillRequest{Name: "deploy-staging", File: "scripts/check.sh"}); err != nil || v.Content != "curl -f localhost\n" {
		t.Fatalf("a file: %+v %v", v, err)
	}
	off, err := e.app.Settings.OfferSkill(app.SkillRequest{Name: "deploy-staging", Offered: false})
	if err != nil || !off.Skills[0].Disabled || off.Skills[0].NotOffered != "disabled (skills.disabled)" {
		t.Fatalf("off: %+v %v", off, err)
	}
	if b, _ := os.ReadFile(cfg); !strings.HasPrefix(string(b), "# mine\nsessions:\n  trash_days: 7\n") || !strings.Contains(string(b), "skills:\n  disabled:\n    - deploy-staging\n") && !strings.Contains(string(b), "disabled: [deploy-staging]") {
		t.Fatalf("config.yaml:\n%s", b)
	}
	on, err := e.app.Settings.OfferSkill(app.SkillRequest{Name: "deploy-staging", Offered: true})
	if err != nil || on.Skills[0].Disabled || on.Skills[0].NotOffered != "" {
		t.Fatalf("on: %+v %v", on, err)
	}
	before, _ := os.ReadFile(cfg)
	if _, err := e.app.Settings.OfferSkill(app.SkillRequest{Name: "nope", Offered: false}); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("unknown: %v", err)
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Fatalf("an unknown skill changed config.yaml:\n%s", after)
	}
	if _, err := e.app.Settings.Skill(app.SkillRequest{Name: "nope"}); apperr.CodeOf(err) != apperr.NotFound || !strings.Contains(err.Error(), "Skill 'nope' not found.") {
		t.Fatalf("view unknown: %v", err)
	}
}

// A skill's variables that it needs and nobody set are asked for in
// Settings, unseen, and kept in the profile's .env; only a variable the
// skill declares, never one that changes how programs start nor one of
// Atrium's own keys (not asked for either); an unknown skill is not found;
// a refusal writes nothing.
func TestSettingsSkillKeys(t *testing.T) {
	const name = "ATRIUM_T_APP_SKILL_TOKEN"
	t.Cleanup(func() { _ = os.Unsetenv(name) })
	e := newEnv(t)
	dir := filepath.Join(e.st.Home.SkillsDir(), "sci")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: sci\ndescription: fold\nrequired_environment_variables:\n"+
		"  - name: "+name+"\n    prompt: The lab's token\n    help: https://lab.example/keys\n    required_for: folding\n"+
		"  - name: PATH\n  - name: ATRIUM_T_APP_SKILL_OPTIONAL_TOKEN\n    optional: true\n  - name: TELEGRAM_BOT_TOKEN\n---\nbody\n"), 0o644)
	list, err := e.app.Settings.Skills()
	if err != nil || len(list.Skills) != 1 || !reflect.DeepEqual(list.Skills[0].Needs, []app.EnvNeedDTO{{Name: name,
		Description: "The lab's token (for folding)", URL: "https://lab.example/keys", Secret: true}}) {
		t.Fatalf("needs: %+v %v", list, err)
	}
	for _, bad := range []app.SkillKeyRequest{{Skill: "sci", Name: "PATH", Value: "/tmp"}, {Skill: "sci", Name: "OTHER_TOKEN", Value: "x"},
		{Skill: "sci", Name: "TELEGRAM_BOT_TOKEN", Value: "123:x"},
		{Skill: "nope", Name: name, Value: "x"}} {
		if _, err := e.app.Settings.SetSkillKey(bad); err == nil {
			t.Fatalf("%+v was written", bad)
		}
	}
	if _, err := os.Stat(e.st.Home.EnvPath()); !os.IsNotExist(err) {
		t.Fatalf("a refusal wrote .env: %v", err)
	}
	got, err := e.app.Settings.SetSkillKey(app.SkillKeyRequest{Skill: "sci", Name: name, Value: "tok-123"})
	if err != nil || len(got.Skills[0].Needs) != 0 {
		t.Fatalf("set: %+v %v", got, err)
	}
	if b, _ := os.ReadFile(e.st.Home.EnvPath()); !strings.Contains(string(b), name+"=tok-123") {
		t.Fatalf(".env: %q", b)
	}
	if got, err := e.app.Settings.SetSkillKey(app.SkillKeyRequest{Skill: "sci", Name: name}); err != nil || len(got.Skills[0].Needs) != 1 {
		t.Fatalf("removed: %+v %v", got, err)
	}
}

// The composer's commands end with the skills' offered in the window or
// the dashboard, each marked as a skill; a skill named as a command is
// the command's.
func TestComposerCommandsListTheSkills(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, name := range []string{"release-notes", "status"} {
		dir := filepath.Join(e.st.Home.SkillsDir(), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: "+name+"\ndescription: about "+name+"\n---\nbody\n"), 0o644)
	}
	cmds, err := e.app.Sessions.Commands()
	if err != nil {
		t.Fatal(err)
	}
	last := cmds[len(cmds)-1]
	if last != (app.CommandDTO{Name: "release-notes", ArgsHint: "[instruction]", Description: "about release-notes", Skill: true}) {
		t.Fatalf("last: %+v", last)
	}
	for _, c := range cmds {
		if c.Name == "status" && c.Skill {
			t.Fatalf("/status listed as the skill: %+v", c)
		}
	}
}
