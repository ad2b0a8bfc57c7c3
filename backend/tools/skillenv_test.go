package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A skill's variables, read as the familiar agent reads them: names or
// mappings under required_environment_variables (one mapping alone too),
// setup.collect_secrets, prerequisites.env_vars; the first of a name wins,
// a name no variable could have is passed over; setup.help helps those
// without their own.
func TestSkillRequiredEnv(t *testing.T) {
	t.Parallel()
	front, _ := skillFrontmatter("---\nname: x\nrequired_environment_variables:\n" +
		"  - SCIMINER_API_KEY\n" +
		"  - name: HOMELAB_GH_TOKEN\n    prompt: \"GitHub token with public_repo scope\"\n    help: \"Create at https://github.com/settings/tokens\"\n    required_for: \"Fetching commits\"\n" +
		"  - name: OPTIONAL_TOKEN\n    optional: true\n" +
		"  - name: 9BAD\n  - name: SCIMINER_API_KEY\n    prompt: second, not kept\n  - 42\n" +
		"setup:\n  help: See the README.\n  collect_secrets:\n    - env_var: FAL_KEY\n      provider_url: https://fal.ai/keys\n    - env_var: OTHER_SECRET\n      prompt: the other\n" +
		"prerequisites:\n  env_vars: [LEGACY_TOKEN, '']\n---\nbody\n")
	got, _ := json.Marshal(skillRequiredEnv(front))
	want := `[{"name":"SCIMINER_API_KEY","prompt":"Enter value for SCIMINER_API_KEY","help":"See the README."},` +
		`{"name":"HOMELAB_GH_TOKEN","prompt":"GitHub token with public_repo scope","help":"Create at https://github.com/settings/tokens","required_for":"Fetching commits"},` +
		`{"name":"OPTIONAL_TOKEN","prompt":"Enter value for OPTIONAL_TOKEN","help":"See the README.","optional":true},` +
		`{"name":"FAL_KEY","prompt":"Enter value for FAL_KEY","help":"https://fal.ai/keys"},` +
		`{"name":"OTHER_SECRET","prompt":"the other","help":"See the README."},` +
		`{"name":"LEGACY_TOKEN","prompt":"Enter value for LEGACY_TOKEN","help":"See the README."}]`
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	one, _ := skillFrontmatter("---\nname: x\nrequired_environment_variables:\n  name: ONE_TOKEN\nprerequisites:\n  env_vars: TWO_TOKEN\n---\n")
	if got, _ := json.Marshal(skillRequiredEnv(one)); string(got) != `[{"name":"ONE_TOKEN","prompt":"Enter value for ONE_TOKEN"},{"name":"TWO_TOKEN","prompt":"Enter value for TWO_TOKEN"}]` {
		t.Fatalf("a single mapping, a single name: %s", got)
	}
	if got := skillRequiredEnv(map[string]any{"required_environment_variables": "JUST_TEXT"}); got != nil {
		t.Fatalf("a bare string is no list: %v", got)
	}
}

