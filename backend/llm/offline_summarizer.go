package llm

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultSummaryChars is the summary bound of OfflineSummarizer (and the
// target length of ModelSummarizer) when MaxChars is not set.
const DefaultSummaryChars = 2000

// minSummaryChars is the smallest bound OfflineSummarizer honours: below it
// the header and a labelled request no longer fit.
const minSummaryChars = 160

// maxBulletChars caps one bullet so that a single huge line (a tool's output)
// cannot crowd out everything else.
const maxBulletChars = 240

// ErrNothingToSummarize is returned (wrapped) by a summarizer given no
// messages, or messages without any text. Compaction treats it as an aborted
// attempt.
var ErrNothingToSummarize = errors.New("nothing to summarize")

// OfflineSummarizer is a deterministic, extractive Summarizer that needs no
// model. It keeps the sentences and lines of a transcript that carry
// decisions and rules ("we decided", "must", "never", "convention"...),
// names (capitalised identifiers, file paths, URLs, API endpoints such as
// /v2/users, dotted or underscored identifiers) and numbers (ports, versions,
// amounts), and always the last user request, labelled. When a focus is
// given, lines that mention its words rank first.
//
// The output starts with "Summary of N earlier messages:" followed by
// bullet lines ("- role: text") and ends with "Last user request: ...".
// The same input always yields the same output. It is safe for concurrent
// use.
type OfflineSummarizer struct {
	// MaxChars bounds the summary in bytes (so also in characters);
	// <= 0 means DefaultSummaryChars, and values below 160 are raised to 160.
	// The least important bullets are dropped first; the last user request
	// is only shortened when it alone would not fit.
	MaxChars int
}

// summaryUnit is one sentence or line of the transcript, a candidate bullet.
type summaryUnit struct {
	pos   int    // order in the transcript, the tie-breaker everywhere
	label string // "user", "assistant", "tool echo", ...
	text  string // whitespace-collapsed
	score int
	focus bool // mentions a focus word
	keep  bool // carries a decision, a name, a number or a focus word
}

// Summarize implements Summarizer.
func (s OfflineSummarizer) Summarize(ctx context.Context, msgs []Message, focus string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("offline summarizer: %w", err)
	}
	limit := s.MaxChars
	if limit <= 0 {
		limit = DefaultSummaryChars
	}
	if limit < minSummaryChars {
		limit = minSummaryChars
	}

	lastUser := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && strings.TrimSpace(msgs[i].Content) != "" {
			lastUser = i
			break
		}
	}
	focusWords := focusTerms(focus)
	var units []summaryUnit
	pos := 0
	for i, m := range msgs {
		if i == lastUser {
			continue // reported on its own, labelled
		}
		label := roleLabel(m)
		shapes := map[string]bool{}
		for _, text := range splitUnits(m.Content) {
			u := scoreUnit(pos, label, m.Role, text, focusWords)
			pos++
			if m.Role == "tool" {
				// Tool output repeats itself (log lines): one line per
				// shape, digits aside.
				shape := strings.Map(maskDigit, strings.ToLower(text))
				if shapes[shape] {
					continue
				}
				shapes[shape] = true
			}
			u.keep = u.keep && (u.score > 0 || u.focus)
			units = append(units, u)
		}
		for _, tc := range m.ToolCalls {
			text := "called tool " + tc.Name
			if args := collapseSpace(tc.Arguments); args != "" && args != "{}" {
				text += " with " + clipBytes(args, 120)
			}
			units = append(units, scoreUnit(pos, label, m.Role, text, focusWords))
			pos++
		}
	}
	if len(units) == 0 && lastUser < 0 {
		return "", fmt.Errorf("offline summarizer: %w: %d messages carry no text", ErrNothingToSummarize, len(msgs))
	}

	noun := "messages"
	if len(msgs) == 1 {
		noun = "message"
	}
	header := fmt.Sprintf("Summary of %d earlier %s:", len(msgs), noun)
	if f := collapseSpace(focus); f != "" {
		header = fmt.Sprintf("Summary of %d earlier %s (focus: %s):", len(msgs), noun, clipBytes(f, 60))
	}
	used := len(header)
	var request string
	if lastUser >= 0 {
		request = "Last user request: " + collapseSpace(msgs[lastUser].Content)
		if used+1+len(request) > limit {
			request = clipBytes(request, limit-used-1)
		}
		used += 1 + len(request)
	}

	// Candidates: the salient units, or, when there are none and no request
	// either, everything (better a plain extract than an empty summary).
	var cands []summaryUnit
	seen := map[string]bool{}
	for _, u := range units {
		key := strings.ToLower(u.text)
		if seen[key] {
			continue
		}
		seen[key] = true
		if u.keep {
			cands = append(cands, u)
		}
	}
	if len(cands) == 0 && request == "" {
		seen = map[string]bool{}
		for _, u := range units {
			if key := strings.ToLower(u.text); !seen[key] {
				seen[key] = true
				cands = append(cands, u)
			}
		}
	}

	// Most important first; keep what fits, skipping what does not so that a
	// shorter, less important line can still use the room left.
	sort.SliceStable(cands, func(a, b int) bool {
		if cands[a].score != cands[b].score {
			return cands[a].score > cands[b].score
		}
		return cands[a].pos < cands[b].pos
	})
	var chosen []summaryUnit
	for _, u := range cands {
		line := bulletLine(u)
		if used+1+len(line) <= limit {
			used += 1 + len(line)
			chosen = append(chosen, u)
		}
	}
	if len(chosen) == 0 && request == "" {
		// Even the shortest candidate is too long for the bound: clip one.
		u := cands[0]
		room := limit - len(header) - 1 - len(bulletLine(summaryUnit{label: u.label}))
		u.text = clipBytes(u.text, room)
		chosen = append(chosen, u)
	}

	// Print focus matches first, then the rest, each in transcript order.
	sort.SliceStable(chosen, func(a, b int) bool {
		if chosen[a].focus != chosen[b].focus {
			return chosen[a].focus
		}
		return chosen[a].pos < chosen[b].pos
	})
	var b strings.Builder
	b.WriteString(header)
	for _, u := range chosen {
		b.WriteByte('\n')
		b.WriteString(bulletLine(u))
	}
	if request != "" {
		b.WriteByte('\n')
		b.WriteString(request)
	}
	return b.String(), nil
}

