package app

import (
	"strings"

	"atrium/backend/config"
)

// keepKey writes name=value to the profile's .env, private to the
// person, or removes it for an empty value; this process gets the change
// unless its own environment set name (which goes first), so a plugin
// started again from here has it. The value is never logged or returned.
func keepKey(home config.Home, name, value string) error {
	if value == "" {
		_, err := home.UnsetSecret(name)
		return err
	}
	return home.SetSecret(name, value)
}

// processVariables are names that change how programs start or where they
// look for code: never written to .env from a page, whatever a plugin's
// manifest declares.
var processVariables = []string{"PATH", "HOME", "SHELL", "USER", "IFS", "ENV", "BASH_ENV", "NODE_OPTIONS", "PERL5OPT",
	"RUBYOPT", "GCONV_PATH", "TMPDIR", "ATRIUM_HOME", "HERMES_HOME"}

// processVariable reports whether name is one of those, or a loader's or a
// language runtime's (LD_*, DYLD_*, PYTHON*, GIT_*).
func processVariable(name string) bool {
	up := strings.ToUpper(name)
	for _, p := range []string{"LD_", "DYLD_", "PYTHON", "GIT_", "XDG_"} {
		if strings.HasPrefix(up, p) {
			return true
		}
	}
	for _, v := range processVariables {
		if up == v {
			return true
		}
	}
	return false
}
