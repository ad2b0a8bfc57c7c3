package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/samber/lo"

	"atrium/app"
	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/sessions"
)

// The Settings page's model block: read as config.yaml says it (the
// familiar agent's names too), written field by field where it changed
// (keeping those names), refused whole when a field is wrong; its key kept
// in the profile's .env, private, never returned, and only a key's
// variable written there.
func TestSettingsModelAndItsKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path, envPath := e.st.Home.ConfigPath(), e.st.Home.EnvPath()
	const familiar = "# brought along\nmodel:\n  default: qwen   # the model\n  provider: custom\n  base_url: http://127.0.0.1:9/v1\n  api_key_env: ATRIUM_T_APP_KEY\n  context_length: 4096\n"
	if err := os.WriteFile(path, []byte(familiar), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := e.app.Settings.Get()
	if err != nil {
		t.Fatal(err)
	}
	want := app.ModelSettingsDTO{Provider: "custom", BaseURL: "http://127.0.0.1:9/v1", Name: "qwen", APIKeyEnv: "ATRIUM_T_APP_KEY", ContextWindow: 4096,
		Key: app.KeyStatusDTO{Name: "ATRIUM_T_APP_KEY", EnvPath: envPath}}
	if *got.Model != want {
		t.Fatalf("model = %+v\nwant %+v", *got.Model, want)
	}
	// Changed fields only, under the names the file uses.
	in := *got.Model
	in.Name, in.ContextWindow = "llama", 8192
	if _, err := e.app.Settings.Set(app.SettingsDTO{HookTimeoutSeconds: 30, RetentionDays: 90, Model: &in}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for _, line := range []string{"# brought along\n", "  default: llama   # the model\n", "  context_length: 8192\n", "  provider: custom\n"} {
		if !strings.Contains(string(b), line) {
			t.Fatalf("after Set, %q is missing:\n%s", line, b)
		}
	}
	if strings.Contains(string(b), "name:") || strings.Contains(string(b), "context_window") {
		t.Fatalf("the familiar names were doubled:\n%s", b)
	}
	// A wrong field refuses the whole Set.
	for _, bad := range []func(m *app.ModelSettingsDTO){
		func(m *app.ModelSettingsDTO) { m.BaseURL = "localhost:8080" },
		func(m *app.ModelSettingsDTO) { m.BaseURL = "https://user:pw@example.invalid/v1" },
		func(m *app.ModelSettingsDTO) { m.APIKeyEnv = "sk-or-v1-abc" },
		func(m *app.ModelSettingsDTO) { m.Provider = "antropic" },
		func(m *app.ModelSettingsDTO) { m.ContextWindow = -1 },
	} {
		m := in
		bad(&m)
		before, _ := os.ReadFile(path)
		if _, err := e.app.Settings.Set(app.SettingsDTO{HookTimeoutSeconds: 1, RetentionDays: 5, Model: &m}); apperr.CodeOf(err) != apperr.Invalid {
			t.Fatalf("%+v: %v", m, err)
		} else if strings.Contains(err.Error(), "pw@") || strings.Contains(err.Error(), "sk-or") {
			t.Fatalf("the refusal echoes a secret: %v", err)
		}
		if after, _ := os.ReadFile(path); string(after) != string(before) {
			t.Fatalf("a refused Set changed the file:\n%s", after)
		}
	}
	// The key: written private, said where, never returned.
	st, err := e.app.Settings.SetKey(app.KeyRequest{Name: "ATRIUM_T_APP_KEY", Value: "sk secret"})
	if err != nil {
		t.Fatal(err)
	}
	if st != (app.KeyStatusDTO{Name: "ATRIUM_T_APP_KEY", Source: "env_file", InEnvFile: true, EnvPath: envPath}) {
		t.Fatalf("status %+v", st)
	}
	if b, _ := os.ReadFile(envPath); string(b) != "ATRIUM_T_APP_KEY='sk secret'\n" {
		t.Fatalf(".env = %q", b)
	}
	if fi, _ := os.Stat(envPath); fi.Mode().Perm() != 0o600 {
		t.Fatalf(".env mode %v", fi.Mode().Perm())
	}
	if now, _ := e.app.Settings.Get(); now.Model.Key != st {
		t.Fatalf("Get's key status %+v", now.Model.Key)
	}
	// Not any variable: a key's only; not a broken value.
	for _, r := range []app.KeyRequest{{Name: "PATH", Value: "/tmp/evil"}, {Name: "LD_PRELOAD", Value: "/tmp/x.so"}, {Name: "PYTHONPATH", Value: "/tmp"},
		{Name: "a.b", Value: "x"}, {Name: "ATRIUM_T_APP_KEY", Value: "two\nlines"}, {Name: "ATRIUM_T_APP_KEY", Value: "\u201csk\u201d"}} {
		if _, err := e.app.Settings.SetKey(r); apperr.CodeOf(err) != apperr.Invalid {
			t.Fatalf("SetKey %s: %v", r.Name, err)
		} else if strings.Contains(err.Error(), r.Value) {
			t.Fatalf("the refusal echoes the value: %v", err)
		}
	}
	if b, _ := os.ReadFile(envPath); string(b) != "ATRIUM_T_APP_KEY='sk secret'\n" {
		t.Fatalf("a refused SetKey changed .env: %q", b)
	}
	// Another key's variable may go there (a plugin's token), and an empty
	// value removes one.
	if _, err := e.app.Settings.SetKey(app.KeyRequest{Name: "ATRIUM_T_GH_TOKEN", Value: "ghp_x"}); err != nil {
		t.Fatal(err)
	}
	if st, err := e.app.Settings.SetKey(app.KeyRequest{Name: "ATRIUM_T_APP_KEY"}); err != nil || st.InEnvFile || st.Source != "" {
		t.Fatalf("remove: %+v %v", st, err)
	}
	if b, _ := os.ReadFile(envPath); string(b) != "ATRIUM_T_GH_TOKEN=ghp_x\n" {
		t.Fatalf(".env after remove = %q", b)
	}
}

// A model given by its name alone (the familiar agent's short form) shows
// as its name, and becomes a block in that agent's words once the page
// changes it.
func TestSettingsTurnAModelByNameIntoABlock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := e.st.Home.ConfigPath()
	if err := os.WriteFile(path, []byte("# mine\nmodel: qwen/qwen3-coder\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := e.app.Settings.Get()
	if err != nil || got.Model.Name != "qwen/qwen3-coder" || got.Model.Provider != "offline" {
		t.Fatalf("get: %+v %v", got.Model, err)
	}
	// Saved unchanged: the file stays as it is.
	if _, err := e.app.Settings.Set(app.SettingsDTO{HookTimeoutSeconds: 30, RetentionDays: 90, Model: got.Model}); err != nil {
		t.Fatal(err)
	}
	m := *got.Model
	m.Provider, m.BaseURL, m.ContextWindow = "openrouter", "", 65536
	if _, err := e.app.Settings.Set(app.SettingsDTO{HookTimeoutSeconds: 30, RetentionDays: 90, Model: &m}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "# mine\n") || !strings.Contains(string(b), "model:\n  default: qwen/qwen3-coder\n  provider: openrouter\n  context_length: 65536\n") {
		t.Fatalf("the block:\n%s", b)
	}
	if now, _ := e.app.Settings.Get(); now.Model.Provider != "openrouter" || now.Model.Name != "qwen/qwen3-coder" || now.Model.Key.Name != "OPENROUTER_API_KEY" {
		t.Fatalf("after: %+v", now.Model)
	}
}

// "Check the saved model" asks the model for a word, as config.yaml and
// the keys say it now, and says how it went: an answer and its time, a
// refused key, nothing listening; never the key.
func TestSettingsCheckTheModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	path := e.st.Home.ConfigPath()
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer sk-check-right" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"invalid api key sk-check-wrong","type":"auth"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"OK"}}]}`))
	}))
	defer srv.Close()
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check := func() app.ModelCheckDTO {
		t.Helper()
		r, err := e.app.Settings.CheckModel()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.Error, "sk-check-") {
			t.Fatalf("the check shows a key: %+v", r)
		}
		return r
	}
	if r := check(); !r.OK || r.Provider != "offline" {
		t.Fatalf("offline: %+v", r)
	}
	write("model:\n  provider: openai\n  base_url: " + srv.URL + "/v1\n  name: m1\n  api_key_env: ATRIUM_T_CHECK_KEY\n")
	if r := check(); r.OK || !strings.Contains(r.Error, "ATRIUM_T_CHECK_KEY is not set") {
		t.Fatalf("no key: %+v", r)
	}
	if _, err := e.app.Settings.SetKey(app.KeyRequest{Name: "ATRIUM_T_CHECK_KEY", Value: "sk-check-wrong"}); err != nil {
		t.Fatal(err)
	}
	if r := check(); r.OK || !strings.Contains(r.Error, "check the API key in $ATRIUM_T_CHECK_KEY") {
		t.Fatalf("a wrong key: %+v", r)
	}
	// The key saved from the page is the one asked with, at once.
	if _, err := e.app.Settings.SetKey(app.KeyRequest{Name: "ATRIUM_T_CHECK_KEY", Value: "sk-check-right"}); err != nil {
		t.Fatal(err)
	}
	if r := check(); !r.OK || r.Reply != "OK" || r.Model != "m1" || auth.Load() != "Bearer sk-check-right" {
		t.Fatalf("the right key: %+v", r)
	}
	// Nothing listening.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	write("model:\n  provider: openai\n  base_url: " + dead.URL + "/v1\n  name: m1\n")
	if r := check(); r.OK || !strings.HasPrefix(r.Error, "nothing answers at "+strings.TrimPrefix(dead.URL, "http://")+": is the server running?") {
		t.Fatalf("nothing listening: %+v", r)
	}
	// A provider Atrium does not speak says what to set.
	write("model:\n  provider: anthropic\n  default: claude\n")
	if r := check(); r.OK || !strings.Contains(r.Error, "custom") {
		t.Fatalf("anthropic: %+v", r)
	}
}