func bulletLine(u summaryUnit) string { return "- " + u.label + ": " + u.text }

func roleLabel(m Message) string {
	switch {
	case m.Role == "tool" && m.ToolName != "":
		return "tool " + m.ToolName
	case m.Role == "":
		return "message"
	default:
		return m.Role
	}
}

// splitUnits cuts a message into lines, and lines into sentences, dropping
// list markers and fragments without letters or digits.
func splitUnits(content string) []string {
	var out []string
	for _, line := range strings.Split(content, "\n") {
		for _, sent := range splitSentences(line) {
			sent = strings.TrimLeft(collapseSpace(sent), "-*•> ")
			sent = strings.TrimSpace(sent)
			if len(sent) < 2 || strings.IndexFunc(sent, isAlnum) < 0 {
				continue
			}
			out = append(out, clipBytes(sent, maxBulletChars))
		}
	}
	return out
}

// splitSentences cuts after '.', '!' or '?' followed by white space, which
// leaves versions (1.2.3), hosts (api.example.com) and paths whole.
func splitSentences(line string) []string {
	var out []string
	start := 0
	for i := 0; i+1 < len(line); i++ {
		c := line[i]
		if (c == '.' || c == '!' || c == '?') && (line[i+1] == ' ' || line[i+1] == '\t') {
			out = append(out, line[start:i+1])
			start = i + 1
		}
	}
	return append(out, line[start:])
}

// Decision words and phrases, matched on whole lower-case words.
var (
	decisionWords = map[string]bool{
		"decided": true, "decide": true, "decides": true, "decision": true, "decisions": true,
		"agreed": true, "agree": true, "agrees": true, "must": true, "should": true, "shall": true,
		"never": true, "always": true, "rule": true, "rules": true, "convention": true,
		"conventions": true, "chose": true, "chosen": true, "choose": true, "require": true,
		"required": true, "requires": true, "requirement": true, "prefer": true, "preferred": true,
		"policy": true, "important": true, "don't": true, "cannot": true, "can't": true,
		"won't": true, "instead": true, "standard": true, "deadline": true,
	}
	decisionPhrases = []string{
		" we will ", " we'll ", " let's ", " going with ", " go with ", " do not ",
		" make sure ", " from now on ", " settled on ",
	}
	// Capitalised words that are not names.
	notNames = map[string]bool{"I": true, "I'm": true, "I'll": true, "I've": true, "I'd": true, "OK": true, "A": true}
	// Dotted words that are not identifiers.
	notDotted = map[string]bool{"e.g": true, "i.e": true, "etc": true, "vs": true}
	// Focus words too common to mean anything.
	focusStop = map[string]bool{
		"the": true, "and": true, "for": true, "about": true, "with": true, "that": true,
		"this": true, "from": true, "all": true, "any": true, "our": true, "are": true,
	}
)

