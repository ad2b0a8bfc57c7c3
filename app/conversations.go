package app

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/samber/lo"

	"atrium/backend/apperr"
	"atrium/backend/atomicfile"
	"atrium/backend/sessions"
)

// RangeDTO is a highlighted range of a text, in UTF-16 code units (the
// indices of a JavaScript string): text.slice(start, end).
type RangeDTO struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// ConversationFilter narrows Sessions.Conversations: the list filter (over
// HTTP its fields are query parameters, beside subagents=true), and whether
// subagents (delegate children) are rows too.
type ConversationFilter struct {
	Filter    ListFilter `json:"filter"`
	Subagents bool       `json:"subagents"`
}

func (f ConversationFilter) backend() (sessions.ConversationFilter, error) {
	bf, err := f.Filter.backend()
	return sessions.ConversationFilter{Rule: bf.Rule, Subagents: f.Subagents, Limit: bf.Limit, Cursor: bf.Cursor}, err
}

// ConversationDTO is one row of the conversation list: the newest part of
// a compression chain, with the chain's parts and totals, its subagents
// (collapsed, counted) and, for a branch or a subagent, its parent's title.
type ConversationDTO struct {
	Session       SessionDTO `json:"session"`
	Parts         int        `json:"parts"`
	ChainIDs      []string   `json:"chain_ids"`
	TotalMessages int64      `json:"total_messages"`
	TotalTokens   int64      `json:"total_tokens"`
	Subagents     int        `json:"subagents"`
	OriginTitle   string     `json:"origin_title"`
}

// ConversationPageDTO is one page of conversations; Next is empty on the last.
type ConversationPageDTO struct {
	Rows []ConversationDTO `json:"rows"`
	Next string            `json:"next,omitempty"`
}

// PartDTO is one part of a conversation.
type PartDTO struct {
	SessionID    string `json:"session_id"`
	Index        int    `json:"index"` // 1-based
	Title        string `json:"title"`
	MessageCount int64  `json:"message_count"`
}

// DividerDTO is the divider before a part: "Part 2 of 3 · compacted:
// summarize, 896 → 545 tokens" (Text), and its parts.
type DividerDTO struct {
	Part         int    `json:"part"`
	Of           int    `json:"of"`
	Kind         string `json:"kind"`   // "" when the rotation was not recorded
	Reason       string `json:"reason"` //
	BeforeTokens *int64 `json:"before_tokens"`
	AfterTokens  *int64 `json:"after_tokens"`
	Text         string `json:"text"`
}

// ItemDTO is one entry of a conversation's scroll: a message or a divider.
type ItemDTO struct {
	Kind       string      `json:"kind"` // "message" or "divider"
	Part       int         `json:"part"`
	Message    *MessageDTO `json:"message,omitempty"`
	Highlights []RangeDTO  `json:"highlights,omitempty"` // in Message.Content, for ?highlight=
	Divider    *DividerDTO `json:"divider,omitempty"`
}

// ChainDTO is a whole conversation as one scroll, every part in order with a
// divider at each rotation.
type ChainDTO struct {
	ID    string    `json:"id"` // the newest part
	Title string    `json:"title"`
	Where string    `json:"where"`
	Parts []PartDTO `json:"parts"`
	Items []ItemDTO `json:"items"`
}

// CreateRequest starts a session ("New session").
type CreateRequest struct {
	Title string `json:"title"`
}

// RenameRequest sets a title.
type RenameRequest struct {
	Title string `json:"title"`
}

// PinRequest pins or unpins.
type PinRequest struct {
	Pinned bool `json:"pinned"`
}

// ExportDTO is a conversation written out, to save as Filename.
type ExportDTO struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Content     string `json:"content"`
}

// SavedDTO says where an export was written; Path is "" when the user
// cancelled the dialog.
type SavedDTO struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

