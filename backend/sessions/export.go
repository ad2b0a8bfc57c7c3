package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"atrium/backend/apperr"
)

// Export formats.
const (
	FormatMarkdown = "markdown"
	FormatJSON     = "json"
)

// Export is a conversation written out for people (Markdown) or programs
// (JSON).
type Export struct {
	Filename    string
	ContentType string
	Content     []byte
}

// exportDoc is the JSON export: every part of the conversation, first to
// newest, each with its active messages, and what the rotation between
// parts said.
type exportDoc struct {
	Format     string       `json:"format"` // "atrium.conversation"
	Version    int          `json:"version"`
	ExportedAt time.Time    `json:"exported_at"`
	Title      string       `json:"title"`
	Parts      []exportPart `json:"parts"`
}

type exportPart struct {
	Session  Session   `json:"session"`
	Rotation *Rotation `json:"rotation,omitempty"`
	Messages []Message `json:"messages"`
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Export writes out the whole conversation session id belongs to (all its
// parts) as Markdown or JSON.
func (s *Service) Export(ctx context.Context, id, format string) (Export, error) {
	switch format {
	case "", "md":
		format = FormatMarkdown
	case FormatMarkdown, FormatJSON:
	default:
		return Export{}, apperr.New(apperr.Invalid, "export format %q: use markdown or json", format)
	}
	ch, err := s.ChainOf(ctx, id)
	if err != nil {
		return Export{}, err
	}
	tip := ch.Parts[len(ch.Parts)-1]
	title := tip.Title
	if title == "" {
		title = "Untitled session"
	}
	base := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(title), "-"), "-.")
	if len(base) > 60 {
		base = base[:60]
	}
	if base == "" {
		base = "session"
	}
	base += "-" + tip.ID[:min(8, len(tip.ID))]
	if format == FormatJSON {
		doc := exportDoc{Format: "atrium.conversation", Version: 1, ExportedAt: s.db.Now().UTC(), Title: title}
		for i, p := range ch.Parts {
			msgs := ch.Messages[i]
			if msgs == nil {
				msgs = []Message{}
			}
			doc.Parts = append(doc.Parts, exportPart{Session: p, Rotation: ch.Rotations[i], Messages: msgs})
		}
		raw, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return Export{}, err
		}
		return Export{Filename: base + ".json", ContentType: "application/json", Content: append(raw, '\n')}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", title)
	first := ch.Parts[0]
	fmt.Fprintf(&b, "- Started: %s\n- Last activity: %s\n- Source: %s\n", first.StartedAt.UTC().Format(time.RFC3339),
		tip.LastActivityAt.UTC().Format(time.RFC3339), tip.Source)
	if len(ch.Parts) > 1 {
		fmt.Fprintf(&b, "- Parts: %d (the conversation was compacted %d time(s))\n", len(ch.Parts), len(ch.Parts)-1)
	}
	fmt.Fprintf(&b, "- Session: `%s`\n", tip.ID)
	for i := range ch.Parts {
		if len(ch.Parts) > 1 {
			fmt.Fprintf(&b, "\n---\n\n## %s\n", DividerText(i+1, len(ch.Parts), ch.Rotations[i]))
		}
		for _, m := range ch.Messages[i] {
			who := map[string]string{"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool"}[m.Role]
			switch {
			case m.Role == "tool" && m.ToolName != "":
				who = "Tool: " + m.ToolName
			case m.Role == "assistant" && m.ToolName != "":
				who = "Assistant → " + m.ToolName
			}
			fmt.Fprintf(&b, "\n**%s** · %s\n\n%s\n", who, m.CreatedAt.UTC().Format("2006-01-02 15:04"), exportBody(m))
		}
	}
	return Export{Filename: base + ".md", ContentType: "text/markdown; charset=utf-8", Content: []byte(b.String())}, nil
}

// exportBody is a message as the Markdown export shows it: what people and
// models write as it is (it is Markdown), a tool call and its result in a
// code block, a terminal's as the command line it ran and its output with
// the exit code.
func exportBody(m Message) string {
	text := strings.TrimRight(m.Content, "\n")
	if m.ToolName == "" {
		return text
	}
	if m.ToolName == "terminal" {
		switch m.Role {
		case "assistant":
			var call struct {
				Command string `json:"command"`
			}
			if json.Unmarshal([]byte(m.Content), &call) == nil && call.Command != "" {
				return fence("console", "$ "+call.Command)
			}
		case "tool":
			var res struct {
				Output   *string `json:"output"`
				ExitCode *int    `json:"exit_code"`
				Error    *string `json:"error"`
			}
			if json.Unmarshal([]byte(m.Content), &res) == nil && (res.Output != nil || res.Error != nil) {
				var out []string
				if res.Output != nil && *res.Output != "" {
					out = append(out, fence("", *res.Output))
				}
				if res.ExitCode != nil {
					out = append(out, fmt.Sprintf("exit %d", *res.ExitCode))
				}
				if res.Error != nil && *res.Error != "" {
					out = append(out, "error: "+*res.Error)
				}
				return strings.Join(out, "\n\n")
			}
		}
	}
	lang := ""
	if json.Valid([]byte(m.Content)) {
		lang = "json"
	}
	return fence(lang, text)
}

// fence is text in a Markdown code block whose fence is longer than any
// run of backticks in it.
func fence(lang, text string) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", max(3, longest+1))
	return f + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + f
}

// DividerText is what the divider before part n of total says: "Part 2 of 3
// · compacted: summarize, 896 → 545 tokens".
func DividerText(n, total int, r *Rotation) string {
	out := fmt.Sprintf("Part %d of %d", n, total)
	if r == nil {
		return out
	}
	out += " · compacted: " + r.Kind
	if r.BeforeTokens != nil && r.AfterTokens != nil {
		out += fmt.Sprintf(", %d → %d tokens", *r.BeforeTokens, *r.AfterTokens)
	}
	return out
}
