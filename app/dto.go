package app

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"atrium/backend/compaction"
	"atrium/backend/db"
	"atrium/backend/hooks"
	"atrium/backend/plugins"
	"atrium/backend/receipts"
	"atrium/backend/sessions"
	"atrium/backend/turns"
)

// SessionDTO is one session as the UI shows it.
type SessionDTO struct {
	ID              string     `json:"id"`
	Source          string     `json:"source"`
	Title           string     `json:"title"`
	Profile         string     `json:"profile"`
	ParentSessionID string     `json:"parent_session_id,omitempty"`
	Relation        string     `json:"relation,omitempty"`
	StartedAt       time.Time  `json:"started_at"`
	EndedAt         *time.Time `json:"ended_at,omitempty"`
	EndReason       string     `json:"end_reason,omitempty"`
	LastActivityAt  time.Time  `json:"last_activity_at"`
	Archived        bool       `json:"archived"`
	ArchivedAt      *time.Time `json:"archived_at,omitempty"`
	ArchivedBy      string     `json:"archived_by,omitempty"`
	Pinned          bool       `json:"pinned"`
	MessageCount    int64      `json:"message_count"`
	TokenCount      int64      `json:"token_count"`
	Platform        string     `json:"platform,omitempty"`
	SenderID        string     `json:"sender_id,omitempty"`
	SenderName      string     `json:"sender_name,omitempty"`
	Where           string     `json:"where"`                 // active, archived or trash
	TrashedAt       *time.Time `json:"trashed_at,omitempty"`  // in the trash only
	PurgeAfter      *time.Time `json:"purge_after,omitempty"` // in the trash only: when it goes for good
	// RunningIn: a turn runs in the session now, there (cli, desktop,
	// dashboard, cron, or the chat platform), in any process of the
	// profile: Sessions.StopTurn stops it. Get, List and Conversations fill
	// it in (a conversation runs when any of its parts does); search hits do
	// not.
	RunningIn string `json:"running_in,omitempty"`
}

// FilterDTO is the shared filter (the same fields as query parameters, in
// JSON bodies and on the command line as --flags): empty fields do not
// filter. See sessions.ParseRule for the syntax; bad input is an invalid
// error naming the field.
type FilterDTO struct {
	Scope        string `json:"scope"`         // active (default), archived, trash, all
	Source       string `json:"source"`        // comma list: cli, desktop, dashboard, gateway, cron, subagent, tool
	Platform     string `json:"platform"`      // comma list; "local" for sessions without one
	Profile      string `json:"profile"`       //
	OlderThan    string `json:"older_than"`    // started more than D ago: 90m, 12h, 30d, 2w
	InactiveFor  string `json:"inactive_for"`  // last activity more than D ago
	ActiveWithin string `json:"active_within"` // last activity within D
	Messages     string `json:"messages"`      // N, =N, <N, <=N, >N, >=N, N..M
	Pinned       *bool  `json:"pinned"`        //
	HasChildren  *bool  `json:"has_children"`  // delegate or branch children
	Match        string `json:"match"`         // title or messages contain every word
	Title        string `json:"title"`         // title contains every word
	TrashedFor   string `json:"trashed_for"`   // scope trash: in the trash more than D
}

// ListFilter narrows Sessions.List, Count and IDs: the FilterDTO fields, a
// page, and the legacy Archived flag (scope archived).
type ListFilter struct {
	Scope        string `json:"scope"`
	Archived     bool   `json:"archived"`
	Source       string `json:"source"`
	Platform     string `json:"platform"`
	Profile      string `json:"profile"`
	OlderThan    string `json:"older_than"`
	InactiveFor  string `json:"inactive_for"`
	ActiveWithin string `json:"active_within"`
	Messages     string `json:"messages"`
	Pinned       *bool  `json:"pinned"`
	HasChildren  *bool  `json:"has_children"`
	Match        string `json:"match"`
	Title        string `json:"title"`
	TrashedFor   string `json:"trashed_for"`
	Limit        int    `json:"limit"`
	Cursor       string `json:"cursor"`
}

// PageDTO is one page of sessions; Next is empty on the last page.
type PageDTO struct {
	Sessions []SessionDTO `json:"sessions"`
	Next     string       `json:"next,omitempty"`
}

