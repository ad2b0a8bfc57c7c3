package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"atrium/backend/apperr"
	"atrium/backend/db"
)

// The filter language: one set of fields, read by one parser (ParseRule),
// used by the command line (as --flags with '-' for '_'), the API (query
// parameters and JSON bodies) and, through the API, the UI.
const (
	FieldScope        = "scope"         // active (default), archived, trash, all
	FieldSource       = "source"        // comma list of sources
	FieldPlatform     = "platform"      // comma list of platforms ("" is local)
	FieldProfile      = "profile"       // owning profile
	FieldOlderThan    = "older_than"    // started more than D ago
	FieldInactiveFor  = "inactive_for"  // last activity more than D ago
	FieldActiveWithin = "active_within" // last activity within D
	FieldMessages     = "messages"      // N, =N, <N, <=N, >N, >=N, N..M
	FieldPinned       = "pinned"        // true or false
	FieldHasChildren  = "has_children"  // true or false: delegate or branch children
	FieldMatch        = "match"         // title or messages contain every word
	FieldTitle        = "title"         // title contains every word
	FieldTrashedFor   = "trashed_for"   // (scope trash) in the trash more than D
)

// RuleFields lists the fields in the order help texts show them.
var RuleFields = []string{FieldScope, FieldSource, FieldPlatform, FieldProfile, FieldOlderThan, FieldInactiveFor,
	FieldActiveWithin, FieldMessages, FieldPinned, FieldHasChildren, FieldMatch, FieldTitle, FieldTrashedFor}

// Count is a comparison of a message count.
type Count struct {
	Op   string // =, <, <=, >, >=, ..
	N, M int64  // M only for ".."
}

// Rule is a parsed filter. The zero Rule matches every active session.
type Rule struct {
	Scope        string
	Sources      []string
	Platforms    []string
	Profile      string
	OlderThan    time.Duration // 0: no condition (as the others)
	InactiveFor  time.Duration
	ActiveWithin time.Duration
	TrashedFor   time.Duration
	Messages     *Count
	Pinned       *bool
	HasChildren  *bool
	Match        string // an FTS query made by ftsQuery
	Title        string
	raw          map[string]string
}

// Empty is true when the rule has no condition besides its scope.
func (r Rule) Empty() bool {
	return len(r.Sources) == 0 && len(r.Platforms) == 0 && r.Profile == "" && r.OlderThan == 0 && r.InactiveFor == 0 &&
		r.ActiveWithin == 0 && r.TrashedFor == 0 && r.Messages == nil && r.Pinned == nil && r.HasChildren == nil &&
		r.Match == "" && r.Title == ""
}

// Fields are the rule's fields as given (normalised), for echoing back.
func (r Rule) Fields() map[string]string {
	out := make(map[string]string, len(r.raw))
	for k, v := range r.raw {
		out[k] = v
	}
	return out
}

// Canonical is the rule as one stable string: its fields sorted, so two
// requests that say the same thing have the same fingerprint.
func (r Rule) Canonical() string {
	keys := make([]string, 0, len(r.raw))
	for k := range r.raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, r.raw[k])
	}
	return b.String()
}