// skill_view says what the skill needs and what is missing, in the
// familiar agent's fields and words; on a chat platform, where nobody can
// be asked for a key unseen, where to set it. What is set is granted to
// the conversation's commands (the call's Grants); the .env is read again
// first (RefreshEnv).
func TestSkillViewReadiness(t *testing.T) {
	t.Setenv("ATRIUM_T_SKILL_SET_API_KEY", "sk-set")
	dir := t.TempDir()
	writeSkill(t, dir, "sci", "---\nname: sci\ndescription: d\nrequired_environment_variables:\n"+
		"  - name: ATRIUM_T_SKILL_SET_API_KEY\n  - name: ATRIUM_T_SKILL_MISSING_TOKEN\n    help: Get one at https://example.com/keys\n"+
		"  - name: ATRIUM_T_SKILL_OPTIONAL_TOKEN\n    optional: true\n---\nRun scripts/fold.py\n")
	writeSkill(t, dir, "plain", skillMD("plain", "needs nothing", "body"))
	refreshed := 0
	s := Skills{Dir: dir, RefreshEnv: func() { refreshed++ }}
	view := func(name, platform string) (map[string]any, []string) {
		c := &Call{Args: map[string]any{"name": name}, Settings: Settings{Skills: s}, Platform: platform, Dir: t.TempDir()}
		var m map[string]any
		if err := json.Unmarshal([]byte(skillViewTool().Run(t.Context(), c)), &m); err != nil {
			t.Fatal(err)
		}
		return m, c.Grants
	}
	got, grants := view("sci", "cli")
	fields := map[string]any{}
	for _, k := range []string{"required_commands", "missing_required_environment_variables", "missing_credential_files", "missing_required_commands",
		"setup_needed", "setup_skipped", "readiness_status", "setup_help", "setup_note", "gateway_setup_hint", "skill_dir"} {
		fields[k] = got[k]
	}
	b, _ := json.Marshal(fields)
	want := `{"gateway_setup_hint":null,"missing_credential_files":[],"missing_required_commands":[],` +
		`"missing_required_environment_variables":["ATRIUM_T_SKILL_MISSING_TOKEN"],"readiness_status":"setup_needed","required_commands":[],` +
		`"setup_help":"Get one at https://example.com/keys","setup_needed":true,` +
		`"setup_note":"Setup needed before using this skill: missing env $ATRIUM_T_SKILL_MISSING_TOKEN. Get one at https://example.com/keys",` +
		`"setup_skipped":false,"skill_dir":` + string(mustJSON(filepath.Join(dir, "sci"))) + `}`
	if string(b) != want {
		t.Fatalf("readiness:\n%s\nwant\n%s", b, want)
	}
	if req, _ := got["required_environment_variables"].([]any); len(req) != 3 {
		t.Fatalf("required: %v", got["required_environment_variables"])
	}
	if !slices.Equal(grants, []string{"ATRIUM_T_SKILL_SET_API_KEY", "ATRIUM_T_SKILL_OPTIONAL_TOKEN"}) || refreshed != 1 {
		t.Fatalf("grants %v, refreshed %d", grants, refreshed)
	}
	got, _ = view("sci", "telegram")
	if hint, _ := got["gateway_setup_hint"].(string); !strings.HasPrefix(hint, "Secure secret entry is not supported over messaging.") {
		t.Fatalf("on a chat platform: %v", got["gateway_setup_hint"])
	}
	t.Setenv("ATRIUM_T_SKILL_MISSING_TOKEN", "tok")
	got, grants = view("sci", "telegram")
	if got["setup_needed"] != false || got["readiness_status"] != "available" || got["setup_note"] != nil || got["gateway_setup_hint"] != nil || len(grants) != 3 {
		t.Fatalf("all set: %v %v", got, grants)
	}
	got, grants = view("plain", "cli")
	if got["setup_needed"] != false || grants != nil || refreshed != 3 {
		t.Fatalf("a skill that needs nothing: %v %v (refreshed %d)", got, grants, refreshed)
	}
	if req, ok := got["required_environment_variables"].([]any); !ok || len(req) != 0 {
		t.Fatalf("none required: %#v", got["required_environment_variables"])
	}
	// /<skill> says the same in its setup note, and grants the same.
	t.Setenv("ATRIUM_T_SKILL_MISSING_TOKEN", "")
	msg, granted, ok := s.Invocation(t.Context(), "sci", "", "cli", nil)
	if !ok || !strings.Contains(msg, "\n\n[Skill setup note: Setup needed before using this skill: missing env $ATRIUM_T_SKILL_MISSING_TOKEN. Get one at https://example.com/keys]") ||
		!slices.Equal(granted, []string{"ATRIUM_T_SKILL_SET_API_KEY", "ATRIUM_T_SKILL_OPTIONAL_TOKEN"}) {
		t.Fatalf("invocation: %v %q", granted, msg)
	}
	if msg, _, _ := s.Invocation(t.Context(), "sci", "", "discord", nil); !strings.Contains(msg, "[Skill setup note: Secure secret entry is not supported over messaging.") {
		t.Fatalf("invocation on a chat platform: %q", msg)
	}
}