func scoreUnit(pos int, label, role, text string, focusWords []string) summaryUnit {
	u := summaryUnit{pos: pos, label: label, text: text}
	lower := strings.ToLower(text)
	words := strings.FieldsFunc(lower, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
	decision := false
	for _, w := range words {
		if decisionWords[strings.Trim(w, "'")] || decisionWords[w] {
			decision = true
			break
		}
	}
	if !decision {
		joined := " " + strings.Join(words, " ") + " "
		for _, p := range decisionPhrases {
			if strings.Contains(joined, p) {
				decision = true
				break
			}
		}
	}
	strong, name, number := false, false, false
	for i, tok := range strings.Fields(text) {
		s, n, d := classifyToken(tok, i == 0)
		strong, name, number = strong || s, name || n, number || d
	}
	for _, f := range focusWords {
		if strings.Contains(lower, f) {
			u.focus = true
			break
		}
	}
	if decision {
		u.score += 3
	}
	if strong {
		u.score += 2
	}
	if name {
		u.score++
	}
	if number {
		u.score++
	}
	if u.focus {
		u.score += 100
	}
	switch role {
	case "user":
		u.score++
	case "tool":
		u.score -= 2 // tool output is bulky; what people said matters more
	}
	// keep is narrowed by the caller once penalties are known: a unit whose
	// score fell to 0 or below (a tool line with only a number) is dropped.
	u.keep = decision || strong || name || number || u.focus
	return u
}

// classifyToken reports whether a word is a strong name (URL, path, endpoint,
// dotted or underscored identifier, `quoted`, @handle), a plain name
// (capitalised, CamelCase or ALLCAPS) and whether it has digits.
func classifyToken(tok string, first bool) (strong, name, number bool) {
	quoted := strings.HasPrefix(tok, "`")
	t := strings.Trim(tok, "\"'()[]{}<>,;:!?*`")
	t = strings.TrimRight(t, ".")
	if t == "" {
		return false, false, false
	}
	number = strings.IndexFunc(t, unicode.IsDigit) >= 0
	switch {
	case quoted && len(t) > 1,
		strings.Contains(t, "://"),
		strings.HasPrefix(t, "@") && len(t) > 1,
		(strings.HasPrefix(t, "/") || strings.HasPrefix(t, "./") || strings.HasPrefix(t, "~/")) && strings.IndexFunc(t, unicode.IsLetter) >= 0,
		strings.Contains(t, "/") && (strings.Count(t, "/") > 1 || strings.ContainsAny(t, "._") || number),
		innerMark(t, '_'),
		innerMark(t, '.') && !notDotted[strings.ToLower(t)] && !numeric(t):
		strong = true
	}
	r, _ := utf8.DecodeRuneInString(t)
	if unicode.IsUpper(r) && !notNames[t] {
		switch {
		case isCamelOrCaps(t):
			name = true
		case !first:
			name = true
		}
	} else if isCamelOrCaps(t) {
		name = true // getUser, iPhone
	}
	return strong, name, number
}

// numeric reports whether t is a number, perhaps a version or with a short
// unit: 3.14, 1.4.2, v2.0, 0.05s, 12.5ms. Such words count as numbers, not
// as dotted identifiers.
func numeric(t string) bool {
	t = strings.TrimPrefix(strings.TrimPrefix(t, "v"), "V")
	end := strings.LastIndexFunc(t, unicode.IsDigit)
	if end < 0 || len(t)-end-1 > 3 {
		return false
	}
	for _, r := range t[:end+1] {
		if !unicode.IsDigit(r) && r != '.' && r != ',' {
			return false
		}
	}
	for _, r := range t[end+1:] {
		if !unicode.IsLetter(r) && r != '%' {
			return false
		}
	}
	return true
}

// innerMark reports whether mark sits between two letters or digits.
func innerMark(t string, mark byte) bool {
	for i := 1; i+1 < len(t); i++ {
		if t[i] == mark && isAlnumByte(t[i-1]) && isAlnumByte(t[i+1]) {
			return true
		}
	}
	return false
}

// isCamelOrCaps: an upper-case letter after a lower-case one (PostgreSQL,
// getUser), or two or more letters all upper case (API, JWT).
func isCamelOrCaps(t string) bool {
	letters, uppers := 0, 0
	prevLower := false
	camel := false
	for _, r := range t {
		if unicode.IsLetter(r) {
			letters++
			if unicode.IsUpper(r) {
				uppers++
				if prevLower {
					camel = true
				}
			}
			prevLower = unicode.IsLower(r)
		} else {
			prevLower = false
		}
	}
	return camel || (letters >= 2 && uppers == letters)
}

func maskDigit(r rune) rune {
	if unicode.IsDigit(r) {
		return '#'
	}
	return r
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

func isAlnumByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// focusTerms splits a focus hint into lower-case words worth matching, in
// their order of appearance.
func focusTerms(focus string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(focus), func(r rune) bool { return !isAlnum(r) }) {
		if len(w) >= 3 && !focusStop[w] {
			out = append(out, w)
		}
	}
	return out
}

// collapseSpace joins the words of s with single spaces.
func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// clipBytes shortens s to at most n bytes, cutting on a rune boundary and
// marking the cut with "…".
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	if n < len(ellipsis) {
		return ""
	}
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ") + ellipsis
}

// clipRunes shortens s to at most n characters, marking the cut with "…".
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, count := 0, 0
	for i < len(s) && count < n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		count++
	}
	return s[:i] + "…"
}