// utf16Ranges turns byte ranges of s into UTF-16 ranges.
func utf16Ranges(s string, rs []sessions.Range) []RangeDTO {
	out := make([]RangeDTO, 0, len(rs))
	units := func(b int) int {
		n := 0
		for _, r := range s[:b] {
			n += len(utf16.Encode([]rune{r}))
		}
		return n
	}
	for _, r := range rs {
		if r.Start < 0 || r.End > len(s) || r.Start > r.End || !utf8.ValidString(s[:r.End]) {
			continue
		}
		out = append(out, RangeDTO{Start: units(r.Start), End: units(r.End)})
	}
	return out
}

func toConversation(c sessions.Conversation, trashDays int) ConversationDTO {
	return ConversationDTO{Session: toSession(c.Session, trashDays), Parts: c.Parts, ChainIDs: nonNil(c.ChainIDs),
		TotalMessages: c.TotalMessages, TotalTokens: c.TotalTokens, Subagents: c.Subagents, OriginTitle: c.OriginTitle}
}

func toConversations(cs []sessions.Conversation, trashDays int) []ConversationDTO {
	return lo.Map(cs, func(c sessions.Conversation, _ int) ConversationDTO { return toConversation(c, trashDays) })
}

func toChain(ch sessions.Chain, highlight string) ChainDTO {
	tip := ch.Parts[len(ch.Parts)-1]
	out := ChainDTO{ID: tip.ID, Title: tip.Title, Where: tip.Where(), Parts: []PartDTO{}, Items: []ItemDTO{}}
	n := len(ch.Parts)
	for i, p := range ch.Parts {
		out.Parts = append(out.Parts, PartDTO{SessionID: p.ID, Index: i + 1, Title: p.Title, MessageCount: p.MessageCount})
		if i > 0 {
			d := DividerDTO{Part: i + 1, Of: n, Text: sessions.DividerText(i+1, n, ch.Rotations[i])}
			if r := ch.Rotations[i]; r != nil {
				d.Kind, d.Reason, d.BeforeTokens, d.AfterTokens = r.Kind, r.Reason, r.BeforeTokens, r.AfterTokens
			}
			out.Items = append(out.Items, ItemDTO{Kind: "divider", Part: i + 1, Divider: &d})
		}
		for _, m := range ch.Messages[i] {
			dto := toMessage(m, 0)
			item := ItemDTO{Kind: "message", Part: i + 1, Message: &dto}
			if highlight != "" {
				item.Highlights = utf16Ranges(m.Content, sessions.Highlights(m.Content, highlight))
			}
			out.Items = append(out.Items, item)
		}
	}
	return out
}

// Conversations lists conversations (a chain is one row, subagents nested
// unless asked for), newest activity first, keyset-paged.
func (s *Sessions) Conversations(f ConversationFilter) (ConversationPageDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	bf, err := f.backend()
	if err != nil {
		return ConversationPageDTO{}, err
	}
	p, err := s.st.Sessions.Conversations(ctx, bf)
	if err != nil {
		return ConversationPageDTO{}, err
	}
	rows := toConversations(p.Rows, s.st.Sessions.TrashDays())
	if run := s.running(); run != nil {
		// A conversation runs when a turn runs in any of its parts.
		for i := range rows {
			for _, id := range append([]string{rows[i].Session.ID}, rows[i].ChainIDs...) {
				if where := run[id]; where != "" {
					rows[i].Session.RunningIn = where
					break
				}
			}
		}
	}
	return ConversationPageDTO{Rows: rows, Next: p.Next}, nil
}

// ConversationCount is how many rows Conversations lists for f.
func (s *Sessions) ConversationCount(f ConversationFilter) (CountDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	bf, err := f.backend()
	if err != nil {
		return CountDTO{}, err
	}
	n, err := s.st.Sessions.CountConversations(ctx, bf)
	return CountDTO{Count: n}, err
}

