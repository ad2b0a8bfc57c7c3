package desktop

import (
	"regexp"
	"testing"
)

func TestOpenArgFindsTheSessionInBothSpellings(t *testing.T) {
	cases := map[string][]string{
		"s-42": {"--open", "s-42"},
		"s-43": {"--profile", "work", "--open=s-43"},
		"":     {"--open"},
	}
	for want, args := range cases {
		if got := OpenArg(args); got != want {
			t.Errorf("OpenArg(%q) = %q, want %q", args, got, want)
		}
	}
	if OpenArg(nil) != "" {
		t.Error("no args")
	}
}

func TestUniqueIDIsADBusNamePerFolder(t *testing.T) {
	a, b := UniqueID("/home/u/.local/share/atrium"), UniqueID("/home/u/.local/share/atrium/profiles/work")
	if a == b || a != UniqueID("/home/u/.local/share/atrium") {
		t.Fatalf("ids %s %s", a, b)
	}
	if !regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$`).MatchString(a) {
		t.Fatalf("%s is not a D-Bus name", a)
	}
}

func TestLateEmitterDropsUntilSetThenForwards(t *testing.T) {
	var l lateEmitter
	l.Emit("early", 1)
	var got []string
	l.set(func(name string, _ any) { got = append(got, name) })
	l.Emit("late", 2)
	if len(got) != 1 || got[0] != "late" {
		t.Fatalf("got %v", got)
	}
}
