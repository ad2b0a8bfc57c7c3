package sessions

import (
	"context"
	"database/sql/driver"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/samber/lo"

	"atrium/backend/apperr"
	"atrium/backend/db"
	"atrium/backend/limits"
)

// Recursive expansions, seeded from a JSON array (one bound parameter, so no
// seed set ever meets SQLite's bound-parameter limit).
const (
	// deleteCTE: what goes when a session is deleted: its whole compression
	// chain (both ways) and, for every member, its delegate children.
	deleteCTE = `WITH RECURSIVE c(id) AS (
		SELECT s.id FROM sessions s WHERE s.id IN (SELECT value FROM json_each(?))
		UNION
		SELECT s.id FROM sessions s JOIN c ON s.parent_session_id = c.id WHERE s.relation IN ('delegate', 'compression')
		UNION
		SELECT s.parent_session_id FROM sessions s JOIN c ON s.id = c.id WHERE s.relation = 'compression' AND s.parent_session_id IS NOT NULL
	) SELECT id FROM c`
	// lineageCTE: the compression chain alone.
	lineageCTE = `WITH RECURSIVE c(id) AS (
		SELECT s.id FROM sessions s WHERE s.id IN (SELECT value FROM json_each(?))
		UNION
		SELECT s.id FROM sessions s JOIN c ON s.parent_session_id = c.id WHERE s.relation = 'compression'
		UNION
		SELECT s.parent_session_id FROM sessions s JOIN c ON s.id = c.id WHERE s.relation = 'compression' AND s.parent_session_id IS NOT NULL
	) SELECT id FROM c`
	// draggedByCTE: every session whose deletion would take one of the seeds
	// with it (the inverse of deleteCTE).
	draggedByCTE = `WITH RECURSIVE c(id) AS (
		SELECT s.id FROM sessions s WHERE s.id IN (SELECT value FROM json_each(?))
		UNION
		SELECT s.id FROM sessions s JOIN c ON s.parent_session_id = c.id WHERE s.relation = 'compression'
		UNION
		SELECT s.parent_session_id FROM sessions s JOIN c ON s.id = c.id WHERE s.relation IN ('delegate', 'compression') AND s.parent_session_id IS NOT NULL
	) SELECT id FROM c`
)

// expand runs a closure CTE over seeds through read (a transaction's
// prepared statements, or the read pool's), scanned by hand: on the delete
// path gorm's reflection scan cost more than the query.
func expand(ctx context.Context, read queryFunc, seeds []string, cte string) ([]string, error) {
	if len(seeds) == 0 {
		return nil, nil
	}
	raw, _ := json.Marshal(seeds) // seeds may come from rows, not only validated input
	return queryColumn[string](ctx, read, cte, string(raw))
}

// Scopes: where sessions live, for lists and search.
const (
	ScopeActive   = "active"   // not archived, not in the trash (the default)
	ScopeArchived = "archived" // archived, not in the trash
	ScopeTrash    = "trash"    // in the trash
	ScopeAll      = "all"      // active and archived (never the trash)
)

// Scopes lists the scopes.
var Scopes = []string{ScopeActive, ScopeArchived, ScopeTrash, ScopeAll}

// scopeWhere is the condition of a scope on sessions aliased a.
func scopeWhere(scope, a string) string {
	switch scope {
	case ScopeArchived:
		return a + `.archived = 1 AND ` + a + `.trashed_at IS NULL`
	case ScopeTrash:
		return a + `.trashed_at IS NOT NULL`
	case ScopeAll:
		return a + `.trashed_at IS NULL`
	}
	return a + `.archived = 0 AND ` + a + `.trashed_at IS NULL`
}

// Filter narrows List, Count and IDs: a rule (ParseRule; the zero Rule is
// every active session) and a page.
type Filter struct {
	Rule   Rule
	Limit  int    // default 50, at most 1000
	Cursor string // from a previous Page.Next
}

// orderColumn is what a scope's list is ordered by: newest activity, or in
// the trash newest deletion.
func orderColumn(scope string) string {
	if scope == ScopeTrash {
		return "trashed_at"
	}
	return "last_activity_at"
}

