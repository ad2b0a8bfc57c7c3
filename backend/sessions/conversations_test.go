package sessions_test

import (
	"encoding/json"
	"strings"
	"testing"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/sessions"
	"atrium/backend/sessions/sessionstest"
)

func TestConversationsShowAChainAsOneRowAndNestSubagents(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	root := e.MustCreate(t, sessions.CreateParams{Title: "Payments"})
	e.MustAppend(t, root.ID, 3)
	mid := e.MustChild(t, root.ID, sessions.RelationCompression)
	e.MustAppend(t, mid.ID, 2)
	tip := e.MustChild(t, mid.ID, sessions.RelationCompression)
	e.MustAppend(t, tip.ID, 1)
	sub1 := e.MustChild(t, root.ID, sessions.RelationDelegate) // spawned in part 1
	sub2 := e.MustChild(t, tip.ID, sessions.RelationDelegate)  // spawned in part 3
	subTip := e.MustChild(t, sub2.ID, sessions.RelationCompression)
	branch := e.MustChild(t, mid.ID, sessions.RelationBranch)
	lone := e.MustCreate(t, sessions.CreateParams{Title: "lone"})
	// A rotation recorded for the last link.
	before, after := int64(896), int64(545)
	if err := e.DB.InTx(ctx, func(tx *db.Tx) error {
		return e.Sessions.RecordRotationTx(ctx, tx, sessions.Rotation{SessionID: tip.ID, FromSessionID: mid.ID, Kind: "summarize", Reason: "manual",
			BeforeTokens: &before, AfterTokens: &after})
	}); err != nil {
		t.Fatal(err)
	}

	page, err := e.Sessions.Conversations(ctx, sessions.ConversationFilter{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]sessions.Conversation{}
	for _, r := range page.Rows {
		ids[r.ID] = r
	}
	if len(page.Rows) != 3 || ids[tip.ID].ID == "" || ids[branch.ID].ID == "" || ids[lone.ID].ID == "" {
		t.Fatalf("rows = %v", keysOf(ids))
	}
	c := ids[tip.ID]
	if c.Parts != 3 || c.TotalMessages != 6 || c.Subagents != 2 || strings.Join(c.ChainIDs, ",") != root.ID+","+mid.ID+","+tip.ID {
		t.Fatalf("chain row = %+v", c)
	}
	if b := ids[branch.ID]; b.OriginTitle != mid.Title || b.Parts != 1 {
		t.Fatalf("branch row = %+v", b)
	}
	if n, _ := e.Sessions.CountConversations(ctx, sessions.ConversationFilter{}); n != 3 {
		t.Fatalf("count = %d", n)
	}
	// With subagents: their newest parts are rows too, saying whose they are.
	all, _ := e.Sessions.Conversations(ctx, sessions.ConversationFilter{Subagents: true})
	if len(all.Rows) != 5 {
		t.Fatalf("with subagents: %d rows", len(all.Rows))
	}
	if n, _ := e.Sessions.CountConversations(ctx, sessions.ConversationFilter{Subagents: true}); n != 5 {
		t.Fatalf("count with subagents = %d", n)
	}
	subs, err := e.Sessions.Subagents(ctx, mid.ID)
	if err != nil || len(subs) != 2 || subs[0].ID != subTip.ID || subs[0].Parts != 2 || subs[1].ID != sub1.ID || subs[0].OriginTitle != tip.Title {
		t.Fatalf("subagents = %+v, %v", subs, err)
	}
	// Archiving the parent: the subagent spawned in part 1 stays active and,
	// its parent out of view, is a row of its own.
	if _, err := e.Sessions.Archive(ctx, []string{tip.ID}); err != nil {
		t.Fatal(err)
	}
	page, _ = e.Sessions.Conversations(ctx, sessions.ConversationFilter{})
	got := map[string]bool{}
	for _, r := range page.Rows {
		got[r.ID] = true
	}
	if !got[sub1.ID] || !got[subTip.ID] || got[tip.ID] {
		t.Fatalf("after archive: %v", got)
	}
	for _, sc := range []string{sessions.ScopeActive, sessions.ScopeArchived, sessions.ScopeAll} {
		f := sessions.ConversationFilter{Rule: sessions.Rule{Scope: sc}}
		p, _ := e.Sessions.Conversations(ctx, f)
		if n, _ := e.Sessions.CountConversations(ctx, f); n != int64(len(p.Rows)) {
			t.Fatalf("%s: count %d, rows %d", sc, n, len(p.Rows))
		}
	}

	// The chain reads as one scroll with the rotation recorded.
	ch, err := e.Sessions.ChainOf(ctx, mid.ID)
	if err != nil || len(ch.Parts) != 3 || len(ch.Messages[0]) != 3 || ch.Rotations[1] != nil || ch.Rotations[2] == nil {
		t.Fatalf("chain = %+v, %v", ch, err)
	}
	if d := sessions.DividerText(3, 3, ch.Rotations[2]); d != "Part 3 of 3 · compacted: summarize, 896 → 545 tokens" {
		t.Fatalf("divider = %q", d)
	}
}

func keysOf(m map[string]sessions.Conversation) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSearchFindsConversationsInEveryScopeWithHighlights(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	root := e.MustCreate(t, sessions.CreateParams{Title: "Staging work"})
	if _, err := e.Sessions.AppendMessage(ctx, root.ID, sessions.NewMessage{Role: "user", Content: "Le café: the staging endpoint is /v2/payments"}); err != nil {
		t.Fatal(err)
	}
	tip := e.MustChild(t, root.ID, sessions.RelationCompression)
	e.MustAppend(t, tip.ID, 1)
	old := e.MustCreate(t, sessions.CreateParams{Title: "old"})
	if _, err := e.Sessions.AppendMessage(ctx, old.ID, sessions.NewMessage{Role: "user", Content: "staging again"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Sessions.Archive(ctx, []string{old.ID}); err != nil {
		t.Fatal(err)
	}
	hits, err := e.Sessions.Search(ctx, "cafe stag", sessions.SearchOptions{})
	if err != nil || len(hits) != 1 {
		t.Fatalf("hits = %+v, %v", hits, err)
	}
	h := hits[0]
	if h.ConversationID != tip.ID || h.Session.ID != root.ID || h.Where != "active" || h.MessageID == 0 || h.InTitle {
		t.Fatalf("hit = %+v", h)
	}
	var words []string
	for _, r := range h.SnippetRanges {
		words = append(words, h.Snippet[r.Start:r.End])
	}
	if strings.Join(words, "|") != "café|staging" {
		t.Fatalf("highlights = %q in %q", words, h.Snippet)
	}
	if len(h.TitleRanges) != 1 || h.Session.Title[h.TitleRanges[0].Start:h.TitleRanges[0].End] != "Staging" {
		t.Fatalf("title ranges = %+v", h.TitleRanges)
	}
	arch, _ := e.Sessions.Search(ctx, "staging", sessions.SearchOptions{Scope: sessions.ScopeArchived})
	if len(arch) != 1 || arch[0].Where != "archived" || arch[0].ConversationID != old.ID {
		t.Fatalf("archived hits = %+v", arch)
	}
	if all, _ := e.Sessions.Search(ctx, "staging", sessions.SearchOptions{Scope: sessions.ScopeAll}); len(all) != 2 {
		t.Fatalf("all hits = %d", len(all))
	}
	if hs := sessions.Highlights("Staging-endpoint and STAGING", "staging-endpoint"); len(hs) != 1 || hs[0] != (sessions.Range{Start: 0, End: 16}) {
		t.Fatalf("phrase ranges = %+v", hs)
	}
}

func TestRenameExportAndBadTitles(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	root := e.MustCreate(t, sessions.CreateParams{Title: "first"})
	e.MustAppend(t, root.ID, 2)
	tip := e.MustChild(t, root.ID, sessions.RelationCompression)
	e.MustAppend(t, tip.ID, 1)
	s, err := e.Sessions.Rename(ctx, tip.ID, "  Kernel upgrade plan ")
	if err != nil || s.Title != "Kernel upgrade plan" {
		t.Fatalf("rename = %+v, %v", s, err)
	}
	if hits, _ := e.Sessions.Search(ctx, "kernel", sessions.SearchOptions{}); len(hits) != 1 {
		t.Fatal("the renamed title is not searchable")
	}
	for _, bad := range []string{"two\nlines", strings.Repeat("x", 301)} {
		if _, err := e.Sessions.Rename(ctx, tip.ID, bad); apperr.CodeOf(err) != apperr.Invalid {
			t.Fatalf("rename to %q: %v", bad, err)
		}
	}
	if _, err := e.Sessions.Rename(ctx, "nope", "x"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("rename unknown: %v", err)
	}
	md, err := e.Sessions.Export(ctx, root.ID, "markdown")
	if err != nil || !strings.HasSuffix(md.Filename, ".md") || !strings.Contains(string(md.Content), "# Kernel upgrade plan") ||
		!strings.Contains(string(md.Content), "## Part 2 of 2") || strings.Count(string(md.Content), "**User**") != 3 {
		t.Fatalf("markdown = %s, %v", md.Content, err)
	}
	js, err := e.Sessions.Export(ctx, tip.ID, "json")
	var doc struct {
		Format string `json:"format"`
		Parts  []struct {
			Messages []json.RawMessage `json:"messages"`
		} `json:"parts"`
	}
	if err != nil || json.Unmarshal(js.Content, &doc) != nil || doc.Format != "atrium.conversation" || len(doc.Parts) != 2 || len(doc.Parts[0].Messages) != 2 {
		t.Fatalf("json = %s, %v", js.Content, err)
	}
	if _, err := e.Sessions.Export(ctx, tip.ID, "pdf"); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("bad format: %v", err)
	}
	if _, err := e.Sessions.Delete(ctx, []string{tip.ID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Sessions.Rename(ctx, tip.ID, "x"); apperr.CodeOf(err) != apperr.Rejected {
		t.Fatalf("rename in the trash: %v", err)
	}
}

// The Markdown export shows a terminal call as the command line it ran
// and its result as the output and its exit code; another tool's call and
// result sit in code blocks (their text is not Markdown), fenced longer
// than any backticks in them.
func TestExportShowsToolCallsAsCode(t *testing.T) {
	t.Parallel()
	e := sessionstest.New(t)
	s := e.MustCreate(t, sessions.CreateParams{Title: "tools"})
	for _, m := range []sessions.NewMessage{
		{Role: "user", Content: "list the *files*"},
		{Role: "assistant", Content: `{"command": "ls -la"}`, ToolName: "terminal", ToolCallID: "c1"},
		{Role: "tool", Content: `{"output": "a.txt\nb.txt", "exit_code": 0, "error": null}`, ToolName: "terminal", ToolCallID: "c1"},
		{Role: "assistant", Content: `{"path": "a.txt"}`, ToolName: "read_file", ToolCallID: "c2"},
		{Role: "tool", Content: "1|# a heading\n2|```go\n3|x\n4|```", ToolName: "read_file", ToolCallID: "c2"},
		{Role: "assistant", Content: "There are **two** files."},
	} {
		if _, err := e.Sessions.AppendMessage(ctx, s.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	md, err := e.Sessions.Export(ctx, s.ID, "markdown")
	if err != nil {
		t.Fatal(err)
	}
	text := string(md.Content)
	for _, want := range []string{
		"list the *files*",
		"**Assistant → terminal**",
		"```console\n$ ls -la\n```",
		"**Tool: terminal**",
		"```\na.txt\nb.txt\n```\n\nexit 0",
		"**Assistant → read_file**",
		"```json\n{\"path\": \"a.txt\"}\n```",
		"````\n1|# a heading\n2|```go\n3|x\n4|```\n````",
		"There are **two** files.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the export lacks %q:\n%s", want, text)
		}
	}
}
