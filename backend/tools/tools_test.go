package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// runTool runs t in dir with args and settings, and decodes the JSON the
// model reads. It returns the call too, for its NewDir.
func runTool(t *testing.T, tool Tool, dir string, s Settings, args map[string]any) (map[string]any, *Call) {
	t.Helper()
	return runToolCtx(t, context.Background(), tool, dir, s, args)
}

func runToolCtx(t *testing.T, ctx context.Context, tool Tool, dir string, s Settings, args map[string]any) (map[string]any, *Call) {
	t.Helper()
	return runToolCtxWith(t, ctx, tool, &Call{Dir: dir, Settings: s}, args)
}

// runToolWith runs tool as c describes the call, with args as the model
// sends them.
func runToolWith(t *testing.T, tool Tool, c *Call, args map[string]any) (map[string]any, *Call) {
	t.Helper()
	return runToolCtxWith(t, context.Background(), tool, c, args)
}

func runToolCtxWith(t *testing.T, ctx context.Context, tool Tool, c *Call, args map[string]any) (map[string]any, *Call) {
	t.Helper()
	// The arguments as the model's call brings them: decoded JSON (numbers
	// are float64).
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		args = nil
		if err := json.Unmarshal(b, &args); err != nil {
			t.Fatal(err)
		}
	}
	c.Args = args
	out := tool.Run(ctx, c)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%s returned no JSON object: %v\n%s", tool.Name, err, out)
	}
	return m, c
}

// str is a result's text field ("" when absent).
func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// num is a result's number field (-999 when absent).
func num(t *testing.T, m map[string]any, key string) int {
	t.Helper()
	f, ok := m[key].(float64)
	if !ok {
		t.Fatalf("%s is %T (%v), not a number, in %v", key, m[key], m[key], m)
	}
	return int(f)
}

// strs is a result's list of texts.
func strs(t *testing.T, m map[string]any, key string) []string {
	t.Helper()
	raw, ok := m[key].([]any)
	if !ok {
		t.Fatalf("%s is %T, not a list, in %v", key, m[key], m)
	}
	out := make([]string, len(raw))
	for i, v := range raw {
		out[i] = fmt.Sprint(v)
	}
	return out
}

func putFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readBack(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func realDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func keys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}

// The fourteen tools are offered in order, each with a description and a JSON-object schema.
func TestAllToolsOfferedWithValidSchemas(t *testing.T) {
	t.Parallel()
	want := []string{"terminal", "process", "read_file", "write_file", "patch", "search_files", "web_search", "web_extract", "send_message",
		"vision_analyze", "text_to_speech", "skills_list", "skill_view", "skill_manage"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, tool := range All() {
		var schema map[string]any
		if err := json.Unmarshal([]byte(tool.Parameters), &schema); err != nil {
			t.Errorf("%s: parameters are not JSON: %v", tool.Name, err)
		}
		if schema["type"] != "object" || tool.Description == "" {
			t.Errorf("%s: schema %v, description %q", tool.Name, schema["type"], tool.Description)
		}
		if tool.Writes != (tool.Name == "write_file" || tool.Name == "patch") {
			t.Errorf("%s: Writes = %v", tool.Name, tool.Writes)
		}
	}
}

// A call with no arguments gets an error the model reads, not a crash.
func TestRunWithNilArgs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tool := range All() {
		out := tool.Run(context.Background(), &Call{Dir: dir})
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("%s: %v: %s", tool.Name, err, out)
		}
		if str(m, "error") == "" {
			t.Errorf("%s with no arguments: no error in %s", tool.Name, out)
		}
	}
}

// noEnv and envOf stand for the process's environment in the web tools'
// settings.
func noEnv(string) string { return "" }

func envOf(name, value string) func(string) string {
	return func(n string) string {
		if n == name {
			return value
		}
		return ""
	}
}

// seeing is a vision model that answers.
var seeing = Vision{Ask: func(context.Context, string, string) (string, error) { return "a cat", nil }}

var speaking = Speech{Speak: func(context.Context, SpeechRequest) (SpeechResult, error) { return SpeechResult{}, nil }}

