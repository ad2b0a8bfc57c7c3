package tsgen

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "write the generated TypeScript files instead of comparing them")

// TestGeneratedFilesAreCurrent fails when app/ changed and the TypeScript
// contract was not regenerated (`make gen`), so the UI can never drift from
// the Go side unnoticed.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	files, err := Generate(filepath.Join("..", "..", "app"))
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range files {
		path := filepath.Join("..", filepath.FromSlash(rel))
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("frontend/%s: %v (run `make gen`)", rel, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("frontend/%s is out of date with app/: run `make gen` and commit it\n%s", rel, firstDiff(string(got), string(want)))
		}
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + itoa(i+1) + ":\n  have: " + a + "\n  want: " + b
		}
	}
	return ""
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

func generateFixture(t *testing.T) Files {
	t.Helper()
	files, err := Generate(filepath.Join("testdata", "app"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestMapsGoTypesToJSONShapes(t *testing.T) {
	dto := string(generateFixture(t)[DTOFile])
	for _, want := range []string{
		"export interface ThingDTO extends BaseDTO {",
		"  id: string;",
		"  when: string;",            // time.Time
		"  ended_at?: string;",       // *time.Time,omitempty
		"  parent: ThingDTO | null;", // pointer
		"  tags: string[] | null;",   // a nil slice is null
		"  counts: Record<string, number> | null;",
		"  payload: unknown;", // json.RawMessage
		"  Plain: boolean;",   // no tag: the Go name
		"  \"odd-key\": number;",
		"  kind: string;", // named string type
		"  /** the size in bytes */",
	} {
		if !strings.Contains(dto, want) {
			t.Errorf("dto.ts lacks %q:\n%s", want, dto)
		}
	}
	// a request body only: every field may be left out
	for _, want := range []string{"  request_id?: string;", "  ids?: string[];", "a field left out is its zero value"} {
		if !strings.Contains(dto, want) {
			t.Errorf("dto.ts lacks %q:\n%s", want, dto)
		}
	}
	for _, absent := range []string{"hidden", "secret", "interface Service", "interface handler"} {
		if strings.Contains(dto, absent) {
			t.Errorf("dto.ts has %q:\n%s", absent, dto)
		}
	}
}

func TestBindingsRoutesAndEvents(t *testing.T) {
	f := generateFixture(t)
	b := string(f[BindingsFile])
	for _, want := range []string{
		"export interface ServiceBinding {",
		"  Get(id: string): Promise<ThingDTO>;",
		"  Put(requestID: string, ids: string[] | null): Promise<void>;",
		"  Ping(): Promise<void>;",
		"  Service: ServiceBinding;",
	} {
		if !strings.Contains(b, want) {
			t.Errorf("bindings.ts lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(b, "helper") {
		t.Errorf("bindings.ts has an unexported method:\n%s", b)
	}
	r := string(f[RoutesFile])
	for _, want := range []string{
		`"GET /api/things",`,
		`"POST /api/things/{id}/put",`,
		`"POST /api/things/{id}/put": PutRequest;`,
		`"GET /api/things": { archived?: boolean; cursor?: string; limit?: number; q?: string };`,
		`"GET /api/things/{id}": Record<string, never>;`,
		`"POST /api/bulk": PutRequest;`,
		`"POST /api/with": PutRequest;`,
		`"POST /api/op/a": PutRequest;`,
		`"POST /api/op/b": PutRequest;`,
		`"GET /api/ext": { q2?: string };`,
	} {
		if !strings.Contains(r, want) {
			t.Errorf("routes.ts lacks %q:\n%s", want, r)
		}
	}
	e := string(f[EventsFile])
	for _, want := range []string{
		`export const EventThing = "thing";`,
		`[EventThings]: ThingDTO[];`,
		`[EventOther]: unknown;`,
		`[EventLater]: ThingDTO;`,
	} {
		if !strings.Contains(e, want) {
			t.Errorf("events.ts lacks %q:\n%s", want, e)
		}
	}
}

func TestRefusesTypesItCannotMap(t *testing.T) {
	dir := t.TempDir()
	src := "package app\n\nimport \"atrium/backend/sessions\"\n\ntype BadDTO struct {\n\tS sessions.Session `json:\"s\"`\n}\n\ntype App struct{}\n\nfunc (a *App) Bindings() []any { return nil }\n"
	if err := os.WriteFile(filepath.Join(dir, "bad.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Generate(dir)
	if err == nil || !strings.Contains(err.Error(), "sessions.Session belongs to another package") {
		t.Fatalf("err = %v", err)
	}
}

func TestRefusesARoutePatternItCannotRead(t *testing.T) {
	dir := t.TempDir()
	src := "package app\n\nimport \"net/http\"\n\ntype App struct{}\n\nfunc (a *App) Bindings() []any { return nil }\n\nfunc op() string { return \"x\" }\n\nfunc routes(m *http.ServeMux) {\n\tm.HandleFunc(\"POST /api/x/\"+op(), nil)\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "app.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Generate(dir)
	if err == nil || !strings.Contains(err.Error(), "is not a constant: write each route as a string literal") {
		t.Fatalf("err = %v", err)
	}
}