// SearchRequest is a search in a scope: active, archived, trash or all
// (active and archived; the default).
type SearchRequest struct {
	Q     string `json:"q"`
	Scope string `json:"scope"`
	Limit int    `json:"limit"`
}

// HitDTO is one search result: a conversation (open ConversationID, then
// scroll to MessageID), where it lives, and the ranges of Snippet and of
// Session.Title that match (UTF-16 offsets).
type HitDTO struct {
	Session           SessionDTO `json:"session"`
	ConversationID    string     `json:"conversation_id"`
	Where             string     `json:"where"`
	MessageID         int64      `json:"message_id,omitempty"`
	Snippet           string     `json:"snippet"`
	SnippetHighlights []RangeDTO `json:"snippet_highlights"`
	TitleHighlights   []RangeDTO `json:"title_highlights"`
	InTitle           bool       `json:"in_title"`
}

// Compaction markers of a transcript message.
const (
	MarkerSummary = "summary" // a compaction summary
	MarkerStub    = "stub"    // a pruned tool output
	// MarkerHookFeedback is an instruction a Claude Code Stop hook gave
	// when it kept the turn going: stored as a user message, not written
	// by the person.
	MarkerHookFeedback = "hook_feedback"
)

// MessageDTO is one transcript message.
type MessageDTO struct {
	ID          int64     `json:"id"`
	Role        string    `json:"role"`
	Content     string    `json:"content"`
	SentContent *string   `json:"sent_content"`
	ToolName    string    `json:"tool_name,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
	Compaction  bool      `json:"compaction"`       // written by compaction
	Marker      string    `json:"marker,omitempty"` // summary, stub or hook_feedback
}

// PreviewDTO says what an operation would change now, exactly (it is run
// and rolled back): Count rows, cascades included, of which Cascaded were
// neither selected nor matched; Matched is how many the rule matched (the
// ids found, for a selection).
type PreviewDTO struct {
	AffectedIDs []string `json:"affected_ids"`
	Count       int      `json:"count"`
	Cascaded    int      `json:"cascaded"`
	Matched     int      `json:"matched"`
}

// PreviewRequest asks what Op (default delete) would do to IDs or to the
// sessions Filter matches.
type PreviewRequest struct {
	Op     string     `json:"op"`
	IDs    []string   `json:"ids"`
	Filter *FilterDTO `json:"filter"`
}

// BulkRequest is a delete, archive, unarchive, restore or purge from the UI,
// of IDs or of the sessions Filter matches (one of the two). RequestID is
// made by the UI once per user action; a retry with it replays.
type BulkRequest struct {
	RequestID string     `json:"request_id"`
	IDs       []string   `json:"ids"`
	Filter    *FilterDTO `json:"filter"`
}

// OutcomeDTO is what happened to one requested id.
type OutcomeDTO struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
}

// ReceiptDTO is the result of a bulk request. Trashed: the rows went to the
// trash and can be restored until PurgeAfter. EventID is the hook event the
// request fired ("" if none).
type ReceiptDTO struct {
	RequestID   string       `json:"request_id"`
	Op          string       `json:"op"`
	Replayed    bool         `json:"replayed"`
	Changed     bool         `json:"changed"`
	AffectedIDs []string     `json:"affected_ids"`
	Outcomes    []OutcomeDTO `json:"outcomes"`
	CreatedAt   time.Time    `json:"created_at"`
	Trashed     bool         `json:"trashed"`
	PurgeAfter  *time.Time   `json:"purge_after"`
	EventID     string       `json:"event_id"`
	ResultOp    string       `json:"result_op"` // what was done: the op, or for an undo its inverse (restore, unarchive, ...)
	Matched     int          `json:"matched"`   // sessions a rule matched (0 for ids)
	Undoable    bool         `json:"undoable"`  // Undo(request_id) can undo it as a whole
	Undone      bool         `json:"undone"`
}

// EmptyTrashRequest empties the trash, or only what has been there longer
// than OlderThan ("12h", "7d", "2w"; "" is all of it).
type EmptyTrashRequest struct {
	RequestID string `json:"request_id"`
	OlderThan string `json:"older_than"`
}

// TrashDTO says what the trash holds and when it next purges.
type TrashDTO struct {
	Sessions        int64      `json:"sessions"`
	Messages        int64      `json:"messages"`
	Bytes           int64      `json:"bytes"`
	TrashDays       int        `json:"trash_days"` // 0: deletes skip the trash
	OldestTrashedAt *time.Time `json:"oldest_trashed_at"`
	NextPurgeAt     *time.Time `json:"next_purge_at"`
}

// SendRequest is one user turn.
type SendRequest struct {
	Text string `json:"text"`
}

// TurnDTO is the outcome of Send.
type TurnDTO struct {
	SessionID   string   `json:"session_id"`
	Rotated     bool     `json:"rotated"`
	Command     string   `json:"command,omitempty"`
	Output      string   `json:"output,omitempty"`
	Reply       string   `json:"reply,omitempty"`
	SentText    string   `json:"sent_text,omitempty"`
	ToolCalls   []string `json:"tool_calls"`
	Compactions int      `json:"compactions"`
	// Earlier are the replies after which a hook (pre_turn_end, a Claude
	// Code Stop hook) kept the turn going; Reply is the last.
	Earlier []string `json:"earlier"`
	// Notes are what hooks asked to show about the turn.
	Notes []string `json:"notes"`
	// Stopped is set when a person stopped the turn (StopTurn): what it
	// stored before stays; it has no reply.
	Stopped bool `json:"stopped,omitempty"`
}

// CommandDTO is a slash command the composer offers: its name, the hint
// for its arguments and what it does.
type CommandDTO struct {
	Name        string `json:"name"`
	ArgsHint    string `json:"args_hint,omitempty"`
	Description string `json:"description"`
	Plugin      string `json:"plugin,omitempty"`
	// Skill: the command runs one of the profile's skills (its SKILL.md
	// sent in the person's place).
	Skill bool `json:"skill,omitempty"`
}

// PluginDTO is one discovered plugin.
type PluginDTO struct {
	Name        string   `json:"name"`
	Version     string   `json:"version,omitempty"`
	Description string   `json:"description,omitempty"`
	Runtime     string   `json:"runtime"`
	Source      string   `json:"source"`
	Enabled     bool     `json:"enabled"`
	State       string   `json:"state"`
	Error       string   `json:"error,omitempty"`
	Warnings    []string `json:"warnings"`
	Hooks       []string `json:"hooks"`
	Commands    []string `json:"commands"`
	// Registered: Hooks and Commands are what the plugin registered at its
	// last handshake; otherwise what its manifest declares.
	Registered bool   `json:"registered"`
	PID        int    `json:"pid,omitempty"`
	Process    string `json:"process,omitempty"` // the Atrium process running it
	Restarts   int    `json:"restarts,omitempty"`
	Dir        string `json:"dir,omitempty"`
	// MissingEnv: the variables its manifest requires (requires_env) that
	// this process has neither from its environment nor from the
	// profile's .env: the plugin goes without them until they are set.
	MissingEnv []EnvNeedDTO `json:"missing_env"`
}

// EnvNeedDTO is a variable a plugin's manifest declares, as it describes
// it.
type EnvNeedDTO struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	URL         string `json:"url,omitempty"`
	Secret      bool   `json:"secret"`
}

// PluginEnvRequest is the body of POST /api/plugins/{name}/env: a value
// for a variable the plugin declares, kept in the profile's .env ("":
// removed).
type PluginEnvRequest struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// InstallRequest installs a plugin from a folder or archive.
type InstallRequest struct {
	Source string `json:"source"`
	Force  bool   `json:"force"`
}

// DeliveryDTO is one subscriber's outcome for an event.
type DeliveryDTO struct {
	Subscriber  string    `json:"subscriber"`
	Status      string    `json:"status"`
	Error       string    `json:"error,omitempty"`
	Redelivery  bool      `json:"redelivery"`
	DeliveredAt time.Time `json:"delivered_at"`
	// Attempts a webhook receiver took (so far while retrying); 0 when
	// it took the first.
	Attempts int `json:"attempts,omitempty"`
}

// EventDTO is one logged hook event.
type EventDTO struct {
	Seq        int64           `json:"seq"`
	EventID    string          `json:"event_id"`
	Hook       string          `json:"hook"`
	Payload    json.RawMessage `json:"payload"`
	CreatedAt  time.Time       `json:"created_at"`
	Delivered  bool            `json:"delivered"`
	Deliveries []DeliveryDTO   `json:"deliveries"`
	Pending    []string        `json:"pending"` // plugins that take it and have not had it yet
}

// SettingsDTO is the editable part of config.yaml. Saved, they apply in every
// running process of the profile: the model at its next turn, approvals at
// the next ask, the rest at the next operation that reads them; the startup
// profile at the next launch.
type SettingsDTO struct {
	HookTimeoutSeconds float64 `json:"hook_timeout_seconds"` // 0 = unbounded
	RetentionDays      int     `json:"retention_days"`
	ArchiveIdleDays    int     `json:"archive_idle_days"` // 0 = off
	// The next three are left as they are by a Set that omits them (null).
	TrashDays      *int  `json:"trash_days"`      // 0 = delete at once
	TrashAutomatic *bool `json:"trash_automatic"` // automatic deletes go to the trash too
	AutoPrune      *bool `json:"auto_prune"`      // retention runs daily
	// The approvals block, read at every ask by every process of the
	// profile (no reopening): manual (a person is asked), off (every call
	// a plugin asks about runs unasked) or smart (a reviewing model
	// decides a flagged terminal command first, asking when unsure);
	// seconds a person has to answer (0: 5 minutes in the window and the
	// dashboard, no limit at a terminal). Null leaves them as they are.
	ApprovalsMode          *string  `json:"approvals_mode"`
	ApprovalTimeoutSeconds *float64 `json:"approval_timeout_seconds"`
	// Smart mode's reviewer: auxiliary.approval.model ("" the main
	// model) and approvals.smart_policy (the operator's rules for it; ""
	// none). Null leaves them as they are.
	ApprovalsReviewerModel *string  `json:"approvals_reviewer_model"`
	ApprovalsSmartPolicy   *string  `json:"approvals_smart_policy"`
	Profile                string   `json:"profile"`            // opened next time no --profile is given
	Profiles               []string `json:"profiles,omitempty"` // read-only: the profiles of this home
	// Model is config.yaml's model block; null in a Set leaves it as it is.
	Model *ModelSettingsDTO `json:"model"`
	// Tools is the agent's tools; null in a Set leaves them as they are.
	Tools *ToolsSettingsDTO `json:"tools"`
}

// ToolsSettingsDTO is the agent's tools as the Settings page edits them:
// config.yaml's toolsets (the terminal and the file tools on or off, on
// every platform without a list of its own), terminal.cwd,
// terminal.timeout and agent.max_turns. Read at each turn's start.
type ToolsSettingsDTO struct {
	Terminal       bool   `json:"terminal"`        // terminal and process
	Files          bool   `json:"files"`           // read_file, write_file, patch, search_files
	Memory         bool   `json:"memory"`          // the memory tool (MEMORY.md, USER.md)
	Cwd            string `json:"cwd"`             // where a conversation starts; "" = a terminal's own folder, home elsewhere
	TimeoutSeconds int    `json:"timeout_seconds"` // a command's time when the model names none; 0 = 180
	MaxTurns       int    `json:"max_turns"`       // rounds of tool calls in a turn; 0 = 90
	// Read-only: the platforms with a list of their own in
	// platform_toolsets (the switches do not apply there; the window and
	// the dashboard follow cli's).
	OwnLists []string `json:"own_lists"`
	// Read-only: why the terminal is not offered whatever the switch says
	// (terminal.backend other than local), "" when it is.
	Problem string `json:"problem,omitempty"`
	// Web: web_search and web_extract are in toolsets; WebBackend is
	// web.backend ("" = the provider whose key is set, Firecrawl first;
	// else firecrawl or tavily).
	Web        bool   `json:"web"`
	WebBackend string `json:"web_backend"`
	// Read-only: the provider in use, where its key is set (its Name is
	// the variable; saved with Settings.SetKey), and why the web tools are
	// not offered ("" when they are).
	WebProvider string       `json:"web_provider"`
	WebKey      KeyStatusDTO `json:"web_key"`
	WebProblem  string       `json:"web_problem,omitempty"`
	// ProcessEnds is display.background_process_notifications: what of
	// their background processes conversations are told: all (the
	// default: the ends of those started with notify_on_complete and the
	// lines watch_patterns match), result (the ends only), error (failed
	// ends only) or off. "" in a Set leaves it as it is.
	ProcessEnds string `json:"process_ends"`
	// ToolProgress is display.tool_progress: how a chat platform (and a
	// terminal chat) is shown a turn's tool calls as they start: all (the
	// default), new, verbose, log or off. "" in a Set leaves it as it is.
	ToolProgress string `json:"tool_progress"`
}

// ModelSettingsDTO is the model the profile's turns ask: config.yaml's
// model block as the Settings page edits it (a Set changes only the fields
// that differ from the file), and where its key is read from.
type ModelSettingsDTO struct {
	Provider      string `json:"provider"` // offline, openai, or one of the familiar agent's names (openrouter, custom, ...)
	BaseURL       string `json:"base_url"`
	Name          string `json:"name"`           // the model name sent (model.name, or the familiar model.default)
	APIKeyEnv     string `json:"api_key_env"`    // the variable holding the key; "" = the provider's usual one, or none
	ContextWindow int    `json:"context_window"` // tokens; 0 = the default
	// Read-only.
	Key     KeyStatusDTO `json:"key"`
	Problem string       `json:"problem,omitempty"` // why this block asks no model (a provider Atrium does not speak, ...)
}

// ModelCheckDTO is what the model said when asked a word as config.yaml
// and the keys have it now: OK, or why it did not answer.
type ModelCheckDTO struct {
	OK        bool   `json:"ok"`
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	Reply     string `json:"reply,omitempty"` // its answer, cut short
	LatencyMS int64  `json:"latency_ms"`
	Error     string `json:"error,omitempty"` // why it did not answer (never the key)
}

// KeyStatusDTO says where the model's key is read from, never the key.
type KeyStatusDTO struct {
	Name string `json:"name"` // the variable; "" when the model needs no key
	// Source is "environment" (exported where Atrium started: it goes
	// first), "env_file" (the profile's .env) or "" (not set).
	Source    string `json:"source"`
	InEnvFile bool   `json:"in_env_file"`
	EnvPath   string `json:"env_path"` // the profile's .env
}

// KeyRequest is the body of POST /api/settings/key: a key's variable and
// its value, written to the profile's .env (an empty value removes it).
type KeyRequest struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// StandingApprovalsDTO is the profile's standing approvals: the rules a
// person answered "always" (config.yaml's command_allowlist, also written by
// hand). Error says why they cannot be read (then none is honoured).
type StandingApprovalsDTO struct {
	Rules []string `json:"rules"`
	Path  string   `json:"path"`
	Error string   `json:"error,omitempty"`
}

// MemoryDTO is the agent's curated memory, as the familiar agent keeps
// it in the profile's memories/ folder: its own notes (MEMORY.md) and what
// it keeps about the user (USER.md). Every new conversation starts with
// them.
type MemoryDTO struct {
	Notes MemoryFileDTO `json:"notes"`
	User  MemoryFileDTO `json:"user"`
}

// MemoryFileDTO is one memory file: its entries and its budget.
type MemoryFileDTO struct {
	Target  string   `json:"target"` // memory (MEMORY.md) or user (USER.md)
	Path    string   `json:"path"`
	Entries []string `json:"entries"`
	Chars   int      `json:"chars"` // characters the entries take
	Limit   int      `json:"limit"` // memory.memory_char_limit or memory.user_char_limit
	// Off: memory.memory_enabled or memory.user_profile_enabled is false
	// (the file is neither shown to the model nor written).
	Off bool `json:"off"`
	// Error says why the file cannot be read.
	Error string `json:"error,omitempty"`
}

// MemoryRequest is the body of POST /api/memory/remember and
// /api/memory/forget: an entry of a target (memory or user).
type MemoryRequest struct {
	Target string `json:"target"`
	Text   string `json:"text"`
}

// SkillsDTO is the profile's skills: the folder they are kept in and each
// one found, with what could not be read.
type SkillsDTO struct {
	Dir      string     `json:"dir"`
	Skills   []SkillDTO `json:"skills"`
	Problems []string   `json:"problems"`
}

// SkillDTO is one skill: its name, description and category, its SKILL.md,
// whether it is shared from skills.external_dirs (read only), and why the
// model is not offered it in the window ("" when it is).
type SkillDTO struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Category    string `json:"category"`
	Path        string `json:"path"`
	External    bool   `json:"external"`
	NotOffered  string `json:"not_offered"`
	// Disabled: skills.disabled names it (Offer takes it off or puts it on).
	Disabled bool `json:"disabled"`
	// Needs are the variables it declares (required_environment_variables)
	// that it needs and nobody set: asked for unseen, kept in the
	// profile's .env (SetSkillKey).
	Needs []EnvNeedDTO `json:"needs"`
}

// SkillViewDTO is a skill's SKILL.md (or one of its files) as the model
// loads it with skill_view.
type SkillViewDTO struct {
	Name    string              `json:"name"`
	File    string              `json:"file"` // "" for SKILL.md
	Content string              `json:"content"`
	Linked  map[string][]string `json:"linked"` // the files beside it, by folder
	Binary  bool                `json:"binary"`
}

// SkillRequest is the body of POST /api/skills/view (a skill, and one of
// its files: "" for SKILL.md) and /api/skills/offer (offered: whether
// skills.disabled leaves it out).
type SkillRequest struct {
	Name    string `json:"name"`
	File    string `json:"file"`
	Offered bool   `json:"offered"`
}

// SkillKeyRequest is the body of POST /api/skills/env: a value for a
// variable the skill declares, kept in the profile's .env ("": removed).
type SkillKeyRequest struct {
	Skill string `json:"skill"`
	Name  string `json:"name"`
	Value string `json:"value"`
}

// RevokeApprovalRequest is the body of POST /api/approvals/standing/revoke.
type RevokeApprovalRequest struct {
	Rule string `json:"rule"`
}

func timePtr(t *db.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.Time
	return &v
}

// toSession maps a row; trashDays dates the purge of a row in the trash.
func toSession(s sessions.Session, trashDays int) SessionDTO {
	out := SessionDTO{ID: s.ID, Source: s.Source, Title: s.Title, Profile: s.Profile, Relation: s.Relation,
		StartedAt: s.StartedAt.Time, EndedAt: timePtr(s.EndedAt), EndReason: s.EndReason, LastActivityAt: s.LastActivityAt.Time,
		Archived: s.Archived, ArchivedAt: timePtr(s.ArchivedAt), ArchivedBy: s.ArchivedBy, Pinned: s.Pinned,
		MessageCount: s.MessageCount, TokenCount: s.TokenCount, Platform: s.Platform, SenderID: s.SenderID, SenderName: s.SenderName,
		Where: s.Where(), TrashedAt: timePtr(s.TrashedAt)}
	if s.ParentSessionID != nil {
		out.ParentSessionID = *s.ParentSessionID
	}
	if out.TrashedAt != nil {
		p := out.TrashedAt.Add(time.Duration(trashDays) * 24 * time.Hour)
		out.PurgeAfter = &p
	}
	return out
}

func toSessions(rows []sessions.Session, trashDays int) []SessionDTO {
	out := make([]SessionDTO, len(rows))
	for i, s := range rows {
		out[i] = toSession(s, trashDays)
	}
	return out
}

func toHit(h sessions.Hit, trashDays int) HitDTO {
	return HitDTO{Session: toSession(h.Session, trashDays), ConversationID: h.ConversationID, Where: h.Where, MessageID: h.MessageID,
		Snippet: h.Snippet, SnippetHighlights: utf16Ranges(h.Snippet, h.SnippetRanges), TitleHighlights: utf16Ranges(h.Session.Title, h.TitleRanges),
		InTitle: h.InTitle}
}

func toMessage(m sessions.Message, _ int) MessageDTO {
	out := MessageDTO{ID: m.ID, Role: m.Role, Content: m.Content, SentContent: m.SentContent, ToolName: m.ToolName, CreatedAt: m.CreatedAt.Time}
	switch {
	case strings.HasPrefix(m.Content, compaction.SummaryPrefix):
		out.Compaction, out.Marker = true, MarkerSummary
	case strings.HasPrefix(m.Content, compaction.StubPrefix):
		out.Compaction, out.Marker = true, MarkerStub
	case m.Role == "user" && strings.HasPrefix(m.Content, hooks.StopFeedbackPrefix):
		out.Marker = MarkerHookFeedback
	}
	return out
}

func toPreview(res sessions.Result) PreviewDTO {
	req := map[string]bool{}
	for _, o := range res.Outcomes {
		if o.Status != sessions.OutcomeNotFound && o.Status != sessions.OutcomeUnchanged {
			req[o.ID] = true
		}
	}
	cascaded := 0
	for _, id := range res.AffectedIDs {
		if !req[id] {
			cascaded++
		}
	}
	return PreviewDTO{AffectedIDs: nonNil(res.AffectedIDs), Count: len(res.AffectedIDs), Cascaded: cascaded, Matched: len(req)}
}

// request is a bulk request of op as the receipt path takes it.
func (in BulkRequest) request(op string) (receipts.Request, error) {
	req := receipts.Request{RequestID: in.RequestID, Op: op, SessionIDs: in.IDs}
	if in.Filter != nil {
		req.Filter = in.Filter.fields()
	}
	return req, nil
}

func toReceipt(r receipts.Receipt) ReceiptDTO {
	out := ReceiptDTO{RequestID: r.RequestID, Op: r.Op, Replayed: r.Replayed, Changed: r.Result.Changed,
		AffectedIDs: nonNil(r.Result.AffectedIDs), Outcomes: make([]OutcomeDTO, len(r.Result.Outcomes)), CreatedAt: r.CreatedAt,
		Trashed: r.Result.Trashed, PurgeAfter: r.Result.PurgeAfter, EventID: r.Result.EventID, ResultOp: r.Result.Op,
		Matched: r.Result.Matched, Undoable: r.Undoable, Undone: r.Undone}
	for i, o := range r.Result.Outcomes {
		out.Outcomes[i] = OutcomeDTO(o)
	}
	return out
}

func toTrash(t sessions.TrashSummary) TrashDTO {
	return TrashDTO{Sessions: t.Sessions, Messages: t.Messages, Bytes: t.Bytes, TrashDays: t.TrashDays, OldestTrashedAt: t.Oldest, NextPurgeAt: t.NextPurge}
}

func earlierReplies(t turns.Turn) []string {
	out := make([]string, 0, len(t.Continued))
	for _, c := range t.Continued {
		out = append(out, c.Reply)
	}
	return out
}

func toTurn(t turns.Turn) TurnDTO {
	return TurnDTO{SessionID: t.SessionID, Rotated: t.Rotated, Command: t.Command, Output: t.Output, Reply: t.Reply,
		SentText: t.SentText, ToolCalls: nonNil(t.ToolCalls), Compactions: len(t.Compactions), Earlier: earlierReplies(t), Notes: nonNil(t.Notes)}
}

func toPlugin(p plugins.Plugin, _ int) PluginDTO {
	m := p.Manifest
	return PluginDTO{Name: m.Name, Version: m.Version, Description: m.Description, Runtime: m.Runtime, Source: p.Source,
		Enabled: p.Enabled, State: p.State, Error: p.Err, Warnings: nonNil(p.Warnings), Hooks: nonNil(p.Hooks), Commands: nonNil(p.Commands),
		Registered: p.Registered, PID: p.PID, Process: p.Process, Restarts: p.Restarts, Dir: p.Dir, MissingEnv: missingEnv(m)}
}

// missingEnv is what m requires that this process does not have.
func missingEnv(m plugins.Manifest) []EnvNeedDTO {
	out := []EnvNeedDTO{}
	for _, e := range m.MissingEnv() {
		out = append(out, EnvNeedDTO(e))
	}
	return out
}

func toEvent(e hooks.LoggedEvent, _ int) EventDTO {
	out := EventDTO{Seq: e.Seq, EventID: e.EventID, Hook: e.Hook, Payload: e.Payload, CreatedAt: e.CreatedAt,
		Delivered: e.Delivered, Deliveries: make([]DeliveryDTO, len(e.Deliveries)), Pending: nonNil(e.Pending)}
	for i, d := range e.Deliveries {
		out.Deliveries[i] = DeliveryDTO(d)
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func sortEvents(evs []EventDTO) {
	slices.SortFunc(evs, func(a, b EventDTO) int { return cmp.Compare(a.Seq, b.Seq) })
}

// filter is the rule part of f.
func (f ListFilter) filter() FilterDTO {
	out := FilterDTO{Scope: f.Scope, Source: f.Source, Platform: f.Platform, Profile: f.Profile, OlderThan: f.OlderThan,
		InactiveFor: f.InactiveFor, ActiveWithin: f.ActiveWithin, Messages: f.Messages, Pinned: f.Pinned, HasChildren: f.HasChildren,
		Match: f.Match, Title: f.Title, TrashedFor: f.TrashedFor}
	if f.Archived {
		if out.Scope == "" {
			out.Scope = sessions.ScopeArchived
		} else if out.Scope != sessions.ScopeArchived {
			out.Scope = "archived=true with scope " + out.Scope // refused by the parser, naming both
		}
	}
	return out
}

// backend is f as the store's filter.
func (f ListFilter) backend() (sessions.Filter, error) {
	r, err := f.filter().rule()
	return sessions.Filter{Rule: r, Limit: f.Limit, Cursor: f.Cursor}, err
}

// fields is f by filter field name, for the one parser.
func (f FilterDTO) fields() map[string]string {
	b := func(p *bool) string {
		if p == nil {
			return ""
		}
		return strconv.FormatBool(*p)
	}
	return map[string]string{sessions.FieldScope: f.Scope, sessions.FieldSource: f.Source, sessions.FieldPlatform: f.Platform,
		sessions.FieldProfile: f.Profile, sessions.FieldOlderThan: f.OlderThan, sessions.FieldInactiveFor: f.InactiveFor,
		sessions.FieldActiveWithin: f.ActiveWithin, sessions.FieldMessages: f.Messages, sessions.FieldPinned: b(f.Pinned),
		sessions.FieldHasChildren: b(f.HasChildren), sessions.FieldMatch: f.Match, sessions.FieldTitle: f.Title,
		sessions.FieldTrashedFor: f.TrashedFor}
}

func (f FilterDTO) rule() (sessions.Rule, error) { return sessions.ParseRule(f.fields()) }

// CountDTO is a number of sessions.
type CountDTO struct {
	Count int64 `json:"count"`
}

// FacetsDTO are the values the list can be filtered by.
type FacetsDTO struct {
	Sources   []string `json:"sources"`
	Profiles  []string `json:"profiles"`
	Platforms []string `json:"platforms"`
}

// CompactionDTO is one post_compaction of a session, as its event logged it.
type CompactionDTO struct {
	EventID         string    `json:"event_id"`
	SessionID       string    `json:"session_id"`
	OldSessionID    string    `json:"old_session_id"`
	Kind            string    `json:"kind"`
	Reason          string    `json:"reason"`
	BeforeTokens    *int64    `json:"before_tokens"`
	AfterTokens     *int64    `json:"after_tokens"`
	MessagesRemoved *int64    `json:"messages_removed"`
	CreatedAt       time.Time `json:"created_at"`
}

func toCompactions(evs []hooks.LoggedEvent) []CompactionDTO {
	out := make([]CompactionDTO, 0, len(evs))
	for _, e := range evs {
		c := CompactionDTO{EventID: e.EventID, CreatedAt: e.CreatedAt}
		if err := json.Unmarshal(e.Payload, &c); err != nil {
			continue // a payload that is not a compaction's is not shown
		}
		c.EventID, c.CreatedAt = e.EventID, e.CreatedAt
		out = append(out, c)
	}
	return out
}

// InfoDTO tells the UI where it runs.
type InfoDTO struct {
	Version  string `json:"version"`
	Platform string `json:"platform"`
	Profile  string `json:"profile"`
	Home     string `json:"home"`
}

// FolderDTO is a plugin's folder and whether it was shown in a file manager.
type FolderDTO struct {
	Path   string `json:"path"`
	Opened bool   `json:"opened"`
}