// ConversationIDs are the ids of every row Conversations lists for f, in
// order ("select all").
func (s *Sessions) ConversationIDs(f ConversationFilter) ([]string, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	bf, err := f.backend()
	if err != nil {
		return nil, err
	}
	return s.st.Sessions.ConversationIDs(ctx, bf)
}

// Subagents are the delegate children of a conversation, as rows.
func (s *Sessions) Subagents(id string) ([]ConversationDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	cs, err := s.st.Sessions.Subagents(ctx, id)
	if err != nil {
		return nil, err
	}
	return toConversations(cs, s.st.Sessions.TrashDays()), nil
}

// Conversation is the whole conversation id belongs to as one scroll, with
// the words of highlight (if any) marked in each message.
func (s *Sessions) Conversation(id, highlight string) (ChainDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	ch, err := s.st.Sessions.ChainOf(ctx, id)
	if err != nil {
		return ChainDTO{}, err
	}
	return toChain(ch, highlight), nil
}

// Create starts a session from the UI ("New session").
func (s *Sessions) Create(in CreateRequest) (SessionDTO, error) {
	ctx, cancel := s.with(writeTimeout)
	defer cancel()
	source := PlatformDesktop
	if s.platform == PlatformDashboard {
		source = PlatformDashboard
	}
	out, err := s.st.Sessions.Create(ctx, sessions.CreateParams{Title: in.Title, Source: source})
	if err != nil {
		return SessionDTO{}, err
	}
	return toSession(out, s.st.Sessions.TrashDays()), nil
}

// Rename sets a session's title.
func (s *Sessions) Rename(id, title string) (SessionDTO, error) {
	ctx, cancel := s.with(writeTimeout)
	defer cancel()
	out, err := s.st.Sessions.Rename(ctx, id, title)
	if err != nil {
		return SessionDTO{}, err
	}
	return toSession(out, s.st.Sessions.TrashDays()), nil
}

// SetPinned pins or unpins a session.
func (s *Sessions) SetPinned(id string, pinned bool) (SessionDTO, error) {
	ctx, cancel := s.with(writeTimeout)
	defer cancel()
	out, err := s.st.Sessions.SetPinned(ctx, id, pinned)
	if err != nil {
		return SessionDTO{}, err
	}
	return toSession(out, s.st.Sessions.TrashDays()), nil
}

// Export writes out a whole conversation as markdown or json.
func (s *Sessions) Export(id, format string) (ExportDTO, error) {
	ctx, cancel := s.with(readTimeout)
	defer cancel()
	ex, err := s.st.Sessions.Export(ctx, id, format)
	if err != nil {
		return ExportDTO{}, err
	}
	return ExportDTO{Filename: ex.Filename, ContentType: ex.ContentType, Content: string(ex.Content)}, nil
}

func (s *Sessions) withSaver(sv Saver) *Sessions {
	s.saver = sv
	return s
}

// SaveExport writes the conversation of id as format to a file the user
// picks in a native save dialog. Only the window has one: the dashboard
// downloads Export's content instead. The export is built before the
// dialog opens, so a missing session is reported without asking where.
func (s *Sessions) SaveExport(id, format string) (SavedDTO, error) {
	if s.saver == nil {
		return SavedDTO{}, apperr.New(apperr.Rejected, "no save dialog here: download the export instead")
	}
	ctx, cancel := s.with(readTimeout)
	ex, err := s.st.Sessions.Export(ctx, id, format)
	cancel()
	if err != nil {
		return SavedDTO{}, err
	}
	path, err := s.saver.SaveFile("Export the conversation", ex.Filename)
	if err != nil {
		return SavedDTO{}, apperr.Wrap(apperr.Internal, err, "save dialog")
	}
	if path == "" {
		return SavedDTO{}, nil
	}
	if err := atomicfile.Write(path, ex.Content, 0o644, nil); err != nil {
		return SavedDTO{}, apperr.Wrap(apperr.Rejected, err, "could not write the export to %s", path)
	}
	return SavedDTO{Path: path, Bytes: len(ex.Content)}, nil
}