// Page is one page of List.
type Page struct {
	Sessions []Session `json:"sessions"`
	Next     string    `json:"next,omitempty"` // opaque cursor; empty on the last page
}

type cursor struct {
	At int64  `json:"a"`
	ID string `json:"i"`
}

// List returns sessions, newest activity first, keyset-paged so page N costs
// what page 1 costs.
func (s *Service) List(ctx context.Context, f Filter) (Page, error) {
	limit := f.Limit
	switch {
	case limit <= 0:
		limit = 50
	case limit > 1000:
		limit = 1000
	}
	where, args, err := s.ruleWhere(ctx, s.db.Query, f.Rule, s.db.Now(), false)
	if err != nil {
		return Page{}, fmt.Errorf("list sessions: %w", err)
	}
	sc := f.Rule.Scope
	col := orderColumn(sc)
	if f.Cursor != "" {
		c, err := decodeCursor(f.Cursor)
		if err != nil {
			return Page{}, err
		}
		where += ` AND (s.` + col + ` < ? OR (s.` + col + ` = ? AND s.id < ?))`
		args = append(args, c.At, c.At, c.ID)
	}
	q := `SELECT ` + sessionColsS + ` FROM sessions s WHERE ` + where + ` ORDER BY s.` + col + ` DESC, s.id DESC` + db.Limit(limit+1)
	rows, err := eachSession(ctx, s.db.Each, q, args, limit+1, nil)
	if err != nil {
		return Page{}, fmt.Errorf("list sessions: %w", err)
	}
	p := Page{Sessions: rows}
	if len(rows) > limit {
		p.Sessions = rows[:limit]
		last := p.Sessions[limit-1]
		at := last.LastActivityAt.Time
		if sc == ScopeTrash && last.TrashedAt != nil {
			at = last.TrashedAt.Time
		}
		raw, _ := json.Marshal(cursor{At: db.Ms(at), ID: last.ID})
		p.Next = base64.RawURLEncoding.EncodeToString(raw)
	}
	if p.Sessions == nil {
		p.Sessions = []Session{}
	}
	return p, nil
}

// Count is how many sessions f matches (its cursor and limit ignored). A
// whole scope is read from the kept counters.
func (s *Service) Count(ctx context.Context, f Filter) (int64, error) {
	if f.Rule.Empty() {
		return s.scopeCount(ctx, f.Rule.Scope)
	}
	where, args, err := s.ruleWhere(ctx, s.db.Query, f.Rule, s.db.Now(), false)
	if err != nil {
		return 0, fmt.Errorf("count sessions: %w", err)
	}
	var n int64
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM sessions s WHERE `+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count sessions: %w", err)
	}
	return n, nil
}

// scopeCount is how many sessions a scope holds, from session_counts (kept
// by triggers).
func (s *Service) scopeCount(ctx context.Context, scope string) (int64, error) {
	q := `SELECT n FROM session_counts WHERE scope = ?`
	var args []any
	switch scope {
	case ScopeArchived, ScopeTrash:
		args = []any{scope}
	case ScopeAll:
		q, args = `SELECT sum(n) FROM session_counts WHERE scope IN ('active', 'archived')`, nil
	default:
		args = []any{ScopeActive}
	}
	v, err := s.db.Row(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("count sessions: %w", err)
	}
	return vInt(v[0]), nil
}

// IDs returns the id of every session f matches, in List's order (its cursor
// and limit ignored): "select all" in a filter.
func (s *Service) IDs(ctx context.Context, f Filter) ([]string, error) {
	where, args, err := s.ruleWhere(ctx, s.db.Query, f.Rule, s.db.Now(), false)
	if err != nil {
		return nil, fmt.Errorf("list session ids: %w", err)
	}
	col := orderColumn(f.Rule.Scope)
	ids, err := queryIDs(ctx, s.db.Query, `SELECT s.id FROM sessions s WHERE `+where+` ORDER BY s.`+col+` DESC, s.id DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("list session ids: %w", err)
	}
	return ids, nil
}

