package app

import "net/http"

// IDsRequest names sessions for a preview.
type IDsRequest struct {
	IDs []string `json:"ids"`
}

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
	h.route("GET /api/sessions/{id}", func(r *http.Request) (any, error) { return s.Get(r.PathValue("id")) })
	h.route("GET /api/sessions/{id}/transcript", func(r *http.Request) (any, error) { return s.Transcript(r.PathValue("id")) })
	h.route("GET /api/sessions/{id}/lineage", func(r *http.Request) (any, error) { return s.Lineage(r.PathValue("id")) })
	h.route("GET /api/sessions/{id}/compactions", func(r *http.Request) (any, error) { return s.Compactions(r.PathValue("id")) })
	h.mux.HandleFunc("POST /api/sessions/preview", func(w http.ResponseWriter, r *http.Request) {
		var in IDsRequest
		if err := decode(w, r, &in); err != nil {
			h.write(w, nil, err)
			return
		}
		v, err := s.Preview(in.IDs)
		h.write(w, v, err)
	})
	h.bulk("POST /api/sessions/delete", s.Delete)
	h.bulk("POST /api/sessions/archive", s.Archive)
	h.bulk("POST /api/sessions/unarchive", s.Unarchive)
	h.bulk("POST /api/sessions/restore", s.Restore)
	h.bulk("POST /api/sessions/purge", s.Purge)
	h.route("GET /api/trash", func(r *http.Request) (any, error) { return s.Trash() })
	h.mux.HandleFunc("POST /api/trash/empty", func(w http.ResponseWriter, r *http.Request) {
		var in EmptyTrashRequest
		if err := decode(w, r, &in); err != nil {
			h.write(w, nil, err)
			return
		}
		v, err := s.EmptyTrash(in)
		h.write(w, v, err)
	})
	h.mux.HandleFunc("POST /api/sessions/{id}/send", func(w http.ResponseWriter, r *http.Request) {
		var in SendRequest
		if err := decode(w, r, &in); err != nil {
			h.write(w, nil, err)
			return
		}
		v, err := s.Send(r.PathValue("id"), in.Text)
		h.write(w, v, err)
	})
	h.route("GET /api/plugins", func(r *http.Request) (any, error) { return p.List() })
	h.route("POST /api/plugins/reload", func(r *http.Request) (any, error) { return p.Reload() })
	h.route("POST /api/plugins/{name}/enable", func(r *http.Request) (any, error) { return p.Enable(r.PathValue("name")) })
	h.route("POST /api/plugins/{name}/disable", func(r *http.Request) (any, error) { return p.Disable(r.PathValue("name")) })
	h.mux.HandleFunc("POST /api/plugins/install", func(w http.ResponseWriter, r *http.Request) {
		var in InstallRequest
		if err := decode(w, r, &in); err != nil {
			h.write(w, nil, err)
			return
		}
		v, err := p.Install(in)
		h.write(w, v, err)
	})
	h.route("POST /api/plugins/{name}/open", func(r *http.Request) (any, error) { return p.Open(r.PathValue("name")) })
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
	h.route("GET /api/info", func(r *http.Request) (any, error) { return h.a.Settings.Info(), nil })
	h.route("GET /api/settings", func(r *http.Request) (any, error) { return h.a.Settings.Get() })
	h.route("POST /api/ready", func(r *http.Request) (any, error) { h.a.Settings.Ready(); return map[string]bool{"ok": true}, nil })
	h.mux.HandleFunc("PUT /api/settings", func(w http.ResponseWriter, r *http.Request) {
		var in SettingsDTO
		if err := decode(w, r, &in); err != nil {
			h.write(w, nil, err)
			return
		}
		v, err := h.a.Settings.Set(in)
		h.write(w, v, err)
	})
}

// bulk registers a receipt-backed operation.
func (h *handler) bulk(pattern string, op func(requestID string, ids []string) (ReceiptDTO, error)) {
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		var in BulkRequest
		if err := decode(w, r, &in); err != nil {
			h.write(w, nil, err)
			return
		}
		v, err := op(in.RequestID, in.IDs)
		h.write(w, v, err)
	})
}

// listFilter reads a ListFilter from the query string.
func listFilter(r *http.Request) (ListFilter, error) {
	archived, err := queryBool(r, "archived")
	if err != nil {
		return ListFilter{}, err
	}
	limit, err := queryInt(r, "limit")
	if err != nil {
		return ListFilter{}, err
	}
	q := r.URL.Query()
	return ListFilter{Scope: q.Get("scope"), Archived: archived, Source: q.Get("source"), Profile: q.Get("profile"), Limit: int(limit), Cursor: q.Get("cursor")}, nil
}
