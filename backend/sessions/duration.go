package sessions

import (
	"strconv"
	"strings"
	"time"

	"atrium/backend/apperr"
)

// ParseDuration reads a duration the way people write an age: a whole
// number and a unit, m (minutes), h (hours), d (days) or w (weeks): "90m",
// "12h", "30d", "2w". field names the input in the error.
func ParseDuration(field, s string) (time.Duration, error) {
	bad := func() (time.Duration, error) {
		return 0, apperr.New(apperr.Invalid, "%s: %q is not a duration (use a whole number and a unit: 90m, 12h, 30d, 2w)", field, s)
	}
	t := strings.TrimSpace(strings.ToLower(s))
	if len(t) < 2 {
		return bad()
	}
	unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour, 'w': 7 * 24 * time.Hour}[t[len(t)-1]]
	n, err := strconv.ParseInt(t[:len(t)-1], 10, 64)
	if unit == 0 || err != nil || n < 0 || n > 100*365 {
		return bad()
	}
	return time.Duration(n) * unit, nil
}
