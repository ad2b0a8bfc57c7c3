package config

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"atrium/backend/limits"
)

// A command provider is the familiar agent's way to plug in a speech
// engine of one's own: stt.providers.<name> transcribes, tts.providers
// .<name> speaks. Both blocks read, check and resolve the keys they share
// (type, command, timeout, format, env_passthrough) with the one set of
// rules below.

// commandName is what a command provider may be named (it goes into a
// temporary folder's name).
var commandName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// commandCommon is what every command provider says, whatever it does.
type commandCommon struct {
	Type, Command           string
	Timeout, TimeoutSeconds any
	Format, OutputFormat    string
	EnvPassthrough          []string
}

// commandRules are a block's rules for its command providers.
type commandRules struct {
	block   string            // stt or tts
	builtIn func(string) bool // the names a command provider may not take
	does    string            // what a command does, for the error of a missing one
	formats []string          // what a command may write
	// def is the format when none is set, formatsSaid the formats as the
	// error of another one says them.
	def, formatsSaid string
	timeout          time.Duration // without output this long, a command is killed
}

// commandNamed is the entry of providers named name, in any case, with
// its name in lower case.
func commandNamed[C any](providers map[string]C, name string) (string, C, bool) {
	want := strings.ToLower(strings.TrimSpace(name))
	for k, c := range providers {
		if strings.ToLower(strings.TrimSpace(k)) == want {
			return want, c, true
		}
	}
	var none C
	return "", none, false
}

// checkCommands checks a block's command providers, in name order: each
// one's name, type, command, timeout and format, then what own says of
// it (nil: nothing more), then its env_passthrough.
func checkCommands[C any](r commandRules, providers map[string]C, common func(C) commandCommon, own func(key string, c C) error) error {
	for _, name := range slices.Sorted(maps.Keys(providers)) {
		c, key := providers[name], r.block+".providers."+name
		cc := common(c)
		switch {
		case !commandName.MatchString(name):
			return fmt.Errorf("%s.providers: %q is no name for a provider: letters, digits, '_', '-' or '.'", r.block, name)
		case r.builtIn(name):
			return fmt.Errorf("%s: %s is a built-in provider's name; a command provider needs a name of its own", key, strings.ToLower(name))
		case !isCommandType(cc.Type):
			return fmt.Errorf("%s.type must be command, not %q", key, cc.Type)
		case strings.TrimSpace(cc.Command) == "":
			return fmt.Errorf("%s.command is missing: %s", key, r.does)
		}
		if _, _, bad := commandTimeout(cc.Timeout, cc.TimeoutSeconds); bad != "" {
			return fmt.Errorf("%s.timeout %s", key, bad)
		}
		if f := commandFormat(cc.Format, cc.OutputFormat, r.def); !slices.Contains(r.formats, f) {
			return fmt.Errorf("%s.format must be %s, not %q", key, r.formatsSaid, f)
		}
		if own != nil {
			if err := own(key, c); err != nil {
				return err
			}
		}
		if err := checkPassthrough(key, cc.EnvPassthrough); err != nil {
			return err
		}
	}
	return nil
}

// checkChosen refuses a provider (name, as the block's provider key says
// it: raw) that is neither one the block knows nor declared under its
// providers.
func checkChosen[C any](r commandRules, raw, name string, known func(string) bool, builtIns []string, providers map[string]C) error {
	if known(name) {
		return nil
	}
	if _, _, ok := commandNamed(providers, name); !ok {
		return fmt.Errorf("%s.provider %q is neither a built-in provider (%s) nor a command provider declared under %s.providers.%s",
			r.block, raw, strings.Join(builtIns, ", "), r.block, name)
	}
	return nil
}

// resolve is how the command provider key runs: its command, its idle
// timeout and its format (the rules' defaults where it sets none, or sets
// one they do not know); false when it cannot run (a built-in's name, no
// command, another type).
func (r commandRules) resolve(key string, cc commandCommon) (command string, idle time.Duration, format string, ok bool) {
	if r.builtIn(key) || strings.TrimSpace(cc.Command) == "" || !isCommandType(cc.Type) {
		return "", 0, "", false
	}
	idle = r.timeout
	if secs, ok, _ := commandTimeout(cc.Timeout, cc.TimeoutSeconds); ok {
		idle = time.Duration(secs * float64(time.Second))
	}
	if format = commandFormat(cc.Format, cc.OutputFormat, r.def); !slices.Contains(r.formats, format) {
		format = r.def
	}
	return strings.TrimSpace(cc.Command), idle, format, true
}

func isCommandType(t string) bool {
	t = strings.ToLower(strings.TrimSpace(t))
	return t == "" || t == "command"
}

// commandTimeout is a command provider's timeout (else timeout_seconds)
// in seconds; ok is false when neither is set, bad says what is wrong with
// the one set.
func commandTimeout(timeout, timeoutSeconds any) (secs float64, ok bool, bad string) {
	raw := timeout
	if raw == nil {
		raw = timeoutSeconds
	}
	if raw == nil {
		return 0, false, ""
	}
	secs, ok = limits.YAMLNumber(raw)
	if s, isText := raw.(string); isText {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return 0, false, fmt.Sprintf("%q is not a number of seconds", s)
		}
		secs, ok = f, true
	}
	if !ok {
		return 0, false, fmt.Sprintf("%v is not a number of seconds", raw)
	}
	if secs <= 0 || secs > 86400 || math.IsNaN(secs) {
		return 0, false, fmt.Sprintf("must be more than 0 and at most 86400 seconds, not %v", secs)
	}
	return secs, true, ""
}

// commandFormat is a command provider's format (else output_format) in
// lower case, without a dot (def when neither is set).
func commandFormat(format, outputFormat, def string) string {
	f := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(cmp.Or(strings.TrimSpace(format), strings.TrimSpace(outputFormat)))), ".")
	return cmp.Or(f, def)
}

// checkPassthrough checks a command provider's env_passthrough.
func checkPassthrough(key string, names []string) error {
	for _, v := range names {
		if !envName.MatchString(strings.TrimSpace(v)) {
			return fmt.Errorf("%s.env_passthrough: %q is not the name of an environment variable", key, clipSecret(v))
		}
	}
	return nil
}
