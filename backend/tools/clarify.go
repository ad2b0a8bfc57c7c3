package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The clarify tool: the model asks the person a question, with up to four
// choices (the first one the model's pick) or none, and goes on with the
// answer. Its arguments and its answers are the familiar agent's, so a
// model prompted for that agent uses it unchanged: question, choices,
// multi_select, or questions (up to five asked one after the other).
// This file reads the arguments and writes the answer the model reads;
// asking is a surface's (the window, the dashboard, a terminal, a chat
// platform), which the turn loop calls.

// ClarifyTool is the clarify tool's name (and its toolset's).
const ClarifyTool = "clarify"

// The familiar agent's bounds.
const (
	MaxClarifyChoices   = 4 // a surface adds "Other" (the person's own words) after them
	MaxClarifyQuestions = 5
)

// ClarifyTimedOut is the answer the model reads when the person did not
// answer in time, in the familiar agent's words.
const ClarifyTimedOut = "The user did not provide a response within the time limit. " +
	"Use your best judgement to make the choice and proceed."

// Recommended marks the first choice, the one the model would pick, on
// every surface; it is taken off the answer again.
const Recommended = "(Recommended)"

// ClarifyDescription and ClarifyParameters are the tool as the model is
// offered it, in the familiar agent's arguments.
const (
	ClarifyDescription = "Ask the user a question when you need a decision, a clarification or feedback before you go on. " +
		"With choices (up to 4, the one you recommend first: it is shown as recommended), the user picks one, or types " +
		"an answer of their own; with multi_select true they may pick several, and user_response is a list. Without " +
		"choices the question is open. Put the options only in choices, never in the question's text. To ask several " +
		"independent things, pass them in questions (up to 5) in one call; the answer is then {responses: [...]}, with " +
		"timed_out true if the user stopped answering. Do not use it to confirm a dangerous command (the terminal asks " +
		"for that itself), and decide yourself when the choice is of little consequence."
	ClarifyParameters = `{"type":"object","properties":{` +
		`"question":{"type":"string","description":"The question, and only the question (with questions: a short title)."},` +
		`"choices":{"type":"array","items":{"type":"string"},"maxItems":4,"description":"The options, one per item, the one you recommend first. Leave out for an open question."},` +
		`"multi_select":{"type":"boolean","description":"true: the user may pick several choices; user_response is then a list."},` +
		`"questions":{"type":"array","maxItems":5,"description":"2-5 independent questions asked in one call; question and choices above are then not asked.",` +
		`"items":{"type":"object","properties":{"id":{"type":"string","description":"Echoed in its response."},` +
		`"question":{"type":"string"},"choices":{"type":"array","items":{"type":"string"},"maxItems":4},` +
		`"multi_select":{"type":"boolean"}},"required":["question"]}}},` +
		`"required":["question"]}`
)

// ClarifyQuestion is one question the model asks.
type ClarifyQuestion struct {
	ID          string   // the model's id for it, echoed in a batch's answer ("" none)
	Question    string   // trimmed, never empty
	Offered     []string // the choices as the model gave them (nil: an open question)
	MultiSelect bool     // only with choices
}

// Shown are the choices as a surface shows them: the first marked
// Recommended (unless the model marked it, or it is the only one).
func (q ClarifyQuestion) Shown() []string {
	if len(q.Offered) < 2 {
		return q.Offered
	}
	out := append([]string(nil), q.Offered...)
	if first := strings.TrimSpace(out[0]); first == Unrecommended(first) {
		out[0] = first + " " + Recommended
	}
	return out
}

// Unrecommended is a choice without the Recommended mark.
func Unrecommended(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= len(Recommended) && strings.EqualFold(s[len(s)-len(Recommended):], Recommended) {
		return strings.TrimSpace(s[:len(s)-len(Recommended)])
	}
	return s
}

// Clarify is one call of the tool.
type Clarify struct {
	// Title is the call's question; with Batch, the questions' title.
	Title     string
	Questions []ClarifyQuestion
	// Batch says the call asked through questions: its answer is a list
	// of responses.
	Batch bool
}

// ClarifyAnswer is the person's answer to one question: Text, as they
// typed or picked it, or Picked, the choices they picked of a
// multi-select question (nil: read from Text, a JSON list or words
// between commas).
type ClarifyAnswer struct {
	Text   string
	Picked []string
}

// ParseClarify reads the model's arguments, as the familiar agent does:
// choices may come as objects ({label}, {description}, ...) or their JSON
// text, more than four are cut to four, none is an open question; an
// empty questions list asks the single question.
func ParseClarify(args map[string]any) (Clarify, error) {
	if raw, given := args["questions"]; given && raw != nil {
		items, ok := list(raw)
		if !ok {
			return Clarify{}, errors.New("questions must be an array of question objects.")
		}
		if len(items) > MaxClarifyQuestions {
			return Clarify{}, fmt.Errorf("questions supports at most %d items.", MaxClarifyQuestions)
		}
		if len(items) > 0 {
			c := Clarify{Title: strings.TrimSpace(text(args["question"])), Batch: true}
			for i, item := range items {
				if s, isText := item.(string); isText {
					item = map[string]any{"question": s}
				}
				m, isMap := item.(map[string]any)
				if !isMap {
					return Clarify{}, fmt.Errorf("questions[%d] must be an object with a 'question'.", i)
				}
				q, err := clarifyQuestion(m, fmt.Sprintf("questions[%d].", i))
				if err != nil {
					return Clarify{}, err
				}
				q.ID = strings.TrimSpace(pyText(m["id"]))
				c.Questions = append(c.Questions, q)
			}
			return c, nil
		}
	}
	q, err := clarifyQuestion(args, "")
	if err != nil {
		return Clarify{}, err
	}
	return Clarify{Title: q.Question, Questions: []ClarifyQuestion{q}}, nil
}

