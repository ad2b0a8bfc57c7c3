package dotenv

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func ptr(s string) *string { return &s }

func deref(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestParseStatements(t *testing.T) {
	text := "# title\n\nA=1\nexport B = two words # comment\nC='single # not a comment'\nD=\"line1\\nline2\"\nE=\"multi\nline\"\nF\nG=\n'H K'=quoted key\nbad line here\nI=a#b\n"
	bs := Parse(text)
	type kv struct {
		key  string
		val  *string
		err  bool
		line int
	}
	var got []kv
	for _, b := range bs {
		got = append(got, kv{b.Key, b.Value, b.Err, b.Line})
	}
	want := []kv{
		{"A", ptr("1"), false, 3},
		{"B", ptr("two words"), false, 4},
		{"C", ptr("single # not a comment"), false, 5},
		{"D", ptr("line1\nline2"), false, 6},
		{"E", ptr("multi\nline"), false, 7},
		{"F", nil, false, 9},
		{"G", ptr(""), false, 10},
		{"H K", ptr("quoted key"), false, 11},
		{"", nil, true, 12},
		{"I", ptr("a#b"), false, 13},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d statements, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.key != w.key || g.err != w.err || g.line != w.line || (g.val == nil) != (w.val == nil) || g.val != nil && *g.val != *w.val {
			t.Errorf("statement %d: got %+v (%q), want %+v", i, g, deref(g.val), w)
		}
	}
	for _, b := range bs {
		if s := text[b.Start:b.End]; !strings.HasSuffix(s, "\n") {
			t.Errorf("statement at line %d ends without its newline: %q", b.Line, s)
		}
	}
}

func TestValuesExpandAsLoadDotenvDoes(t *testing.T) {
	env := map[string]string{"HOME": "/home/p", "SET": "from-env"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	text := "A=${HOME}/x\nSET=from-file\nB=${SET}\nC=${NOPE:-def}\nD=${NOPE}\nE='${A}'\nF=${A:x}\nG=bare\nG\nH=${G:-g}\n"
	order, vals := Values(Parse(text), lookup)
	want := map[string]string{
		"A": "/home/p/x", "SET": "from-file", "B": "from-env", "C": "def", "D": "",
		"E": "/home/p/x", // python-dotenv expands in single quotes too
		"F": "${A:x}", "H": "",
	}
	if !maps.Equal(vals, want) {
		t.Errorf("values:\n got %v\nwant %v", vals, want)
	}
	if !slices.Equal(order, []string{"A", "SET", "B", "C", "D", "E", "F", "H"}) {
		t.Errorf("order %v", order)
	}
}

func TestQuoteReadsBack(t *testing.T) {
	for _, v := range []string{"sk-or-v1-abc123", "", "two words", " lead", "trail ", "a#b", "a #b", `say "hi"`, "it's", `back\slash`, `ends\`, `it's "x" \ y`, "$HOME", "tab\there", "=eq", "'q'", `"dq"`} {
		q, err := Quote(v)
		if err != nil {
			t.Errorf("Quote(%q): %v", v, err)
			continue
		}
		text := "K=" + q + "\nNEXT=\"n\"\n"
		_, vals := Values(Parse(text), nil)
		if vals["K"] != v || vals["NEXT"] != "n" {
			t.Errorf("Quote(%q) = %s reads back as %q (NEXT %q)", v, q, vals["K"], vals["NEXT"])
		}
	}
	for _, v := range []string{"a\nb", "x\ry", "nul\x00", "“smart”", "${HOME}", `two words\`} {
		if _, err := Quote(v); err == nil {
			t.Errorf("Quote(%q) should refuse", v)
		} else if strings.Contains(err.Error(), v) {
			t.Errorf("the refusal echoes the value: %v", err)
		}
	}
}

func TestSetAndUnsetTouchOnlyTheirKey(t *testing.T) {
	text := "# keys\nOPENAI_API_KEY=old\n\nexport TELEGRAM_BOT_TOKEN='tg' # the bot\nOPENAI_API_KEY=older\nOTHER=\"x\"\n"
	out, err := Set(text, "OPENAI_API_KEY", "sk new")
	if err != nil {
		t.Fatal(err)
	}
	want := "# keys\nOPENAI_API_KEY='sk new'\n\nexport TELEGRAM_BOT_TOKEN='tg' # the bot\nOTHER=\"x\"\n"
	if out != want {
		t.Errorf("set:\n%s\nwant:\n%s", out, want)
	}
	out, err = Set(out, "TELEGRAM_BOT_TOKEN", "123:abc")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\nexport TELEGRAM_BOT_TOKEN=123:abc\nOTHER") {
		t.Errorf("export kept:\n%s", out)
	}
	if out, err := Set("NO_NEWLINE=1", "NEW", "v"); err != nil || out != "NO_NEWLINE=1\nNEW=v\n" {
		t.Errorf("append: %q %v", out, err)
	}
	if out, err := Set("", "NEW", "v"); err != nil || out != "NEW=v\n" {
		t.Errorf("new file: %q %v", out, err)
	}
	out, removed, err := Unset(text, "OPENAI_API_KEY")
	if err != nil || !removed || out != "# keys\n\nexport TELEGRAM_BOT_TOKEN='tg' # the bot\nOTHER=\"x\"\n" {
		t.Errorf("unset: %q %v %v", out, removed, err)
	}
	if out, removed, err := Unset(text, "MISSING"); err != nil || removed || out != text {
		t.Errorf("unset of a missing key: %q %v %v", out, removed, err)
	}
	// A quote left open above: the new line would be swallowed by it.
	if _, err := Set("A=\"open\nB=1\n", "C", `has "quotes" and it's`); err == nil {
		t.Errorf("an edit that reads back differently should be refused")
	}
	if _, err := Set("", "1BAD", "v"); err == nil {
		t.Errorf("a bad name should be refused")
	}
}

func TestLoadKeepsTheEnvironmentsValues(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".env")
	if err := os.WriteFile(path, []byte("\ufeffA=1\nB=from-file\nbroken 'line\nC=${B}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"B": "from-env"}
	rep, err := Load(path, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, func(k, v string) error { env[k] = v; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(env, map[string]string{"A": "1", "B": "from-env", "C": "from-env"}) {
		t.Errorf("env %v", env)
	}
	if !slices.Equal(rep.Set, []string{"A", "C"}) || !slices.Equal(rep.Shadowed, []string{"B"}) {
		t.Errorf("report %+v", rep)
	}
	if len(rep.Warnings) != 2 || !strings.Contains(rep.Warnings[0], "mode 0644") || !strings.Contains(rep.Warnings[1], "line 3 does not parse") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	if rep, err := Load(filepath.Join(dir, "missing"), nil, nil); err != nil || rep.Exists {
		t.Errorf("missing file: %+v %v", rep, err)
	}
	if err := os.WriteFile(path, []byte("A=\xff\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, nil, func(string, string) error { t.Error("set from a file that is not text"); return nil }); err == nil {
		t.Error("a file that is not UTF-8 should be an error")
	}
}

func TestUpdateKeepsModeAndLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "atrium.env")
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(target, []byte("A=1\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(target, 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, ".env")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Update(link, func(s string) (string, error) { return Set(s, "B", "2") }); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link became a file: %v", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "A=1\nB=2\n" {
		t.Errorf("linked file: %q", b)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}
	fresh := filepath.Join(dir, "new", ".env")
	if err := Update(fresh, func(s string) (string, error) { return Set(s, "K", "v") }); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != 0o600 {
		t.Errorf("a new .env is %v, want private", fi.Mode().Perm())
	}
}

// pythonDotenv runs python-dotenv's load_dotenv(override=False) on each
// text in an environment of exactly env, and returns the environments.
func pythonDotenv(t *testing.T, texts []string, env map[string]string) []map[string]string {
	t.Helper()
	// The first Python that has python-dotenv: the one on PATH, else
	// Debian's, where scripts/deps.sh installs python3-dotenv.
	python := ""
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import dotenv").Run() == nil {
			python = p
			break
		}
	}
	if python == "" {
		t.Fatal("python3 with python-dotenv is needed to check the reader against it (scripts/deps.sh installs python3-dotenv)")
	}
	const script = `
import io, json, os, sys, logging
logging.disable(logging.CRITICAL)
from dotenv import load_dotenv
cases = json.load(sys.stdin)
out = []
for c in cases:
    os.environ.clear()
    os.environ.update(c["env"])
    load_dotenv(stream=io.StringIO(c["text"]), override=False)
    out.append(dict(os.environ))
json.dump(out, sys.stdout)
`
	type tc struct {
		Text string            `json:"text"`
		Env  map[string]string `json:"env"`
	}
	cases := make([]tc, len(texts))
	for i, s := range texts {
		cases[i] = tc{s, env}
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-c", script)
	cmd.Stdin = strings.NewReader(string(in))
	cmd.Stderr = os.Stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("python-dotenv: %v", err)
	}
	var out []map[string]string
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != len(texts) {
		t.Fatalf("python-dotenv's answer: %v (%d of %d)", err, len(out), len(texts))
	}
	return out
}

// The reader is held to python-dotenv itself, on hand-picked files and
// generated ones: the familiar agent's .env must mean the same in both.
func TestReadsAsPythonDotenv(t *testing.T) {
	texts := []string{
		"A=1", "A = 1 ", "export A=1", "exportA=1", "export  A=1\n", "A", "A=", "A= # c", "=1", "# only\n",
		"A='x'", "A=\"x\"", "A='a # b' # c", "A=\"a\\nb\\t\\\\\"", "A='a\\nb\\'c\\\\d'", "A=\"it's\"", "A='say \"hi\"'",
		"A=\"multi\nline\"\nB=2", "A='multi\r\nline'", "A=\"open\nB=2", "A='open\nB=2\nC='x'", "A=\"x\\\"\nB=\"y\"",
		"A=x\\\"", "A=\"ends\\\\\"", "A=a#b", "A=a #b", "A=a\t#b", "A=\"a\" b", "A=\"a\"#b", "A='a' # b\nB=2",
		"'A B'=1", "'A=1", "''=1", "A B=1", "A\tB", "a.b=1", "A-B=1", "A=1\r\nB=2\r\n", "A=1\rB=2\r", "\n\n  A=1\n\n",
		"A=${B}\nB=2\nC=${B}", "A=${HOME}", "A=${HOME:-d}", "A=${NOPE:-d}", "A=${NOPE}", "A=${}", "A=${X:y}", "A=${X:-a:b}",
		"A=${X:-${Y}}", "A=$HOME", "A=1\nA", "A\nA=1", "A=1\nB=${A}\nA=2\nC=${A}", "HOME=/x\nA=${HOME}", "A=é\nB=\u00a0x\u00a0",
		"A=\"\\a\\b\\f\\v\\r\"", "A='\\t'", "A=\\t", "A=`cmd`", "A=\"$(cmd)\"", "  export A=1", "#A=1", "A=1 # c\n#B=2\nC=3",
		"C=1\nC\nD=${C:-d}",
	}
	// Generated statements: fragments that stress the grammar, now and
	// then broken (a fixed seed: the same files every run).
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	for range 1500 {
		var b strings.Builder
		for range 1 + r.IntN(5) {
			b.WriteString(pick("", "", "", "export ", "  ", "\n", "#"))
			b.WriteString(pick("A", "B", "C", "'K Q'", "HOME", "a.b"))
			b.WriteString(pick("=", "=", " = ", "=\t", " ", ""))
			for range r.IntN(3) {
				b.WriteString(pick("x", "y z", "'s p'", `'s\'q'`, `"d\"q"`, "\"m\nl\"", "'o", "\"o", "${A}", "${B:-d}",
					"${A:x}", "${HOME}", `\`, `\'`, "é", " ", "#", "$A", `"\t\n"`))
			}
			b.WriteString(pick("", "", " # c", "#c", "\t#c"))
			b.WriteString(pick("\n", "\n", "\r\n", "\r", "\n\n"))
		}
		texts = append(texts, b.String())
	}
	env := map[string]string{"HOME": "/home/p", "B": "from-env"}
	want := pythonDotenv(t, texts, env)
	path := filepath.Join(t.TempDir(), ".env")
	setting := 0
	for i, s := range texts {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		got := maps.Clone(env)
		if _, err := Load(path, func(k string) (string, bool) { v, ok := got[k]; return v, ok }, func(k, v string) error { got[k] = v; return nil }); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if !maps.Equal(got, want[i]) {
			t.Errorf("%q:\n atrium %q\n python %q", s, got, want[i])
		}
		if len(want[i]) > len(env) {
			setting++
		}
	}
	// The comparison means something only if most files set variables.
	if setting < len(texts)/2 {
		t.Errorf("python-dotenv set variables from only %d of %d files", setting, len(texts))
	}
	t.Logf("%d files, %d of them setting variables, read alike", len(texts), setting)
}

// What Set writes, python-dotenv reads as the value given.
func TestSetWritesWhatPythonDotenvReads(t *testing.T) {
	values := []string{"sk-or-v1-abc123", "", "two words", " lead", "trail ", "a#b", "a #b", `say "hi"`, "it's", `back\slash`,
		`ends\`, `it's "x" \ y`, "$HOME", "tab\there", "=eq", "'q'", `"dq"`, `\"`, `\\`, `a\'b`, "#x", "x #", "!*?&%"}
	base := "# keys\nexport KEEP='kept' # c\nK=old\n"
	var texts []string
	for _, v := range values {
		out, err := Set(base, "K", v)
		if err != nil {
			t.Fatalf("Set %q: %v", v, err)
		}
		texts = append(texts, out)
	}
	want := pythonDotenv(t, texts, map[string]string{})
	for i, v := range values {
		if want[i]["K"] != v || want[i]["KEEP"] != "kept" {
			t.Errorf("Set(%q) wrote %q, which python-dotenv reads as %q", v, texts[i], want[i])
		}
	}
}

func FuzzSet(f *testing.F) {
	for _, s := range []string{"", "A=1\n", "# c\nexport A='x' # y\nB=\"m\nl\"\n", "A=\"open\nB=1", "A\nA=1\r\nC=${A}"} {
		f.Add(s, "A", "v 1")
	}
	f.Fuzz(func(t *testing.T, text, key, value string) {
		for _, b := range Parse(text) {
			if b.Start < 0 || b.End > len(text) || b.Start > b.End {
				t.Fatalf("statement bytes %d..%d of %d", b.Start, b.End, len(text))
			}
		}
		out, err := Set(text, key, value)
		if err != nil {
			return
		}
		if got := written(Parse(out))[key]; got == nil || unescapedValue(out, key) != value {
			t.Fatalf("Set(%q, %q, %q) = %q reads %q", text, key, value, out, deref(got))
		}
		back, removed, err := Unset(out, key)
		if err != nil || !removed {
			t.Fatalf("Unset after Set: %q %v %v", back, removed, err)
		}
		if _, ok := written(Parse(back))[key]; ok {
			t.Fatalf("Unset left %s in %q", key, back)
		}
	})
}

// unescapedValue is key's value as the file writes it (before expansion).
func unescapedValue(text, key string) string { return deref(written(Parse(text))[key]) }

// Loaded tells a variable the .env gave this process from one it was
// started with; Environ leaves the former out for a process started from
// this one, which reads the .env itself.
func TestLoadedAndEnviron(t *testing.T) {
	t.Setenv("ATRIUM_T_EXPORTED", "mine")
	t.Setenv("ATRIUM_T_FROM_FILE", "") // restored at the end
	os.Unsetenv("ATRIUM_T_FROM_FILE")
	path := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(path, []byte("ATRIUM_T_FROM_FILE=f\nATRIUM_T_EXPORTED=file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, nil, nil); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("ATRIUM_T_FROM_FILE") != "f" || os.Getenv("ATRIUM_T_EXPORTED") != "mine" {
		t.Fatalf("after Load: %q %q", os.Getenv("ATRIUM_T_FROM_FILE"), os.Getenv("ATRIUM_T_EXPORTED"))
	}
	if !Loaded("ATRIUM_T_FROM_FILE") || Loaded("ATRIUM_T_EXPORTED") {
		t.Fatalf("Loaded: %v %v", Loaded("ATRIUM_T_FROM_FILE"), Loaded("ATRIUM_T_EXPORTED"))
	}
	env := Environ()
	if slices.Contains(env, "ATRIUM_T_FROM_FILE=f") || !slices.Contains(env, "ATRIUM_T_EXPORTED=mine") {
		t.Fatalf("Environ kept what the file gave, or lost what was exported")
	}
	os.Setenv("ATRIUM_T_FROM_FILE", "changed since")
	if Loaded("ATRIUM_T_FROM_FILE") {
		t.Fatal("a variable set since is not the file's")
	}
}

// Refresh brings a file written since the Load into the process: changed
// and new values set, values the file gave and no longer gives taken away,
// ${...} from the file as it is now; what the process had from its start,
// or was set to since, goes first; an unreadable file changes nothing.
func TestRefreshTakesTheFileAsItIsNow(t *testing.T) {
	const a, b, c, exp = "ATRIUM_T_R_A", "ATRIUM_T_R_B", "ATRIUM_T_R_C", "ATRIUM_T_R_EXP"
	t.Setenv(exp, "mine")
	for _, k := range []string{a, b, c} {
		t.Setenv(k, "") // restored at the end
		os.Unsetenv(k)
	}
	path := filepath.Join(t.TempDir(), ".env")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := func() string {
		var out []string
		for _, k := range []string{a, b, c, exp} {
			v, ok := os.LookupEnv(k)
			if !ok {
				v = "-"
			}
			out = append(out, v)
		}
		return strings.Join(out, " ")
	}
	write(a + "=1\n" + exp + "=file\n" + b + "=${" + a + "}-b\n")
	if _, err := Load(path, nil, nil); err != nil || env() != "1 1-b - mine" {
		t.Fatalf("after Load: %q %v", env(), err)
	}
	write(a + "=2\n" + exp + "=file2\n" + c + "=${" + a + "}-c\n")
	changed, err := Refresh(path)
	if err != nil || strings.Join(changed, ",") != a+","+c+","+b || env() != "2 - 2-c mine" {
		t.Fatalf("after a rewrite: %q changed %v (%v)", env(), changed, err)
	}
	if changed, err := Refresh(path); err != nil || len(changed) != 0 {
		t.Fatalf("again: changed %v (%v)", changed, err)
	}
	// A value set since goes first, in ${...} too, as python-dotenv has it.
	os.Setenv(a, "by hand")
	if changed, err := Refresh(path); err != nil || strings.Join(changed, ",") != c || env() != "by hand - by hand-c mine" {
		t.Fatalf("a value set since: %q changed %v (%v)", env(), changed, err)
	}
	// What another file gave is left to it.
	t.Setenv("ATRIUM_T_R_OTHER", "")
	if err := Setenv(path+".other", "ATRIUM_T_R_OTHER", "o"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if changed, err := Refresh(path); err != nil || strings.Join(changed, ",") != c || env() != "by hand - - mine" || os.Getenv("ATRIUM_T_R_OTHER") != "o" {
		t.Fatalf("the file removed: %q changed %v (%v)", env(), changed, err)
	}
	write(c + "=back\n")
	if _, err := Refresh(path); err != nil || env() != "by hand - back mine" {
		t.Fatalf("written again: %q (%v)", env(), err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	if changed, err := Refresh(path); err == nil || len(changed) != 0 || env() != "by hand - back mine" {
		t.Fatalf("an unreadable file: %q changed %v (%v)", env(), changed, err)
	}
}

// What every Atrium process pays at start for its .env: a file of 40
// keys, read, parsed and applied (into a map, not the environment).
func BenchmarkLoad40Keys(b *testing.B) {
	var text strings.Builder
	text.WriteString("# keys\n")
	for i := range 40 {
		text.WriteString("export SERVICE_" + string(rune('A'+i%26)) + string(rune('A'+i/26)) + "_API_KEY='sk-" + strings.Repeat("x", 48) + "' # issued in March\n")
	}
	path := filepath.Join(b.TempDir(), ".env")
	if err := os.WriteFile(path, []byte(text.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		env := map[string]string{}
		rep, err := Load(path, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, func(k, v string) error { env[k] = v; return nil })
		if err != nil || len(rep.Set) != 40 {
			b.Fatalf("%+v %v", rep, err)
		}
	}
}