// A granted variable reaches the conversation's commands although the
// commands' environment leaves keys' variables out; one not granted does
// not.
func TestGrantedVariablesReachCommands(t *testing.T) {
	t.Setenv("ATRIUM_T_GRANTED_API_KEY", "sk-granted")
	t.Setenv("ATRIUM_T_OTHER_API_KEY", "sk-other")
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "ATRIUM_T_") })
	c := &Call{Dir: t.TempDir(), Settings: Settings{Env: env}, Granted: []string{"ATRIUM_T_GRANTED_API_KEY", "ATRIUM_T_UNSET_TOKEN"}}
	out, _ := runToolWith(t, terminalTool(), c, map[string]any{"command": `echo "[$ATRIUM_T_GRANTED_API_KEY][$ATRIUM_T_OTHER_API_KEY][${ATRIUM_T_UNSET_TOKEN-unset}]"`})
	if got, _ := out["output"].(string); strings.TrimSpace(got) != "[sk-granted][][unset]" {
		t.Fatalf("output: %v", out)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// A listing says which variables each skill declares and which of those it
// needs are missing, from the head it reads of each SKILL.md.
func TestSkillListingSaysWhatIsMissing(t *testing.T) {
	t.Setenv("ATRIUM_T_LISTED_SET_TOKEN", "x")
	dir := t.TempDir()
	writeSkill(t, dir, "sci", "---\nname: sci\ndescription: d\nrequired_environment_variables: [ATRIUM_T_LISTED_SET_TOKEN, ATRIUM_T_LISTED_MISSING_TOKEN]\n"+
		"prerequisites:\n  env_vars: [ATRIUM_T_LISTED_LEGACY_TOKEN]\n---\nbody\n")
	writeSkill(t, dir, "plain", skillMD("plain", "d", "b"))
	infos, _ := Skills{Dir: dir}.Listing("cli")
	got := map[string][]string{}
	for _, i := range infos {
		got[i.Name] = i.Missing
		if i.Name == "sci" && len(i.Env) != 3 {
			t.Fatalf("declared: %+v", i.Env)
		}
	}
	if !slices.Equal(got["sci"], []string{"ATRIUM_T_LISTED_MISSING_TOKEN", "ATRIUM_T_LISTED_LEGACY_TOKEN"}) || got["plain"] != nil {
		t.Fatalf("missing: %v", got)
	}
}

// A skill that declares one of Atrium's own keys (Managed: its model's, a
// chat platform's token) is not handed it, as the familiar agent refuses a
// skill its provider credentials (GHSA-rhgp-j443-p4rf): skill_view says it
// is withheld; a grant made before the key became one of Atrium's is not
// honoured either.
func TestSkillsAreNotGivenAtriumsKeys(t *testing.T) {
	t.Setenv("ATRIUM_T_OWN_MODEL_KEY", "sk-model")
	t.Setenv("ATRIUM_T_LAB_TOKEN", "lab")
	dir := t.TempDir()
	writeSkill(t, dir, "greedy", "---\nname: greedy\ndescription: d\nrequired_environment_variables: [ATRIUM_T_OWN_MODEL_KEY, ATRIUM_T_LAB_TOKEN, ATRIUM_T_OWN_UNSET_KEY]\n---\nb\n")
	s := Skills{Dir: dir, Managed: func(n string) bool { return strings.HasPrefix(n, "ATRIUM_T_OWN_") }}
	c := &Call{Args: map[string]any{"name": "greedy"}, Settings: Settings{Skills: s}, Platform: "cli", Dir: t.TempDir()}
	var out map[string]any
	if err := json.Unmarshal([]byte(skillViewTool().Run(t.Context(), c)), &out); err != nil {
		t.Fatal(err)
	}
	// Withheld whether set or not: an unset one is not "missing" either.
	if !slices.Equal(c.Grants, []string{"ATRIUM_T_LAB_TOKEN"}) || fmt.Sprint(out["withheld_environment_variables"]) != "[ATRIUM_T_OWN_MODEL_KEY ATRIUM_T_OWN_UNSET_KEY]" ||
		out["setup_needed"] != false || fmt.Sprint(out["missing_required_environment_variables"]) != "[]" {
		t.Fatalf("grants %v, answer %v", c.Grants, out)
	}
	if _, granted, _ := s.Invocation(t.Context(), "greedy", "", "cli", nil); !slices.Equal(granted, []string{"ATRIUM_T_LAB_TOKEN"}) {
		t.Fatalf("/greedy granted %v", granted)
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "ATRIUM_T_") })
	run := &Call{Dir: t.TempDir(), Settings: Settings{Env: env, Skills: s}, Granted: []string{"ATRIUM_T_OWN_MODEL_KEY", "ATRIUM_T_LAB_TOKEN"}}
	res, _ := runToolWith(t, terminalTool(), run, map[string]any{"command": `echo "[$ATRIUM_T_OWN_MODEL_KEY][$ATRIUM_T_LAB_TOKEN]"`})
	if got, _ := res["output"].(string); strings.TrimSpace(got) != "[][lab]" {
		t.Fatalf("output: %v", res)
	}
}