// What Settings save is what the next turn asks, in the process that runs
// the window or the dashboard: a model whose key is not set yet fails the
// turn (nothing stored) but not the start; the key saved from the page,
// then a model name changed there, reach the next request; and the trash
// setting saved there is the next delete's.
func TestSettingsApplyToTheNextTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	var got []string // "Authorization model" of each request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model string `json:"model"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		got = append(got, r.Header.Get("Authorization")+" "+body.Model)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi from ` + body.Model + `"}}]}`))
	}))
	defer srv.Close()
	const cfg = "model:\n  provider: custom\n  base_url: %s/v1\n  default: m1\n  api_key_env: ATRIUM_T_LIVE_KEY\n"
	if err := os.WriteFile(e.st.Home.ConfigPath(), []byte(fmt.Sprintf(cfg, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.mustCreate(t, sessions.CreateParams{ID: "live"})
	if _, err := e.app.Sessions.Send("live", "hello"); apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), "$ATRIUM_T_LIVE_KEY is not set") ||
		!strings.Contains(err.Error(), "Settings") {
		t.Fatalf("a turn without the key: %v", err)
	}
	if ms, err := e.st.Sessions.Messages(ctx, "live", true); err != nil || len(ms) != 0 {
		t.Fatalf("a turn without the key stored %d messages (%v)", len(ms), err)
	}
	if _, err := e.app.Settings.SetKey(app.KeyRequest{Name: "ATRIUM_T_LIVE_KEY", Value: "sk-live-1"}); err != nil {
		t.Fatal(err)
	}
	if turn, err := e.app.Sessions.Send("live", "hello"); err != nil || turn.Reply != "hi from m1" {
		t.Fatalf("the turn after the key was saved: %+v %v", turn, err)
	}
	s, err := e.app.Settings.Get()
	if err != nil {
		t.Fatal(err)
	}
	s.Model.Name = "m2"
	if _, err := e.app.Settings.Set(s); err != nil {
		t.Fatal(err)
	}
	if turn, err := e.app.Sessions.Send("live", "again"); err != nil || turn.Reply != "hi from m2" {
		t.Fatalf("the turn after the model changed: %+v %v", turn, err)
	}
	// Another process (`atrium config set` at a terminal) writes the .env:
	// the next turn has its key; removed there, the key is gone here too.
	if err := os.WriteFile(e.st.Home.EnvPath(), []byte("ATRIUM_T_LIVE_KEY=sk-live-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if turn, err := e.app.Sessions.Send("live", "and again"); err != nil || turn.Reply != "hi from m2" {
		t.Fatalf("the turn after another process wrote the key: %+v %v", turn, err)
	}
	if err := os.Remove(e.st.Home.EnvPath()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.app.Sessions.Send("live", "once more"); !strings.Contains(fmt.Sprint(err), "$ATRIUM_T_LIVE_KEY is not set") {
		t.Fatalf("the turn after the key was removed elsewhere: %v", err)
	}
	// The trash setting saved here applies to the next delete.
	s.TrashDays = lo.ToPtr(0)
	if _, err := e.app.Settings.Set(s); err != nil {
		t.Fatal(err)
	}
	if r, err := e.app.Sessions.Delete("req-live", []string{"live"}); err != nil || r.Trashed {
		t.Fatalf("a delete after trash_days 0 was saved: %+v %v", r, err)
	}
	if _, err := e.app.Sessions.Get("live"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("the session deleted at once is still there: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(got, "|") != "Bearer sk-live-1 m1|Bearer sk-live-1 m2|Bearer sk-live-2 m2" {
		t.Fatalf("the requests: %q", got)
	}
}

// The agent's tools are set in Settings as config.yaml's keys the familiar
// agent reads (toolsets, terminal.cwd, terminal.timeout, agent.max_turns),
// and apply at the next turn; toolsets of tools Atrium does not have stay
// in the list; an invalid value changes nothing.
func TestSettingsToolsApplyToTheNextTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	work := t.TempDir()
	s, err := e.app.Settings.Get()
	if err != nil || s.Tools == nil || !s.Tools.Terminal || !s.Tools.Files || !s.Tools.Memory || s.Tools.Cwd != "" || s.Tools.TimeoutSeconds != 0 || s.Tools.MaxTurns != 0 ||
		len(s.Tools.OwnLists) != 0 || s.Tools.Problem != "" {
		t.Fatalf("defaults: %+v %v", s.Tools, err)
	}
	s.Tools.Terminal, s.Tools.Cwd, s.Tools.TimeoutSeconds, s.Tools.MaxTurns = false, work, 60, 40
	if _, err := e.app.Settings.Set(s); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(e.st.Home.ConfigPath())
	if err != nil || fmt.Sprint(cfg.Toolsets) != "[file memory web session_search todo clarify delegation messaging vision tts skills]" || cfg.Terminal.Cwd != work || cfg.Terminal.Timeout != 60 || cfg.Agent.MaxTurns != 40 {
		t.Fatalf("config.yaml: %+v %+v %v", cfg.Toolsets, cfg.Terminal, err)
	}
	e.mustCreate(t, sessions.CreateParams{ID: "tools"})
	if turn, err := e.app.Sessions.Send("tools", `use tool terminal: {"command": "touch ran"}`); err != nil || len(turn.ToolCalls) != 0 {
		t.Fatalf("the terminal switched off: %+v %v", turn, err)
	}
	if turn, err := e.app.Sessions.Send("tools", `use tool write_file: {"path": "notes.txt", "content": "x"}`); err != nil || len(turn.ToolCalls) != 1 {
		t.Fatalf("write_file: %+v %v", turn, err)
	}
	if _, err := os.Stat(filepath.Join(work, "notes.txt")); err != nil {
		t.Fatalf("the file is not in terminal.cwd: %v", err)
	}
	// The familiar agent's list keeps what Atrium does not have.
	if err := os.WriteFile(e.st.Home.ConfigPath(), []byte("toolsets: [web, hermes-cli]\nplatform_toolsets:\n  telegram: [file]\nterminal:\n  backend: docker\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ = e.app.Settings.Get()
	if !s.Tools.Terminal || !s.Tools.Files || fmt.Sprint(s.Tools.OwnLists) != "[telegram]" || !strings.Contains(s.Tools.Problem, "docker") {
		t.Fatalf("the familiar agent's keys: %+v", s.Tools)
	}
	s.Tools.Files = false
	if _, err := e.app.Settings.Set(s); err != nil {
		t.Fatal(err)
	}
	if cfg, _, _ := config.Load(e.st.Home.ConfigPath()); fmt.Sprint(cfg.Toolsets) != "[terminal memory web session_search todo clarify delegation messaging vision tts skills]" || cfg.Terminal.Backend != "docker" {
		t.Fatalf("toolsets: %v, backend %q", cfg.Toolsets, cfg.Terminal.Backend)
	}
	before, _ := os.ReadFile(e.st.Home.ConfigPath())
	for _, bad := range []app.ToolsSettingsDTO{{Terminal: true, TimeoutSeconds: 900}, {Terminal: true, Cwd: "relative/folder"}, {Terminal: true, MaxTurns: -1}} {
		s.Tools = &bad
		if _, err := e.app.Settings.Set(s); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if after, _ := os.ReadFile(e.st.Home.ConfigPath()); string(after) != string(before) {
		t.Fatalf("an invalid value changed config.yaml:\n%s", after)
	}
}

// Settings sets up the web tools: the switch keeps web in toolsets, the
// provider is web.backend (one Atrium has not is refused unless the file
// already names it), and its key, saved to .env, makes the tools offered;
// Get says which provider, where its key is and why they are not offered.
// (Not parallel: the key lands in this process's environment.)
func TestSettingsSetsUpTheWebTools(t *testing.T) {
	for _, k := range []string{"TAVILY_API_KEY", "FIRECRAWL_API_KEY", "FIRECRAWL_API_URL"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	e := newEnv(t)
	s, err := e.app.Settings.Get()
	if err != nil || !s.Tools.Web || s.Tools.WebBackend != "" || s.Tools.WebProvider != "firecrawl" || s.Tools.WebKey.Name != "FIRECRAWL_API_KEY" ||
		!strings.Contains(s.Tools.WebProblem, "needs FIRECRAWL_API_KEY") {
		t.Fatalf("defaults: %+v %v", s.Tools, err)
	}
	s.Tools.WebBackend = "exa"
	if _, err := e.app.Settings.Set(s); apperr.CodeOf(err) != apperr.Invalid || !strings.Contains(err.Error(), "firecrawl or tavily") {
		t.Fatalf("exa: %v", err)
	}
	s.Tools.WebBackend, s.Tools.Web = "Tavily", false
	if s, err = e.app.Settings.Set(s); err != nil || s.Tools.Web || s.Tools.WebBackend != "tavily" || s.Tools.WebKey.Name != "TAVILY_API_KEY" ||
		s.Tools.WebProblem != "Tavily (web.backend) needs TAVILY_API_KEY in the profile's .env" {
		t.Fatalf("tavily, off: %+v %v", s.Tools, err)
	}
	cfg, _, _ := config.Load(e.st.Home.ConfigPath())
	if cfg.Web.Backend != "tavily" || slices.Contains(cfg.Toolsets, "web") || fmt.Sprint(cfg.Toolsets) != "[terminal file memory session_search todo clarify delegation messaging vision tts skills]" {
		t.Fatalf("config.yaml: %+v %v", cfg.Web, cfg.Toolsets)
	}
	if _, err := e.app.Settings.SetKey(app.KeyRequest{Name: "TAVILY_API_KEY", Value: "tvly-from-settings"}); err != nil {
		t.Fatal(err)
	}
	s.Tools.Web = true
	if s, err = e.app.Settings.Set(s); err != nil || !s.Tools.Web || s.Tools.WebProblem != "" || s.Tools.WebKey.Source != "env_file" {
		t.Fatalf("with its key: %+v %v", s.Tools, err)
	}
	e.mustCreate(t, sessions.CreateParams{ID: "web"})
	turn, err := e.app.Sessions.Send("web", `use tool web_search: {"query": "q"}`)
	if err != nil || len(turn.ToolCalls) != 1 {
		t.Fatalf("web_search offered at the next turn: %+v %v", turn, err)
	}
	// A provider the familiar agent has and Atrium has not, written by
	// hand, stays as it is when other settings are saved.
	if err := os.WriteFile(e.st.Home.ConfigPath(), []byte("web:\n  backend: exa\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, _ = e.app.Settings.Get()
	s.Tools.MaxTurns = 12
	if s, err = e.app.Settings.Set(s); err != nil || s.Tools.WebBackend != "exa" || !strings.Contains(s.Tools.WebProblem, "exa (web.backend) is not a provider Atrium has") {
		t.Fatalf("exa kept: %+v %v", s.Tools, err)
	}
}