// Facets are the distinct values the list can be filtered by.
type Facets struct {
	Sources   []string `json:"sources"`
	Profiles  []string `json:"profiles"`
	Platforms []string `json:"platforms"` // chat platforms in use ("" for local sessions is left out)
}

// Facets returns the sources and profiles that sessions use, sorted.
func (s *Service) Facets(ctx context.Context) (Facets, error) {
	out := Facets{Sources: []string{}, Profiles: []string{}, Platforms: []string{}}
	by := map[string]*[]string{"source": &out.Sources, "profile": &out.Profiles, "platform": &out.Platforms}
	// session_facets holds the values in use, kept by triggers.
	err := s.db.Each(ctx, `SELECT facet, value FROM session_facets WHERE n > 0 ORDER BY facet, value`, nil, func(v []driver.Value) error {
		if dst := by[vStr(v[0])]; dst != nil {
			*dst = append(*dst, vStr(v[1]))
		}
		return nil
	})
	if err != nil {
		return Facets{}, fmt.Errorf("session facets: %w", err)
	}
	return out, nil
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	if err != nil || c.ID == "" {
		return cursor{}, apperr.New(apperr.Invalid, "invalid page cursor %s", limits.Echo(s))
	}
	return c, nil
}

// Hit is one search result: a conversation, where it lives, and the
// newest message of it that matched (or its title), with the ranges that
// match in the snippet and in the title.
type Hit struct {
	Session        Session `json:"session"`         // the part the match is in
	ConversationID string  `json:"conversation_id"` // the newest part of its conversation: what to open
	Where          string  `json:"where"`           // active, archived or trash
	MessageID      int64   `json:"message_id,omitempty"`
	Snippet        string  `json:"snippet"`
	SnippetRanges  []Range `json:"snippet_ranges"` // byte ranges of Snippet
	TitleRanges    []Range `json:"title_ranges"`   // byte ranges of Session.Title
	InTitle        bool    `json:"in_title"`
}

// SearchOptions narrow Search.
type SearchOptions struct {
	Limit    int    // conversations, default 20
	Scope    string // a scope; "" is ScopeAll unless Archived says otherwise
	Archived *bool  // legacy: true is ScopeArchived, false ScopeActive
}

// Search bounds: what a person types is short; a query past these is refused
// before SQLite sees it, and a search that runs past SearchTimeout is
// interrupted.
const (
	MaxSearchBytes = 1024
	MaxSearchWords = 32
	SearchTimeout  = 5 * time.Second
)

// ftsQuery turns what a person typed into a safe FTS5 query: every word is
// quoted (so FTS syntax in the input is literal), all words must match, and
// the last one also matches as a prefix.
func ftsQuery(q string) (string, error) {
	if len(q) > MaxSearchBytes {
		return "", apperr.New(apperr.Invalid, "search query is %d bytes, over the %d-byte limit", len(q), MaxSearchBytes)
	}
	words := strings.FieldsFunc(q, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '\'' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127)
	})
	var parts []string
	for _, w := range words {
		w = strings.Trim(w, "-'")
		if w == "" {
			continue
		}
		parts = append(parts, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
	}
	if len(parts) == 0 {
		return "", apperr.New(apperr.Invalid, "search query %s has no words", limits.Echo(q))
	}
	if len(parts) > MaxSearchWords {
		return "", apperr.New(apperr.Invalid, "search query has %d words, over the limit of %d", len(parts), MaxSearchWords)
	}
	parts[len(parts)-1] += "*"
	return strings.Join(parts, " "), nil
}

// Search finds conversations whose title or messages contain every word of
// q: the newest matching message of each first, title matches after. A
// compression chain is one conversation (one hit, the match in whichever
// part it is).
func (s *Service) Search(ctx context.Context, q string, o SearchOptions) ([]Hit, error) {
	match, err := ftsQuery(q)
	if err != nil {
		return nil, err
	}
	timeout := s.searchTimeout
	if timeout <= 0 {
		timeout = SearchTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// One snapshot for the search's reads: its hits, their texts and rows
	// agree with each other (a delete between them cannot drop a row from
	// under a hit), and the WAL's read lock is taken once.
	var hits []Hit
	err = s.db.View(ctx, func(each db.EachFunc) error {
		var err error
		hits, err = s.search(ctx, each, q, match, o)
		return err
	})
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, apperr.Wrap(apperr.Rejected, ctx.Err(), "search stopped after %s (the limit): use more or longer words", timeout)
	}
	return hits, err
}