// clarifyQuestion reads one question's question, choices and
// multi_select; where names it in an error ("" for the call's own).
func clarifyQuestion(m map[string]any, where string) (ClarifyQuestion, error) {
	q := ClarifyQuestion{Question: strings.TrimSpace(pyText(m["question"]))}
	if q.Question == "" {
		if where == "" {
			return q, errors.New("Question text is required.")
		}
		return q, fmt.Errorf("%squestion must be non-empty text.", where)
	}
	if raw := m["choices"]; raw != nil {
		items, ok := list(raw)
		if !ok {
			if where == "" {
				return q, errors.New("choices must be a list of strings.")
			}
			return q, fmt.Errorf("%schoices must be a list.", where)
		}
		for _, c := range items {
			if s := choiceText(c); s != "" && len(q.Offered) < MaxClarifyChoices {
				q.Offered = append(q.Offered, s)
			}
		}
	}
	q.MultiSelect = truthy(m["multi_select"]) && len(q.Offered) > 0
	return q, nil
}

// choiceText is a choice as a person reads it. Models send objects as
// well as strings: their label, description, text or title is the
// choice (never name or value, which are identifiers); one with none of
// them is no choice.
func choiceText(c any) string {
	switch v := c.(type) {
	case nil:
		return ""
	case string:
		s := strings.TrimSpace(v)
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			var m map[string]any
			if json.Unmarshal([]byte(s), &m) == nil {
				return choiceText(m)
			}
		}
		return s
	case map[string]any:
		for _, k := range []string{"label", "description", "text", "title"} {
			if s, ok := v[k].(string); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s)
			}
		}
		return ""
	case []any:
		parts := make([]string, 0, len(v))
		for _, x := range v {
			parts = append(parts, choiceText(x))
		}
		return strings.TrimSpace(strings.Join(parts, " "))
	}
	return strings.TrimSpace(pyText(c))
}

// pyText is a value as the familiar agent's str() writes it: a number
// without a needless ".0", a switch as True or False.
func pyText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case bool:
		if v {
			return "True"
		}
		return "False"
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return text(v)
}

// truthy is a switch as the familiar agent reads one: anything but
// false, 0, "" or nothing.
func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0
	case int:
		return v != 0
	case int64:
		return v != 0
	case uint64:
		return v != 0
	case string:
		return v != ""
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	}
	return true
}

// response is one question's user_response: the person's words, or for
// a multi-select question the list of choices they picked, the
// Recommended mark taken off.
func (q ClarifyQuestion) response(a ClarifyAnswer) any {
	if !q.MultiSelect {
		return Unrecommended(a.Text)
	}
	picked := a.Picked
	if picked == nil {
		picked = splitPicks(a.Text)
	}
	out := make([]string, 0, len(picked))
	for _, p := range picked {
		if p = Unrecommended(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// splitPicks reads several picks given as text: a JSON list, or words
// between commas.
func splitPicks(s string) []string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		var l []any
		if json.Unmarshal([]byte(s), &l) == nil {
			out := make([]string, 0, len(l))
			for _, x := range l {
				out = append(out, pyText(x))
			}
			return out
		}
	}
	return strings.Split(s, ",")
}

// clarifyOne is the familiar agent's answer to a single question.
type clarifyOne struct {
	Question string   `json:"question"`
	Offered  []string `json:"choices_offered"`
	Response any      `json:"user_response"`
}

// clarifyRow is one response of a batch.
type clarifyRow struct {
	ID       string   `json:"id,omitempty"`
	Question string   `json:"question"`
	Offered  []string `json:"choices_offered"`
	Response any      `json:"user_response"`
}

// clarifyBatch is the familiar agent's answer to questions.
type clarifyBatch struct {
	Responses []clarifyRow `json:"responses"`
	TimedOut  bool         `json:"timed_out,omitempty"`
}

// Result is the answer the model reads. answers holds one answer for each
// question asked, in order (an empty Text: the person skipped it); with
// timedOut the person stopped answering after them. A single question
// that timed out reads ClarifyTimedOut as its answer, as in the familiar
// agent; a batch marks the questions left unanswered.
func (c Clarify) Result(answers []ClarifyAnswer, timedOut bool) string {
	if !c.Batch {
		a := ClarifyAnswer{Text: ClarifyTimedOut}
		if len(answers) > 0 {
			a = answers[0]
		}
		q := c.Questions[0]
		return PlainJSON(clarifyOne{Question: q.Question, Offered: q.Offered, Response: q.response(a)})
	}
	out := clarifyBatch{Responses: make([]clarifyRow, 0, len(c.Questions)), TimedOut: timedOut}
	for i, q := range c.Questions {
		row := clarifyRow{ID: q.ID, Question: q.Question, Offered: q.Offered, Response: ""}
		if i < len(answers) && (answers[i].Text != "" || len(answers[i].Picked) > 0) {
			row.Response = q.response(answers[i])
		}
		out.Responses = append(out.Responses, row)
	}
	return PlainJSON(out)
}

// Failure is the answer the model reads when a call could not be done
// (its arguments were wrong, the surface failed): {"error": msg}, as the
// familiar agent words it.
func Failure(msg string) string { return PlainJSON(failure(msg)) }

// PlainJSON writes v as JSON that keeps <, > and & as they are (the
// familiar agent writes its answers with ensure_ascii off).
func PlainJSON(v any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return `{"error":"the result could not be written as JSON"}`
	}
	return strings.TrimSuffix(b.String(), "\n")
}