var (
	countPattern = regexp.MustCompile(`^(=|<=|>=|<|>)?\s*(\d{1,9})$`)
	rangePattern = regexp.MustCompile(`^(\d{1,9})\s*\.\.\s*(\d{1,9})$`)
	namePattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$`)
)

// ParseRule reads a filter from field/value pairs. Empty values are
// ignored; an unknown field or a bad value is an invalid error that names the
// field.
func ParseRule(fields map[string]string) (Rule, error) {
	r := Rule{Scope: ScopeActive, raw: map[string]string{}}
	bad := func(field, format string, a ...any) (Rule, error) {
		return Rule{}, apperr.New(apperr.Invalid, "filter field %s: "+format, append([]any{field}, a...)...)
	}
	for k, v := range fields {
		if !slices.Contains(RuleFields, k) {
			return Rule{}, apperr.New(apperr.Invalid, "unknown filter field %q (known: %s)", k, strings.Join(RuleFields, ", "))
		}
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		var err error
		switch k {
		case FieldScope:
			if !slices.Contains(Scopes, v) {
				return bad(k, "%q is not a scope (one of %s)", v, strings.Join(Scopes, ", "))
			}
			r.Scope = v
		case FieldSource:
			for _, src := range splitList(v) {
				if !slices.Contains(Sources, src) {
					return bad(k, "%q is not a source (one of %s)", src, strings.Join(Sources, ", "))
				}
				r.Sources = append(r.Sources, src)
			}
			v = strings.Join(r.Sources, ",")
		case FieldPlatform:
			for _, p := range splitList(v) {
				if p != "local" && !namePattern.MatchString(p) {
					return bad(k, "%q is not a platform name", p)
				}
				if p == "local" {
					p = ""
				}
				r.Platforms = append(r.Platforms, p)
			}
		case FieldProfile:
			if err := ValidateProfileName(v); err != nil {
				return bad(k, "%q is not a profile name", v)
			}
			r.Profile = v
		case FieldOlderThan:
			r.OlderThan, err = ParseDuration("filter field "+k, v)
		case FieldInactiveFor:
			r.InactiveFor, err = ParseDuration("filter field "+k, v)
		case FieldActiveWithin:
			r.ActiveWithin, err = ParseDuration("filter field "+k, v)
		case FieldTrashedFor:
			r.TrashedFor, err = ParseDuration("filter field "+k, v)
		case FieldMessages:
			c, ok := parseCount(v)
			if !ok {
				return bad(k, "%q is not a count comparison (use N, =N, <N, <=N, >N, >=N or N..M)", v)
			}
			r.Messages = &c
		case FieldPinned, FieldHasChildren:
			b, perr := strconv.ParseBool(v)
			if perr != nil {
				return bad(k, "%q is not true or false", v)
			}
			if k == FieldPinned {
				r.Pinned = &b
			} else {
				r.HasChildren = &b
			}
			v = strconv.FormatBool(b)
		case FieldMatch, FieldTitle:
			q, qerr := ftsQuery(v)
			if qerr != nil {
				return bad(k, "%q has no words to look for", v)
			}
			if k == FieldMatch {
				r.Match = q
			} else {
				r.Title = q
			}
		}
		if err != nil {
			return Rule{}, err
		}
		r.raw[k] = v
	}
	if r.TrashedFor > 0 && r.Scope != ScopeTrash {
		return bad(FieldTrashedFor, "only applies to scope trash")
	}
	if r.InactiveFor > 0 && r.ActiveWithin > 0 && r.ActiveWithin <= r.InactiveFor {
		return bad(FieldActiveWithin, "%s with inactive_for %s matches nothing", r.raw[FieldActiveWithin], r.raw[FieldInactiveFor])
	}
	return r, nil
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func parseCount(v string) (Count, bool) {
	if m := rangePattern.FindStringSubmatch(v); m != nil {
		a, _ := strconv.ParseInt(m[1], 10, 64)
		b, _ := strconv.ParseInt(m[2], 10, 64)
		return Count{Op: "..", N: a, M: b}, a <= b
	}
	m := countPattern.FindStringSubmatch(v)
	if m == nil {
		return Count{}, false
	}
	n, _ := strconv.ParseInt(m[2], 10, 64)
	op := m[1]
	if op == "" {
		op = "="
	}
	return Count{Op: op, N: n}, true
}

// where is a rule as SQL over sessions aliased s. With chain set it speaks
// of conversations: only the newest part of a compression chain is a
// candidate, and age, message counts, children and text matches are those of
// the whole chain, so a rule never splits a conversation. queued are the
// messages not indexed yet that match r.Match (Service.ruleWhere).
func (r Rule) where(now time.Time, chain bool, queued []int64) (string, []any) {
	conds := []string{scopeWhere(r.Scope, "s")}
	var args []any
	add := func(c string, a ...any) { conds = append(conds, c); args = append(args, a...) }
	ms := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	chainIDs := `SELECT x.id FROM sessions x WHERE x.id = s.chain_root OR x.chain_root = s.chain_root`
	if chain {
		add(`NOT EXISTS (SELECT 1 FROM sessions nx WHERE nx.parent_session_id = s.id AND nx.relation = 'compression')`)
	}
	if len(r.Sources) > 0 {
		add(`s.source IN (SELECT value FROM json_each(?))`, jsonArray(r.Sources))
	}
	if len(r.Platforms) > 0 {
		add(`s.platform IN (SELECT value FROM json_each(?))`, jsonStrings(r.Platforms))
	}
	if r.Profile != "" {
		add(`s.profile = ?`, r.Profile)
	}
	if r.OlderThan > 0 {
		if chain {
			add(`COALESCE((SELECT cr.started_at FROM sessions cr WHERE cr.id = s.chain_root), s.started_at) < ?`, ms(r.OlderThan))
		} else {
			add(`s.started_at < ?`, ms(r.OlderThan))
		}
	}
	if r.InactiveFor > 0 {
		add(`s.last_activity_at < ?`, ms(r.InactiveFor))
	}
	if r.ActiveWithin > 0 {
		add(`s.last_activity_at >= ?`, ms(r.ActiveWithin))
	}
	if r.TrashedFor > 0 {
		add(`s.trashed_at <= ?`, ms(r.TrashedFor))
	}
	if r.Messages != nil {
		n := `s.message_count`
		if chain {
			n = `(CASE WHEN s.chain_root IS NULL THEN s.message_count ELSE (SELECT sum(x.message_count) FROM sessions x
				WHERE x.id = s.chain_root OR x.chain_root = s.chain_root) END)`
		}
		if r.Messages.Op == ".." {
			add(n+` BETWEEN ? AND ?`, r.Messages.N, r.Messages.M)
		} else {
			add(n+` `+r.Messages.Op+` ?`, r.Messages.N)
		}
	}
	if r.Pinned != nil {
		add(`s.pinned = ?`, *r.Pinned)
	}
	if r.HasChildren != nil {
		parents := `c.parent_session_id = s.id`
		if chain {
			parents = `(c.parent_session_id = s.id OR (s.chain_root IS NOT NULL AND c.parent_session_id IN (` + chainIDs + `)))`
		}
		has := `EXISTS (SELECT 1 FROM sessions c WHERE ` + parents + ` AND c.relation IN ('delegate', 'branch') AND c.trashed_at IS NULL)`
		if !*r.HasChildren {
			has = `NOT ` + has
		}
		add(has)
	}
	if r.Title != "" {
		add(`s.pk IN (SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH ?)`, r.Title)
	}
	if r.Match != "" {
		hit := `SELECT m.session_id FROM messages m WHERE m.id IN (SELECT rowid FROM messages_fts f WHERE messages_fts MATCH ?` + notGone + `)`
		hitArgs := []any{r.Match}
		if len(queued) > 0 {
			hit += ` OR m.id IN (SELECT value FROM json_each(?))`
			hitArgs = append(hitArgs, int64sJSON(queued))
		}
		hit += ` UNION SELECT t.id FROM sessions t WHERE t.pk IN (SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH ?)`
		hitArgs = append(hitArgs, r.Match)
		if chain {
			add(`COALESCE(s.chain_root, s.id) IN (SELECT COALESCE(h.chain_root, h.id) FROM sessions h WHERE h.id IN (`+hit+`))`, hitArgs...)
		} else {
			add(`s.id IN (`+hit+`)`, hitArgs...)
		}
	}
	return strings.Join(conds, " AND "), args
}

// jsonStrings is a JSON array of arbitrary strings (jsonArray is for ids).
func jsonStrings(vs []string) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		raw, _ := json.Marshal(v)
		parts[i] = string(raw)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Match returns the sessions a rule picks for a bulk operation, newest
// first: conversations (the newest part of each compression chain; the
// operation takes the rest of the chain along), never a lone middle link.
func (s *Service) Match(ctx context.Context, rule Rule) ([]string, error) {
	return s.match(ctx, s.db.Query, s.db.Now(), rule)
}

// MatchTx is Match inside the caller's transaction.
func (s *Service) MatchTx(ctx context.Context, tx *db.Tx, rule Rule) ([]string, error) {
	return s.match(ctx, tx.Query, tx.Now, rule)
}

func (s *Service) match(ctx context.Context, read queryFunc, now time.Time, rule Rule) ([]string, error) {
	where, args, err := s.ruleWhere(ctx, read, rule, now, true)
	if err != nil {
		return nil, fmt.Errorf("match rule: %w", err)
	}
	col := orderColumn(rule.Scope)
	ids, err := queryIDs(ctx, read, `SELECT s.id FROM sessions s WHERE `+where+` ORDER BY s.`+col+` DESC, s.id DESC`, args...)
	if err != nil {
		return nil, fmt.Errorf("match rule: %w", err)
	}
	return ids, nil
}