// toolsets and platform_toolsets decide which tools a platform's turn offers, as the familiar agent reads them.
func TestSettingsEnabled(t *testing.T) {
	t.Parallel()
	all := []string{"clarify", "delegate_task", "memory", "patch", "process", "read_file", "search_files", "session_search", "terminal", "todo", "write_file"}
	term := []string{"process", "terminal"}
	file := []string{"patch", "read_file", "search_files", "write_file"}
	cases := []struct {
		name     string
		s        Settings
		platform string
		want     []string
		warnings int
		warnHas  string
	}{
		{"default offers all", Settings{}, "cli", all, 0, ""},
		{"default on telegram", Settings{}, "telegram", all, 0, ""},
		{"file only", Settings{Toolsets: []string{"file"}}, "cli", file, 0, ""},
		{"terminal only", Settings{Toolsets: []string{"terminal"}}, "cli", term, 0, ""},
		{"hermes-cli", Settings{Toolsets: []string{"hermes-cli"}}, "cli", all, 0, ""},
		{"all", Settings{Toolsets: []string{"all"}}, "cli", all, 0, ""},
		{"star", Settings{Toolsets: []string{"*"}}, "cli", all, 0, ""},
		{"debugging", Settings{Toolsets: []string{"debugging"}}, "cli", []string{"patch", "process", "read_file", "search_files", "terminal", "write_file"}, 0, ""},
		{"session_search alone", Settings{Toolsets: []string{"session_search"}}, "cli", []string{"session_search"}, 0, ""},
		{"case and spaces", Settings{Toolsets: []string{" FILE "}}, "cli", file, 0, ""},
		{"a tool named alone", Settings{Toolsets: []string{"read_file"}}, "cli", []string{"read_file"}, 0, ""},
		{"vision without a model says so", Settings{Toolsets: []string{"vision"}}, "cli", nil, 1, "vision_analyze needs a model that can see images"},
		{"vision with a model", Settings{Toolsets: []string{"vision"}, Vision: seeing}, "cli", []string{"vision_analyze"}, 0, ""},
		{"tts without a provider says so", Settings{Toolsets: []string{"tts"}, Speech: Speech{Unavailable: "the TTS provider is edge"}}, "cli", nil, 1, "edge"},
		{"tts with a provider", Settings{Toolsets: []string{"tts"}, Speech: speaking}, "cli", []string{"text_to_speech"}, 0, ""},
		{"all leaves tts out quietly", Settings{Toolsets: []string{"all"}, Speech: Speech{Unavailable: "no"}, Vision: seeing}, "cli", append(slices.Clone(all[:10]), "vision_analyze", "write_file"), 0, ""},
		{"vision offline says why", Settings{Toolsets: []string{"vision_analyze"}, Vision: Vision{Unavailable: "the main model is offline"}}, "cli", nil, 1, "offline"},
		{"all with vision", Settings{Vision: seeing}, "cli", append(slices.Clone(all[:10]), "vision_analyze", "write_file"), 0, ""},
		{"web without a key says so", Settings{Toolsets: []string{"web", "browser"}, Web: Web{Getenv: noEnv}}, "cli", nil, 1, "FIRECRAWL_API_KEY"},
		{"web with a key", Settings{Toolsets: []string{"web"}, Web: Web{Getenv: envOf("TAVILY_API_KEY", "k")}}, "cli", []string{"web_extract", "web_search"}, 0, ""},
		{"search is web_search", Settings{Toolsets: []string{"search"}, Web: Web{Getenv: envOf("FIRECRAWL_API_URL", "http://fc")}}, "cli", []string{"web_search"}, 0, ""},
		{"a provider Atrium has not", Settings{Toolsets: []string{"web"}, Web: Web{Backend: "exa", Getenv: envOf("EXA_API_KEY", "k")}}, "cli", nil, 1, "exa (web.backend) is not a provider"},
		{"all without a key leaves web out quietly", Settings{Toolsets: []string{"all"}, Web: Web{Getenv: noEnv}}, "cli", all, 0, ""},
		{"all with a key", Settings{Toolsets: []string{"all"}, Web: Web{Getenv: envOf("FIRECRAWL_API_KEY", "k")}}, "cli", []string{"clarify", "delegate_task", "memory", "patch", "process", "read_file", "search_files", "session_search", "terminal", "todo", "web_extract", "web_search", "write_file"}, 0, ""},
		{"empty list offers nothing", Settings{Toolsets: []string{}}, "cli", nil, 0, ""},
		{"bogus warns", Settings{Toolsets: []string{"bogus"}}, "cli", nil, 1, "bogus"},
		{"bogus beside file", Settings{Toolsets: []string{"file", "bogus"}}, "cli", file, 1, "bogus"},
		{"platform list over toolsets", Settings{Toolsets: []string{"terminal"},
			PlatformToolsets: map[string][]string{"telegram": {"file"}}}, "telegram", file, 0, ""},
		{"other platform keeps toolsets", Settings{Toolsets: []string{"terminal"},
			PlatformToolsets: map[string][]string{"telegram": {"file"}}}, "cli", term, 0, ""},
		{"other platform defaults to all", Settings{PlatformToolsets: map[string][]string{"telegram": {"file"}}}, "discord", all, 0, ""},
		{"desktop takes cli's", Settings{Toolsets: []string{"file"},
			PlatformToolsets: map[string][]string{"cli": {"terminal"}}}, "desktop", term, 0, ""},
		{"dashboard takes cli's", Settings{Toolsets: []string{"file"},
			PlatformToolsets: map[string][]string{"cli": {"terminal"}}}, "dashboard", term, 0, ""},
		{"desktop's own over cli's", Settings{PlatformToolsets: map[string][]string{"cli": {"terminal"}, "desktop": {"file"}}},
			"desktop", file, 0, ""},
		{"desktop without cli's takes toolsets", Settings{Toolsets: []string{"file"}}, "desktop", file, 0, ""},
		{"telegram does not take cli's", Settings{Toolsets: []string{"file"},
			PlatformToolsets: map[string][]string{"cli": {"terminal"}}}, "telegram", file, 0, ""},
		{"docker drops terminal", Settings{Backend: "docker"}, "cli", append(append([]string{"clarify", "delegate_task", "memory"}, file[:3]...), "session_search", "todo", "write_file"), 1, "docker"},
		{"docker without terminal says nothing", Settings{Backend: "docker", Toolsets: []string{"file"}}, "cli", file, 0, ""},
		{"local keeps terminal", Settings{Backend: "local"}, "cli", all, 0, ""},
		{"LOCAL keeps terminal", Settings{Backend: "LOCAL"}, "cli", all, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			on, warnings := tc.s.Enabled(tc.platform)
			if got := keys(on); !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("Enabled(%q) = %v, want %v", tc.platform, got, tc.want)
			}
			if len(warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", warnings, tc.warnings)
			}
			if tc.warnHas != "" && (len(warnings) == 0 || !strings.Contains(warnings[0], tc.warnHas)) {
				t.Errorf("warnings %q do not name %q", warnings, tc.warnHas)
			}
		})
	}
}

