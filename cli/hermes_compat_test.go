package cli_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"atrium/backend/llm"
)

// Plugins of the familiar Python plugin API that lean on more of its host
// than register(ctx): its per-plugin storage (plugins.plugin_storage), the
// profile helpers of hermes_constants, load_config_readonly,
// tools.registry, a memory provider module without register(ctx), a
// context engine without the ContextEngine base class. Installed, enabled
// and driven through the real atrium command line (cli/testdata/hermes).

// ledgerFacts runs the ledger's ledger_facts tool in a chat of profile
// (--profile) and returns what it wrote to facts.json in dataDir.
func ledgerFacts(t *testing.T, home, dataDir string, profile ...string) map[string]any {
	t.Helper()
	id := create(t, home, append([]string{"--title", "facts"}, profile...)...)
	if r := atriumExec(t, home, "use tool ledger_facts: {}\n", nil, append(append([]string{}, profile...), "chat", id)...); r.code != 0 ||
		!strings.Contains(r.stdout, `The tool ledger_facts returned: {"written": "facts.json"}`) {
		t.Fatalf("chat: %+v", r)
	}
	b, err := os.ReadFile(filepath.Join(dataDir, "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var facts map[string]any
	if err := json.Unmarshal(b, &facts); err != nil {
		t.Fatal(err)
	}
	return facts
}

// A plugin keeps its data where plugins.plugin_storage puts it, which is
// its working folder <profile>/plugins-data/<name>/: a SQLite database
// opened by plugin_db (WAL, foreign keys enforced) and a text file beside
// it. It reads its settings with load_config_readonly, names profiles with
// profile_name_for_home, builds its results with tools.registry, and a tool
// it registered through tools.registry at import is offered to the model.
// In a named profile the same plugin's folder and names follow the profile.
func TestHermesPluginStorageAndHostModules(t *testing.T) {
	t.Parallel()
	home := hermesHome(t, "plugins:\n  entries:\n    hermes-ledger:\n      settings:\n        currency: CHF\n", "hermes-ledger")
	id := create(t, home, "--title", "ledger")
	r := atriumExec(t, home, `use tool ledger_add: {"item": "coffee", "amount": 3}
use tool ledger_add: {"item": "bread", "amount": 4}
use tool ledger_add: {"item": "tax", "amount": 1, "account": "savings"}
use tool ledger_total: {}
`, nil, "chat", id)
	for _, want := range []string{
		`The tool ledger_add returned: {"added": "coffee", "amount": 3}`,
		`The tool ledger_add returned: {"error": "no account savings", "code": "foreign_key"}`,
		`The tool ledger_total returned: {"total": 7, "currency": "CHF"}`,
	} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("chat: missing %q in %+v", want, r)
		}
	}
	data := filepath.Join(home, "plugins-data", "hermes-ledger")
	if b, err := os.ReadFile(filepath.Join(data, "ledger.txt")); err != nil || string(b) != "coffee 3 CHF\nbread 4 CHF\n" {
		t.Fatalf("ledger.txt: %q %v", b, err)
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(data, "data.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode: %q %v", mode, err)
	}
	rows, err := db.Query("SELECT item, amount, account FROM entries ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var entries []string
	for rows.Next() {
		var item, account string
		var amount int
		if err := rows.Scan(&item, &amount, &account); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, fmt.Sprintf("%s@%s=%d", item, account, amount))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"coffee@household=3", "bread@household=4"}; !reflect.DeepEqual(entries, want) {
		t.Fatalf("entries: %v, want %v", entries, want)
	}

	noModule := "ModuleNotFoundError: No module named 'plugins.memory': in Atrium the package plugins holds only " +
		"plugins.plugin_storage (the familiar agent's other plugins.* modules belong to that agent, not to its plugin API)"
	badName := func(n string) any { return "ValueError: invalid plugin name for storage: '" + n + "'" }
	want := map[string]any{
		"data_dir": data, "is_work_dir": true, "other_dir": filepath.Join(home, "plugins-data", "other.plugin_2"),
		"bad_names":    []any{badName("../escape"), badName("a/b"), badName(""), badName(".hidden"), badName(strings.Repeat("x", 65))},
		"bad_file":     "ValueError: invalid plugin db filename: 'sub/data.db'",
		"journal_mode": "wal", "foreign_keys": 1.0,
		"home": home, "process_home": home, "override": nil, "root": home,
		"profile_of_home": "default", "profile_of_root": "default", "profile_of_named": "travel", "profile_of_data": nil,
		"profile_of_elsewhere": nil, "profile_of_empty": nil,
		"currency": "CHF", "plugins_memory": noModule, "tool_error": strings.Repeat("x", 7) + "… [truncated]",
	}
	if got := ledgerFacts(t, home, data); !reflect.DeepEqual(got, want) {
		t.Fatalf("what the host modules answered:\n got %v\nwant %v", got, want)
	}
	if _, err := os.Stat(filepath.Join(home, "plugins-data", "other.plugin_2")); err != nil {
		t.Fatalf("plugin_data_dir makes the folder: %v", err)
	}

	// The same plugin in the profile "work" (its plugins run in each
	// command's own process there).
	work := filepath.Join(home, "profiles", "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "config.yaml"), []byte("plugins:\n  host: inline\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := filepath.Abs(filepath.Join("testdata", "hermes", "hermes-ledger"))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"plugins", "install", src}, {"plugins", "enable", "hermes-ledger"}} {
		if r := atriumExec(t, home, "", nil, append([]string{"--profile", "work"}, args...)...); r.code != 0 {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	workData := filepath.Join(work, "plugins-data", "hermes-ledger")
	got := ledgerFacts(t, home, workData, "--profile", "work")
	for k, v := range map[string]any{
		"data_dir": workData, "is_work_dir": true, "other_dir": filepath.Join(work, "plugins-data", "other.plugin_2"),
		"home": work, "process_home": work, "root": home, "currency": "EUR",
		"profile_of_home": "work", "profile_of_root": "default", "profile_of_named": "travel", "profile_of_data": "work",
	} {
		if !reflect.DeepEqual(got[k], v) {
			t.Fatalf("in the profile work, %s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

// A memory provider module without register(ctx) loads as the familiar
// memory loader takes it: its MemoryProvider subclass (the abstract helper
// before it passed over) is made without arguments and registered, and the
// turn loop drives it when memory.provider names it.
func TestHermesMemoryProviderWithoutRegister(t *testing.T) {
	t.Parallel()
	home := hermesHome(t, "memory:\n  provider: bare\n", "hermes-bare-memory")
	if p := listPlugins(t, home)["hermes-bare-memory"]; (p.State != "running" && p.State != "stopped") || p.Reason != "" {
		t.Fatalf("listed: %+v", p)
	}
	id := create(t, home, "--title", "bare")
	mustSend(t, home, id, "remember the boat is blue")
	out := mustSend(t, home, id, "what colour is the boat?")
	if !strings.Contains(out, "offline reply to: what colour is the boat?") || !strings.Contains(out, llm.ContextSeenMarker) {
		t.Fatalf("the recall did not reach the turn: %q", out)
	}
	recs := records(t, home, "hermes-bare-memory", "memory.jsonl")
	var methods []string
	for _, rec := range recs {
		methods = append(methods, rec["method"].(string))
	}
	want := []string{"is_available", "initialize", "prefetch", "sync_turn", "prefetch", "sync_turn"}
	if !reflect.DeepEqual(methods, want) {
		t.Fatalf("calls: %v, want %v", methods, want)
	}
	init := map[string]any{"method": "initialize", "session_id": id, "hermes_home": home, "agent_context": "primary", "same_home": true}
	if !reflect.DeepEqual(recs[1], init) {
		t.Fatalf("initialize: %v, want %v", recs[1], init)
	}
	if recs[4]["query"] != "what colour is the boat?" || recs[4]["session_id"] != id || recs[3]["user_content"] != "remember the boat is blue" {
		t.Fatalf("prefetch and sync_turn: %v", recs)
	}
}

// A context engine that does not inherit from ContextEngine loads (an
// incomplete object registered before it is refused, with a warning) and
// compacts when context.engine names it: its own compress and
// update_from_response are called, and for update_model, which it lacks,
// the base class's default set its context_length; post_compaction fires
// once.
func TestHermesDuckTypedContextEngine(t *testing.T) {
	t.Parallel()
	home := hermesHome(t, "compaction:\n  rotate: false\ncontext:\n  engine: duck\n", "hermes-duck-engine")
	id := create(t, home, "--title", "duck")
	steps := "step one: the deploy plan, the owners and the rollback.\nstep two: the deploy plan, the owners and the rollback.\n" +
		"step three: the deploy plan, the owners and the rollback.\nstep four: the deploy plan, the owners and the rollback.\n"
	if r := atriumExec(t, home, steps, nil, "chat", id); r.code != 0 {
		t.Fatalf("chat: %+v", r)
	}
	var res struct {
		Changed bool
		Engine  string
	}
	if mustJSON(t, atriumExec(t, home, "", nil, "compact", id, "--json"), &res); !res.Changed || res.Engine != "duck" {
		t.Fatalf("compact: %+v", res)
	}
	recs := records(t, home, "hermes-duck-engine", "duck.jsonl")
	want := map[string]any{"count": 8.0, "force": true, "responses": 4.0, "context_length": float64(llm.DefaultContextWindow),
		"threshold_tokens": float64(llm.DefaultContextWindow * 3 / 4)}
	if len(recs) != 1 || !reflect.DeepEqual(recs[0], want) {
		t.Fatalf("compress: %v, want one %v", recs, want)
	}
	var msgs []struct{ Content string }
	mustJSON(t, atriumExec(t, home, "", nil, "messages", "list", id, "--json"), &msgs)
	wantMsgs := []struct{ Content string }{{"step one: the deploy plan, the owners and the rollback."}, {"[duck folded 5 messages]"},
		{"step four: the deploy plan, the owners and the rollback."},
		{"offline reply to: step four: the deploy plan, the owners and the rollback."}}
	if !reflect.DeepEqual(msgs, wantMsgs) {
		t.Fatalf("the compacted transcript: %+v", msgs)
	}
	var evs []struct{ Hook string }
	if mustJSON(t, atriumExec(t, home, "", nil, "events", "list", "--hook", "post_compaction", "--json"), &evs); len(evs) != 1 {
		t.Fatalf("post_compaction events: %+v, want one", evs)
	}
	p := listPlugins(t, home)["hermes-duck-engine"]
	if !strings.Contains(strings.Join(p.Warnings, "\n")+strings.Join(p.Extras.Warnings, "\n"),
		"tried to register a context engine that does not inherit from ContextEngine (ignored)") {
		t.Fatalf("the incomplete engine was not refused: %+v", p)
	}
}

// A plugin's ctx.dispatch_tool of a tool only a turn can run (the task
// list, memory, recall, a question to the person) is answered with the
// familiar agent's error, and the process goes on: it used to end it.
func TestDispatchToolOfATurnsOwnToolDoesNotEndTheProcess(t *testing.T) {
	t.Parallel()
	home := hermesHome(t, "", "hermes-dispatch")
	stdin := "/dispatch todo {}\n/dispatch memory {\"action\": \"add\", \"content\": \"x\"}\n/dispatch session_search {}\n" +
		"/dispatch clarify {\"question\": \"Go on?\"}\n/dispatch read_file {\"path\": \"nowhere.txt\"}\n/whoami\n"
	r := atriumExec(t, home, stdin, nil, "chat")
	if r.code != 0 {
		t.Fatalf("chat: %+v", r)
	}
	for _, want := range []string{`dispatched todo: {"error":"todo must be handled by the agent loop"}`,
		`dispatched memory: {"error":"memory must be handled by the agent loop"}`,
		`dispatched session_search: {"error":"session_search must be handled by the agent loop"}`,
		`dispatched clarify: {"error":"Clarify tool is not available in this execution context."}`,
		`"error":"File not found: `} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the chat did not say %s:\n%s", want, r.stdout)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(home, "memories")); len(entries) != 0 {
		t.Fatalf("a plugin's dispatch wrote the memory: %v", entries)
	}
}
