package app

import (
	"os"
	"strings"

	"atrium/backend/apperr"
	"atrium/backend/config"
	"atrium/backend/dotenv"
)

// keepKey writes name=value to the profile's .env (an empty value removes
// it), private to the person, and gives this process the new value unless
// its own environment set name (which goes first): a plugin started again
// from here gets it. The value is never logged or returned.
func keepKey(home config.Home, name, value string) error {
	if value != "" {
		if err := dotenv.CheckValue(value); err != nil {
			return apperr.New(apperr.Invalid, "%s was not saved: %v", name, err)
		}
	}
	path := home.EnvPath()
	err := dotenv.Update(path, func(text string) (string, error) {
		if value == "" {
			out, _, err := dotenv.Unset(text, name)
			return out, err
		}
		return dotenv.Set(text, name, value)
	})
	if err != nil {
		code := apperr.Invalid // the edit refused
		if config.Unwritable(err) {
			code = apperr.Rejected // a read-only or full disk: said as it is
		}
		return apperr.Wrap(code, err, "%s is unchanged", path)
	}
	if _, exported := os.LookupEnv(name); exported && !dotenv.Loaded(name) {
		return nil // the environment's value goes first
	}
	if value == "" {
		return dotenv.Unsetenv(name)
	}
	return dotenv.Setenv(name, value)
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
