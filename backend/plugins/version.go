package plugins

import (
	"fmt"
	"strconv"
	"strings"

	"atrium/backend/apperr"
)

// Range is a parsed requires_atrium: every constraint must hold.
type Range []constraint

type constraint struct {
	op string // >=, <=, >, <, =, !=
	v  version
}

type version [3]int

// ParseRange parses a version range such as ">=0.3.0 <2" (constraints
// separated by spaces or commas; a bare version means "="). An empty range
// allows every version.
func ParseRange(s string) (Range, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' || r == '\t' })
	var out Range
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		op := ""
		for _, o := range []string{">=", "<=", "!=", "==", ">", "<", "="} {
			if strings.HasPrefix(f, o) {
				op, f = o, f[len(o):]
				break
			}
		}
		if f == "" && op != "" && i+1 < len(fields) {
			i++
			f = fields[i]
		}
		switch op {
		case "", "==":
			op = "="
		}
		v, ok := parseVersion(f)
		if !ok {
			return nil, fmt.Errorf("invalid version %q in range %q", f, s)
		}
		out = append(out, constraint{op, v})
	}
	return out, nil
}

// Allows reports whether the Atrium version v satisfies the range. "dev",
// an empty version and versions that do not parse (a bare commit hash)
// satisfy every range; git-describe versions (v0.4.1-3-gabc123) compare as
// their release (0.4.1).
func (r Range) Allows(v string) bool {
	pv, ok := parseVersion(v)
	if !ok {
		return true
	}
	for _, c := range r {
		d := compare(pv, c.v)
		var hold bool
		switch c.op {
		case ">=":
			hold = d >= 0
		case "<=":
			hold = d <= 0
		case ">":
			hold = d > 0
		case "<":
			hold = d < 0
		case "!=":
			hold = d != 0
		default:
			hold = d == 0
		}
		if !hold {
			return false
		}
	}
	return true
}

// CheckAtrium returns a rejected error when version does not satisfy the
// manifest's requires_atrium.
func (m Manifest) CheckAtrium(version string) error {
	r, err := ParseRange(m.RequiresAtrium)
	if err != nil {
		return apperr.Wrap(apperr.Invalid, err, "requires_atrium")
	}
	if !r.Allows(version) {
		return apperr.New(apperr.Rejected, "requires atrium %s, this is %s", m.RequiresAtrium, version)
	}
	return nil
}

func parseVersion(s string) (version, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	var v version
	parts := strings.Split(s, ".")
	if s == "" || len(parts) > 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, false
		}
		v[i] = n
	}
	return v, true
}

func compare(a, b version) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
