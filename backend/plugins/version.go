package plugins

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/Masterminds/semver/v3"

	"atrium/backend/apperr"
)

// HermesCompat is the version of the familiar Python plugin API (the Hermes
// agent's register(ctx) API) that Atrium implements: a manifest's
// requires_hermes is checked against it, beside requires_atrium.
const HermesCompat = "0.21.5"

// Range is a parsed version range (requires_atrium, requires_hermes, a
// requires_plugins version_range). The zero Range allows every version.
type Range struct {
	src string
	c   *semver.Constraints
}

// String is the range as written.
func (r Range) String() string { return r.src }

// compatibleRe finds PEP 440 compatible-release clauses (~=1.4 or ~=1.4.2),
// which the semver library does not know.
var compatibleRe = regexp.MustCompile(`~=\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?`)

// ParseRange parses a version range with a well-kept semver library:
// comparisons (>=, <=, >, <, =, !=), ^ and ~ ranges, x wildcards,
// hyphen ranges, || alternatives, clauses separated by spaces or commas,
// pre-releases ("<1.0.0-rc.2"), and Python's ~= and ==. An empty range
// allows every version.
func ParseRange(s string) (Range, error) {
	src := strings.TrimSpace(s)
	if src == "" {
		return Range{}, nil
	}
	expr := compatibleRe.ReplaceAllStringFunc(src, func(m string) string {
		g := compatibleRe.FindStringSubmatch(m)
		major, minor, patch := g[1], g[2], g[3]
		switch {
		case minor == "":
			return ">=" + major
		case patch == "":
			return fmt.Sprintf(">=%s.%s, <%d", major, minor, atoi(major)+1)
		default:
			return fmt.Sprintf(">=%s.%s.%s, <%s.%d", major, minor, patch, major, atoi(minor)+1)
		}
	})
	expr = strings.ReplaceAll(expr, "==", "=")
	c, err := semver.NewConstraint(expr)
	if err != nil {
		return Range{}, fmt.Errorf("invalid version range %q: %v", src, err)
	}
	return Range{src: src, c: c}, nil
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}

// gitDescribeRe matches the suffix git describe adds to a tag
// (v0.4.1-3-gabc123): such a build compares as its release.
var gitDescribeRe = regexp.MustCompile(`-\d+-g[0-9a-f]+(-dirty)?$`)

// Allows reports whether version v satisfies the range. "dev", an empty
// version and versions that do not parse (a bare commit hash) satisfy every
// range; git-describe versions (v0.4.1-3-gabc123) compare as their release
// (0.4.1); a real pre-release (1.0.0-rc.1) satisfies only ranges that name
// a pre-release, as semver says.
func (r Range) Allows(v string) bool {
	if r.c == nil {
		return true
	}
	v = gitDescribeRe.ReplaceAllString(strings.TrimSpace(v), "")
	sv, err := semver.NewVersion(v)
	if err != nil {
		return true
	}
	return r.c.Check(sv)
}

// CheckAtrium returns a rejected error when version does not satisfy the
// manifest's requires_atrium, or Atrium's level of the familiar plugin API
// does not satisfy its requires_hermes.
func (m Manifest) CheckAtrium(version string) error {
	r, err := ParseRange(m.RequiresAtrium)
	if err != nil {
		return apperr.Wrap(apperr.Invalid, err, "requires_atrium")
	}
	if !r.Allows(version) {
		return apperr.New(apperr.Rejected, "requires atrium %s, this is %s", m.RequiresAtrium, version)
	}
	h, err := ParseRange(m.RequiresHermes)
	if err != nil {
		return apperr.Wrap(apperr.Invalid, err, "requires_hermes")
	}
	if !h.Allows(HermesCompat) {
		return apperr.New(apperr.Rejected, "requires_hermes %s: Atrium implements that plugin API at level %s", m.RequiresHermes, HermesCompat)
	}
	return nil
}
