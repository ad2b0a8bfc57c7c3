package app

import (
	"net/http"
	"slices"
	"strings"

	"atrium/backend/apperr"
	"atrium/backend/receipts"
	"atrium/backend/sessions"
)

// routes maps the API onto the services; each handler only decodes.
func (h *handler) routes() {
	s, p := h.a.Sessions, h.a.Plugins
	h.route("GET /api/sessions", func(r *http.Request) (any, error) {
		f, err := listFilter(r)
		if err != nil {
			return nil, err
		}
		return s.List(f)
	})
	h.route("GET /api/sessions/search", func(r *http.Request) (any, error) {
		limit, err := queryInt(r, "limit")
		if err != nil {
			return nil, err
		}
		archived, err := queryBool(r, "archived")
		if err != nil {
			return nil, err
		}
		if sc := r.URL.Query().Get("scope"); sc != "" {
			return s.Find(SearchRequest{Q: r.URL.Query().Get("q"), Scope: sc, Limit: int(limit)})
		}
		return s.Search(r.URL.Query().Get("q"), int(limit), archived)
	})
	h.route("GET /api/sessions/count", func(r *http.Request) (any, error) {
		f, err := listFilter(r)
		if err != nil {
			return nil, err
		}
		return s.Count(f)
	})
	h.route("GET /api/sessions/ids", func(r *http.Request) (any, error) {
		f, err := listFilter(r)
		if err != nil {
			return nil, err
		}
		return s.IDs(f)
	})
	h.route("GET /api/sessions/facets", func(r *http.Request) (any, error) { return s.Facets() })
	h.route("GET /api/conversations", func(r *http.Request) (any, error) {
		f, err := conversationFilter(r)
		if err != nil {
			return nil, err
		}
		return s.Conversations(f)
	})
	h.route("GET /api/conversations/count", func(r *http.Request) (any, error) {
		f, err := conversationFilter(r)
		if err != nil {
			return nil, err
		}
		return s.ConversationCount(f)
	})
	h.route("GET /api/conversations/ids", func(r *http.Request) (any, error) {
		f, err := conversationFilter(r)
		if err != nil {
			return nil, err
		}
		return s.ConversationIDs(f)
	})
	withBody(h, "POST /api/sessions", func(_ *http.Request, in CreateRequest) (any, error) { return s.Create(in) })
	h.route("GET /api/commands", func(r *http.Request) (any, error) { return s.Commands() })
	h.route("GET /api/sessions/{id}", func(r *http.Request) (any, error) { return s.Get(r.PathValue("id")) })
	h.route("GET /api/sessions/{id}/transcript", func(r *http.Request) (any, error) { return s.Transcript(r.PathValue("id")) })
	h.route("GET /api/sessions/{id}/lineage", func(r *http.Request) (any, error) { return s.Lineage(r.PathValue("id")) })
	h.route("GET /api/sessions/{id}/compactions", func(r *http.Request) (any, error) { return s.Compactions(r.PathValue("id")) })
	h.route("GET /api/sessions/{id}/subagents", func(r *http.Request) (any, error) { return s.Subagents(r.PathValue("id")) })
	h.route("GET /api/sessions/{id}/conversation", func(r *http.Request) (any, error) {
		return s.Conversation(r.PathValue("id"), r.URL.Query().Get("highlight"))
	})
	h.route("GET /api/sessions/{id}/export", func(r *http.Request) (any, error) {
		return s.Export(r.PathValue("id"), r.URL.Query().Get("format"))
	})
	withBody(h, "POST /api/sessions/{id}/rename", func(r *http.Request, in RenameRequest) (any, error) {
		return s.Rename(r.PathValue("id"), in.Title)
	})
	withBody(h, "POST /api/sessions/{id}/pin", func(r *http.Request, in PinRequest) (any, error) {
		return s.SetPinned(r.PathValue("id"), in.Pinned)
	})
	withBody(h, "POST /api/sessions/preview", func(_ *http.Request, in PreviewRequest) (any, error) { return s.PreviewBulk(in) })
	for _, op := range []string{receipts.OpDelete, receipts.OpArchive, receipts.OpUnarchive, receipts.OpRestore, receipts.OpPurge} {
		withBody(h, "POST /api/sessions/"+op, func(_ *http.Request, in BulkRequest) (any, error) { return s.Bulk(op, in) })
	}
	h.route("GET /api/approvals", func(r *http.Request) (any, error) { return s.PendingApprovals() })
	withBody(h, "POST /api/approvals/{id}", func(r *http.Request, in AnswerApprovalRequest) (any, error) {
		return s.AnswerApproval(r.PathValue("id"), in.Approve, in.Scope)
	})
	h.route("GET /api/clarify", func(r *http.Request) (any, error) { return s.PendingClarify() })
	withBody(h, "POST /api/clarify/{id}", func(r *http.Request, in AnswerClarifyRequest) (any, error) {
		return s.AnswerClarify(r.PathValue("id"), in)
	})
	h.route("GET /api/trash", func(r *http.Request) (any, error) { return s.Trash() })
	withBody(h, "POST /api/trash/empty", func(_ *http.Request, in EmptyTrashRequest) (any, error) { return s.EmptyTrash(in) })
	h.route("GET /api/requests", func(r *http.Request) (any, error) {
		limit, err := queryInt(r, "limit")
		if err != nil {
			return nil, err
		}
		return s.Requests(int(limit))
	})
	h.route("POST /api/requests/{request_id}/undo", func(r *http.Request) (any, error) { return s.Undo(r.PathValue("request_id")) })
	withBody(h, "POST /api/sessions/{id}/send", func(r *http.Request, in SendRequest) (any, error) { return s.Send(r.PathValue("id"), in.Text) })
	h.route("POST /api/sessions/{id}/stop", func(r *http.Request) (any, error) { return nil, s.StopTurn(r.PathValue("id")) })
	h.route("GET /api/plugins", func(r *http.Request) (any, error) { return p.List() })
	h.route("POST /api/plugins/reload", func(r *http.Request) (any, error) { return p.Reload() })
	h.route("POST /api/plugins/{name}/enable", func(r *http.Request) (any, error) { return p.Enable(r.PathValue("name")) })
	h.route("POST /api/plugins/{name}/disable", func(r *http.Request) (any, error) { return p.Disable(r.PathValue("name")) })
	withBody(h, "POST /api/plugins/install", func(_ *http.Request, in InstallRequest) (any, error) { return p.Install(in) })
	h.route("POST /api/plugins/{name}/open", func(r *http.Request) (any, error) { return p.Open(r.PathValue("name")) })
	withBody(h, "POST /api/plugins/{name}/env", func(r *http.Request, in PluginEnvRequest) (any, error) { return p.SetEnv(r.PathValue("name"), in) })
	h.route("GET /api/hooks/shell", func(r *http.Request) (any, error) { return p.ShellHooks() })
	withBody(h, "POST /api/hooks/shell/approve", func(_ *http.Request, in ShellHookRequest) (any, error) { return p.ApproveShellHook(in) })
	withBody(h, "POST /api/hooks/shell/revoke", func(_ *http.Request, in ShellHookRequest) (any, error) { return p.RevokeShellHook(in) })
	h.route("DELETE /api/plugins/{name}", func(r *http.Request) (any, error) {
		return map[string]string{"removed": r.PathValue("name")}, p.Remove(r.PathValue("name"))
	})
	h.route("GET /api/events", func(r *http.Request) (any, error) {
		after, err := queryInt(r, "after")
		if err != nil {
			return nil, err
		}
		limit, err := queryInt(r, "limit")
		if err != nil {
			return nil, err
		}
		return h.a.Activity.Recent(after, int(limit))
	})
	h.route("GET /api/storage", func(r *http.Request) (any, error) { return h.a.Storage.Report() })
	h.route("POST /api/storage/vacuum", func(r *http.Request) (any, error) { return h.a.Storage.Vacuum() })
	h.route("POST /api/storage/retention/confirm", func(r *http.Request) (any, error) { return h.a.Storage.ConfirmRetention() })
	h.route("GET /api/storage/import", func(r *http.Request) (any, error) { return h.a.Storage.ImportSources() })
	withBody(h, "POST /api/storage/import", func(_ *http.Request, in ImportRequest) (any, error) { return h.a.Storage.Import(in) })
	h.route("GET /api/gateway", func(r *http.Request) (any, error) { return h.a.Gateway.Status() })
	withBody(h, "POST /api/gateway/retry", func(_ *http.Request, in RetryRequest) (any, error) { return h.a.Gateway.Retry(in) })
	withBody(h, "POST /api/gateway/pairing/approve", func(_ *http.Request, in PairingAnswer) (any, error) { return h.a.Gateway.ApprovePairing(in) })
	withBody(h, "POST /api/gateway/pairing/revoke", func(_ *http.Request, in PairingAnswer) (any, error) { return h.a.Gateway.RevokePairing(in) })
	h.route("GET /api/cron", func(r *http.Request) (any, error) { return h.a.Cron.List() })
	withBody(h, "POST /api/cron", func(_ *http.Request, in CronAddRequest) (any, error) { return h.a.Cron.Add(in) })
	h.route("POST /api/cron/{name}/pause", func(r *http.Request) (any, error) { return h.a.Cron.Pause(r.PathValue("name")) })
	h.route("POST /api/cron/{name}/resume", func(r *http.Request) (any, error) { return h.a.Cron.Resume(r.PathValue("name")) })
	h.route("POST /api/cron/{name}/run", func(r *http.Request) (any, error) { return h.a.Cron.Run(r.PathValue("name")) })
	h.route("POST /api/cron/{name}/remove", func(r *http.Request) (any, error) { return h.a.Cron.Remove(r.PathValue("name")) })
	h.route("GET /api/info", func(r *http.Request) (any, error) { return h.a.Settings.Info(), nil })
	h.route("GET /api/settings", func(r *http.Request) (any, error) { return h.a.Settings.Get() })
	h.route("POST /api/ready", func(r *http.Request) (any, error) { h.a.Settings.Ready(); return map[string]bool{"ok": true}, nil })
	withBody(h, "PUT /api/settings", func(_ *http.Request, in SettingsDTO) (any, error) { return h.a.Settings.Set(in) })
	withBody(h, "POST /api/settings/key", func(_ *http.Request, in KeyRequest) (any, error) { return h.a.Settings.SetKey(in) })
	h.route("POST /api/settings/model/check", func(r *http.Request) (any, error) { return h.a.Settings.CheckModel() })
	h.route("GET /api/memory", func(r *http.Request) (any, error) { return h.a.Settings.Memory() })
	withBody(h, "POST /api/memory/remember", func(_ *http.Request, in MemoryRequest) (any, error) { return h.a.Settings.Remember(in) })
	withBody(h, "POST /api/memory/forget", func(_ *http.Request, in MemoryRequest) (any, error) { return h.a.Settings.Forget(in) })
	h.route("GET /api/skills", func(r *http.Request) (any, error) { return h.a.Settings.Skills() })
	withBody(h, "POST /api/skills/view", func(_ *http.Request, in SkillRequest) (any, error) { return h.a.Settings.Skill(in) })
	withBody(h, "POST /api/skills/offer", func(_ *http.Request, in SkillRequest) (any, error) { return h.a.Settings.OfferSkill(in) })
	withBody(h, "POST /api/skills/env", func(_ *http.Request, in SkillKeyRequest) (any, error) { return h.a.Settings.SetSkillKey(in) })
	h.route("GET /api/approvals/standing", func(r *http.Request) (any, error) { return h.a.Settings.StandingApprovals(), nil })
	withBody(h, "POST /api/approvals/standing/revoke", func(_ *http.Request, in RevokeApprovalRequest) (any, error) {
		return h.a.Settings.RevokeStandingApproval(in.Rule)
	})
}