// A conversation starts in terminal.cwd, else the command line's folder in a terminal, else home.
func TestSettingsStartDir(t *testing.T) {
	t.Parallel()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home folder:", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	abs := t.TempDir()
	cases := []struct {
		cwd, platform, want string
	}{
		{abs, "cli", abs},
		{abs, "telegram", abs},
		{abs + "/sub/../", "cli", abs},
		{"~/x", "telegram", filepath.Join(home, "x")},
		{"~", "cli", home},
		{".", "cli", wd},
		{".", "telegram", home},
		{"", "cli", wd},
		{"", "telegram", home},
		{"auto", "discord", home},
		{"cwd", "cli", wd},
		{"relative/dir", "telegram", home}, // not absolute: not taken
		{"  " + abs + "  ", "telegram", abs},
	}
	for _, tc := range cases {
		if got := (Settings{Cwd: tc.cwd}).StartDir(tc.platform); got != tc.want {
			t.Errorf("StartDir(%q) with cwd %q = %q, want %q", tc.platform, tc.cwd, got, tc.want)
		}
	}
}

// Each conversation keeps its folder, and at most maxDirs are kept, the oldest let go first.
func TestDirsKeptAndBounded(t *testing.T) {
	t.Parallel()
	var d Dirs
	if got := d.Get("none"); got != "" {
		t.Fatalf("Get on empty Dirs = %q", got)
	}
	d.Set("a", "/one")
	d.Set("b", "/two")
	d.Set("a", "/three") // a key set again keeps its place
	if d.Get("a") != "/three" || d.Get("b") != "/two" {
		t.Fatalf("a=%q b=%q", d.Get("a"), d.Get("b"))
	}
	for i := range maxDirs + 10 {
		d.Set(fmt.Sprint("k", i), fmt.Sprint("/d", i))
	}
	d.k.mu.Lock()
	n, order := len(d.k.m), len(d.k.order)
	d.k.mu.Unlock()
	if n > maxDirs || order > maxDirs {
		t.Fatalf("kept %d dirs (%d in order), above %d", n, order, maxDirs)
	}
	if d.Get("a") != "" || d.Get("k0") != "" {
		t.Fatal("the oldest keys were not let go")
	}
	if last := fmt.Sprint("k", maxDirs+9); d.Get(last) != fmt.Sprint("/d", maxDirs+9) {
		t.Fatalf("the newest key %s is gone", last)
	}
}