// Where the person can be asked unseen (a terminal chat), a missing
// variable is asked for as the skill loads, and what they give counts at
// once (granted); one they skip leaves the familiar setup_skipped, and
// /<skill> says so in the familiar words.
func TestSkillAsksForWhatItNeeds(t *testing.T) {
	const given, skippedName = "ATRIUM_T_ASKED_TOKEN", "ATRIUM_T_SKIPPED_TOKEN"
	t.Cleanup(func() { _ = os.Unsetenv(given) })
	dir := t.TempDir()
	writeSkill(t, dir, "asks", "---\nname: asks\ndescription: d\nrequired_environment_variables:\n  - name: "+given+"\n    prompt: The lab token\n"+
		"  - name: "+skippedName+"\n---\nb\n")
	var asked []string
	ask := func(_ context.Context, skill string, e SkillEnv) (bool, error) {
		asked = append(asked, skill+":"+e.Name+":"+e.Prompt)
		if e.Name == given {
			return true, os.Setenv(given, "tok") // kept, as the terminal chat keeps it
		}
		return false, nil
	}
	s := Skills{Dir: dir}
	c := &Call{Args: map[string]any{"name": "asks"}, Settings: Settings{Skills: s}, Platform: "cli", Dir: t.TempDir(), AskSecret: ask}
	var out map[string]any
	if err := json.Unmarshal([]byte(skillViewTool().Run(t.Context(), c)), &out); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(asked) != "[asks:"+given+":The lab token asks:"+skippedName+":Enter value for "+skippedName+"]" ||
		!slices.Equal(c.Grants, []string{given}) || out["setup_skipped"] != true || fmt.Sprint(out["missing_required_environment_variables"]) != "["+skippedName+"]" {
		t.Fatalf("asked %v, grants %v, answer %v", asked, c.Grants, out)
	}
	asked = nil
	msg, _, _ := s.Invocation(t.Context(), "asks", "", "cli", ask)
	if fmt.Sprint(asked) != "[asks:"+skippedName+":Enter value for "+skippedName+"]" ||
		!strings.Contains(msg, "[Skill setup note: Required environment setup was skipped. Continue loading the skill and explain any reduced functionality if it matters.]") {
		t.Fatalf("asked %v: %q", asked, msg)
	}
}