// withBody registers a JSON endpoint whose body is decoded into T (unknown
// fields refused) before fn runs.
func withBody[T any](h *handler, pattern string, fn func(r *http.Request, in T) (any, error)) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		var in T
		if err := decode(w, r, &in); err != nil {
			h.write(w, nil, err)
			return
		}
		v, err := fn(r, in)
		h.write(w, v, err)
	})
}

// listFilter reads a ListFilter from the query string; a parameter it does
// not know is refused, so a typo never silently widens a filter.
func listFilter(r *http.Request, extra ...string) (ListFilter, error) {
	if err := knownParams(r, append(extra, "archived", "limit", "cursor")...); err != nil {
		return ListFilter{}, err
	}
	archived, err := queryBool(r, "archived")
	if err != nil {
		return ListFilter{}, err
	}
	limit, err := queryInt(r, "limit")
	if err != nil {
		return ListFilter{}, err
	}
	pinned, err := queryOptBool(r, sessions.FieldPinned)
	if err != nil {
		return ListFilter{}, err
	}
	children, err := queryOptBool(r, sessions.FieldHasChildren)
	if err != nil {
		return ListFilter{}, err
	}
	q := r.URL.Query()
	return ListFilter{Scope: q.Get(sessions.FieldScope), Archived: archived, Source: q.Get(sessions.FieldSource),
		Platform: q.Get(sessions.FieldPlatform), Profile: q.Get(sessions.FieldProfile), OlderThan: q.Get(sessions.FieldOlderThan),
		InactiveFor: q.Get(sessions.FieldInactiveFor), ActiveWithin: q.Get(sessions.FieldActiveWithin),
		Messages: q.Get(sessions.FieldMessages), Pinned: pinned, HasChildren: children, Match: q.Get(sessions.FieldMatch),
		Title: q.Get(sessions.FieldTitle), TrashedFor: q.Get(sessions.FieldTrashedFor), Limit: int(limit), Cursor: q.Get("cursor")}, nil
}

// conversationFilter reads a ConversationFilter from the query string.
func conversationFilter(r *http.Request) (ConversationFilter, error) {
	f, err := listFilter(r, "subagents")
	if err != nil {
		return ConversationFilter{}, err
	}
	sub, err := queryBool(r, "subagents")
	return ConversationFilter{Filter: f, Subagents: sub}, err
}

// knownParams refuses a query parameter that is neither a filter field nor
// one of extra.
func knownParams(r *http.Request, extra ...string) error {
	for k := range r.URL.Query() {
		if !slices.Contains(sessions.RuleFields, k) && !slices.Contains(extra, k) {
			return apperr.New(apperr.Invalid, "unknown query parameter %q (filter fields: %s)", k, strings.Join(sessions.RuleFields, ", "))
		}
	}
	return nil
}