func (s *Service) search(ctx context.Context, each eachFunc, q, match string, o SearchOptions) ([]Hit, error) {
	limit := o.Limit
	if limit <= 0 || limit > 500 {
		limit = 20
	}
	sc := o.Scope
	if sc == "" {
		sc = ScopeAll
		if o.Archived != nil {
			sc = ScopeActive
			if *o.Archived {
				sc = ScopeArchived
			}
		}
	}
	if err := validateOneOf("search scope", sc, Scopes); err != nil {
		return nil, err
	}
	scope := ` AND ` + scopeWhere(sc, "s")
	// The newest matching message of each conversation: walk the matches
	// newest first and stop at the limit-th distinct conversation, instead
	// of joining every match (a common word matches thousands). Messages not
	// indexed yet are matched first (tailMatches) and merged in by id.
	queued, err := s.tailMatches(ctx, each, match)
	if err != nil {
		return nil, fmt.Errorf("search messages: %w", err)
	}
	type mrow struct {
		MID       int64
		SessionPK int64
		Key       string
	}
	var mrows []mrow
	found := map[string]bool{}
	seen := map[int64]bool{}
	take := func(r mrow) bool {
		if found[r.Key] || seen[r.MID] {
			return false
		}
		seen[r.MID] = true
		found[r.Key] = true
		mrows = append(mrows, r)
		return len(mrows) == limit
	}
	mrowOf := func(v []driver.Value) mrow { return mrow{MID: vInt(v[0]), SessionPK: vInt(v[1]), Key: vStr(v[2])} }
	// The walk reads no text: it passes over the matches of conversations
	// it has already (long tool outputs, often), and only the hits' texts
	// are read, after it.
	const mcols = `SELECT m.id, s.pk, COALESCE(s.chain_root, s.id)`
	var tailRows []mrow
	if len(queued) > 0 {
		err := each(ctx, mcols+` FROM messages m JOIN sessions s ON s.id = m.session_id
			WHERE m.id IN (SELECT value FROM json_each(?))`+scope+` ORDER BY m.id DESC`, []any{int64sJSON(queued)}, func(v []driver.Value) error {
			tailRows = append(tailRows, mrowOf(v))
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("search messages: %w", err)
		}
	}
	mq := mcols + ` FROM messages_fts f JOIN messages m ON m.id = f.rowid JOIN sessions s ON s.id = m.session_id
		WHERE messages_fts MATCH ?` + notGone + scope + ` ORDER BY f.rowid DESC`
	if sc == ScopeTrash {
		// The trash is small: start from its sessions' messages rather than
		// walk every match in the index.
		mq = mcols + ` FROM sessions s INDEXED BY sessions_trash CROSS JOIN messages m ON m.session_id = s.id
			WHERE s.trashed_at IS NOT NULL AND m.id IN (SELECT rowid FROM messages_fts f WHERE messages_fts MATCH ?` + notGone + `) ORDER BY m.id DESC`
	}
	done := false
	err = each(ctx, mq, []any{match}, func(v []driver.Value) error {
		r := mrowOf(v)
		for !done && len(tailRows) > 0 && tailRows[0].MID > r.MID {
			done = take(tailRows[0])
			tailRows = tailRows[1:]
		}
		if !done {
			done = take(r)
		}
		if done {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return nil, fmt.Errorf("search messages: %w", err)
	}
	for !done && len(tailRows) > 0 {
		done = take(tailRows[0])
		tailRows = tailRows[1:]
	}
	texts := map[int64]string{}
	if len(mrows) > 0 {
		ids := lo.Map(mrows, func(m mrow, _ int) int64 { return m.MID })
		err := each(ctx, `SELECT id, content FROM messages WHERE id IN (SELECT value FROM json_each(?))`, []any{int64sJSON(ids)},
			func(v []driver.Value) error {
				texts[vInt(v[0])] = vStr(v[1])
				return nil
			})
		if err != nil {
			return nil, fmt.Errorf("search messages: %w", err)
		}
	}
	type trow struct {
		PK  int64
		Key string
	}
	var titled []trow
	err = each(ctx, `SELECT s.pk, COALESCE(s.chain_root, s.id) FROM sessions_fts f JOIN sessions s ON s.pk = f.rowid
		WHERE sessions_fts MATCH ?`+scope+` ORDER BY s.last_activity_at DESC`+db.Limit(limit), []any{match}, func(v []driver.Value) error {
		titled = append(titled, trow{PK: vInt(v[0]), Key: vStr(v[1])})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("search titles: %w", err)
	}
	hits := []Hit{}
	byKey := map[string]int{}
	m := newMatcher(q) // the query's words, read once for every snippet and title
	for _, r := range mrows {
		byKey[r.Key] = len(hits)
		snip, ranges := m.snippet(texts[r.MID], 120)
		hits = append(hits, Hit{Session: Session{PK: r.SessionPK}, ConversationID: r.Key, MessageID: r.MID, Snippet: snip, SnippetRanges: ranges})
	}
	for _, t := range titled {
		if i, ok := byKey[t.Key]; ok {
			hits[i].InTitle = true
			continue
		}
		if len(hits) >= limit {
			break
		}
		byKey[t.Key] = len(hits)
		hits = append(hits, Hit{Session: Session{PK: t.PK}, ConversationID: t.Key, InTitle: true})
	}
	if len(hits) == 0 {
		return hits, nil
	}
	// The hits' rows, by rowid, each with whether a compression child
	// continues it: only a hit in a chain (continued, or continuing one)
	// needs its conversation's tip looked up.
	pks := lo.Map(hits, func(h Hit, _ int) int64 { return h.Session.PK })
	rowOf := map[int64]Session{}
	var chained []string
	_, err = eachSession(ctx, each, `SELECT `+sessionCols+`, EXISTS (SELECT 1 FROM sessions c
		WHERE c.parent_session_id = sessions.id AND c.relation = 'compression')
		FROM sessions WHERE pk IN (SELECT value FROM json_each(?))`, []any{int64sJSON(pks)}, len(pks), func(r Session, more []driver.Value) {
		rowOf[r.PK] = r
		if vInt(more[0]) != 0 || r.ChainRoot != nil {
			chained = append(chained, lo.FromPtrOr(r.ChainRoot, r.ID))
		}
	})
	if err != nil {
		return nil, err
	}
	tipOf, err := chainTips(ctx, each, lo.Uniq(chained))
	if err != nil {
		return nil, err
	}
	for i := range hits {
		h := &hits[i]
		h.Session = rowOf[h.Session.PK]
		h.Where = h.Session.Where()
		if tip, ok := tipOf[h.ConversationID]; ok {
			h.ConversationID = tip
		}
		h.TitleRanges = m.highlights(h.Session.Title)
		if h.Snippet == "" {
			h.Snippet, h.SnippetRanges = h.Session.Title, h.TitleRanges
		}
		if h.SnippetRanges == nil {
			h.SnippetRanges = []Range{}
		}
	}
	return hits, nil
}

// errEnough stops a read that has what it needs.
var errEnough = errors.New("enough rows")

// chainTips maps each compression chain's root (keys) to its tip: the link
// no compression child continues.
func chainTips(ctx context.Context, each eachFunc, keys []string) (map[string]string, error) {
	tipOf := map[string]string{}
	if len(keys) == 0 {
		return tipOf, nil
	}
	err := each(ctx, `SELECT COALESCE(x.chain_root, x.id), x.id FROM sessions x
		WHERE (x.id IN (SELECT value FROM json_each(?)) OR x.chain_root IN (SELECT value FROM json_each(?)))
		AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.parent_session_id = x.id AND c.relation = 'compression')`,
		[]any{jsonArray(keys), jsonArray(keys)}, func(v []driver.Value) error {
			tipOf[vStr(v[0])] = vStr(v[1])
			return nil
		})
	return tipOf, err
}