// A conversation's grants add up without repeats, and go on with it.
func TestGrants(t *testing.T) {
	t.Parallel()
	var g Grants
	g.Add("a", "X_API_KEY", "Y_TOKEN")
	g.Add("a", "Y_TOKEN", "Z_SECRET")
	g.Add("b")
	if got := g.Get("a"); !slices.Equal(got, []string{"X_API_KEY", "Y_TOKEN", "Z_SECRET"}) || g.Get("b") != nil {
		t.Fatalf("a=%v b=%v", got, g.Get("b"))
	}
	g.Get("a")[0] = "changed"
	g.Move("a", "c")
	if got := g.Get("c"); !slices.Equal(got, []string{"X_API_KEY", "Y_TOKEN", "Z_SECRET"}) {
		t.Fatalf("moved: %v", got)
	}
}

// Dirs is safe for conversations running at once.
func TestDirsConcurrent(t *testing.T) {
	t.Parallel()
	var d Dirs
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				k := fmt.Sprint(g, "-", i%10)
				d.Set(k, "/x")
				_ = d.Get(k)
			}
		}()
	}
	for range 8 {
		<-done
	}
	if d.Get("0-0") != "/x" {
		t.Fatal("a key set by a goroutine is missing")
	}
}

// Numbers and switches the model sends as text are read as such.
func TestArgumentsAsText(t *testing.T) {
	t.Parallel()
	c := &Call{Args: map[string]any{"n": "5", "f": 7.0, "bad": "x", "b": "yes", "t": true, "s": 3.0}}
	if c.integer("n", 0) != 5 || c.integer("f", 0) != 7 || c.integer("bad", 9) != 9 || c.integer("none", 4) != 4 {
		t.Fatal("integer arguments misread")
	}
	if !c.boolean("b") || !c.boolean("t") || c.boolean("none") {
		t.Fatal("boolean arguments misread")
	}
	if s, ok := c.str("s"); !ok || s != "3" {
		t.Fatalf("str of a number = %q %v", s, ok)
	}
}

// fileHas says whether path exists with something in it.
func fileHas(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && len(strings.TrimSpace(string(b))) > 0
}

// A terminal call's folder is read one way for running it and for checking
// it: workdir from the conversation's folder, ~ expanded.
func TestWorkDir(t *testing.T) {
	t.Parallel()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home folder")
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{nil, "/conv"},
		{map[string]any{"workdir": "sub"}, "/conv/sub"},
		{map[string]any{"workdir": "/abs"}, "/abs"},
		{map[string]any{"workdir": "~/x"}, filepath.Join(home, "x")},
		{map[string]any{"workdir": "  "}, "/conv"},
	} {
		if got := WorkDir("/conv", c.args); got != c.want {
			t.Errorf("WorkDir(%v) = %q, want %q", c.args, got, c.want)
		}
	}
}
