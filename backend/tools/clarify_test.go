package tools

import (
	"encoding/json"
	"fmt"
	"testing"
)

// The arguments are read as the familiar agent reads them.
func TestParseClarifyAsTheFamiliarAgent(t *testing.T) {
	for _, c := range []struct {
		name string
		args string
		want string
	}{
		{"choices of every shape", `{"question": "q", "choices": [" a ", {"title": "b"}, ["c", {"text": "d"}], 3, null, {"value": "v"}]}`,
			`{q [{ q [a b c d 3] false}] false}`},
		{"more than four cut", `{"question": "q", "choices": ["1", "2", "3", "4", "5"], "multi_select": "yes"}`,
			`{q [{ q [1 2 3 4] true}] false}`},
		{"multi_select without choices", `{"question": "q", "multi_select": true}`, `{q [{ q [] false}] false}`},
		{"an empty batch asks the question", `{"question": "q", "questions": []}`, `{q [{ q [] false}] false}`},
		{"a batch as JSON text", `{"question": "t", "questions": "[{\"id\": 7, \"question\": \"a\", \"choices\": [true]}]"}`,
			`{t [{7 a [True] false}] true}`},
		{"a null batch asks the question", `{"question": "q", "questions": null}`, `{q [{ q [] false}] false}`},
	} {
		var args map[string]any
		if err := json.Unmarshal([]byte(c.args), &args); err != nil {
			t.Fatal(err)
		}
		got, err := ParseClarify(args)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if s := fmt.Sprint(got); s != c.want {
			t.Errorf("%s: %s, want %s", c.name, s, c.want)
		}
	}
	if _, err := ParseClarify(map[string]any{"question": "q", "questions": map[string]any{}}); err == nil || err.Error() != "questions must be an array of question objects." {
		t.Errorf("questions as an object: %v", err)
	}
	if _, err := ParseClarify(map[string]any{"question": "q", "questions": []any{map[string]any{"question": "a", "choices": "x"}}}); err == nil ||
		err.Error() != "questions[0].choices must be a list." {
		t.Errorf("a batch question's choices as text: %v", err)
	}
}

// The first of several choices is marked as the model's pick where it is
// shown, once, and the mark is taken off the answer.
func TestTheRecommendedChoice(t *testing.T) {
	for _, c := range []struct {
		offered []string
		want    string
	}{
		{[]string{"a", "b"}, "[a (Recommended) b]"},
		{[]string{"a (recommended)", "b"}, "[a (recommended) b]"},
		{[]string{"only"}, "[only]"},
		{nil, "[]"},
	} {
		if got := fmt.Sprint(ClarifyQuestion{Offered: c.offered}.Shown()); got != c.want {
			t.Errorf("Shown(%q) = %s, want %s", c.offered, got, c.want)
		}
	}
	q := ClarifyQuestion{Question: "q", Offered: []string{"a", "b"}, MultiSelect: true}
	for _, c := range []struct {
		a    ClarifyAnswer
		want string
	}{
		{ClarifyAnswer{Picked: []string{"a (Recommended)", " ", "b"}}, "[a b]"},
		{ClarifyAnswer{Text: `["a (RECOMMENDED)", 2]`}, "[a 2]"},
		{ClarifyAnswer{Text: "a,, b"}, "[a b]"},
		{ClarifyAnswer{}, "[]"},
	} {
		if got := fmt.Sprint(q.response(c.a)); got != c.want {
			t.Errorf("response(%+v) = %s, want %s", c.a, got, c.want)
		}
	}
}
