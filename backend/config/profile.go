package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"atrium/backend/apperr"
)

// DefaultProfile is the profile whose folder is the home itself.
const DefaultProfile = "default"

// startupFile names the file, in the home root, that holds the profile
// opened when none is asked for (chosen in the desktop's settings).
const startupFile = "profile"

// StartupProfile is the profile to open in root when none is given: the one
// saved by SetStartupProfile, else "default". A file that does not hold a
// valid name counts as absent.
func StartupProfile(root string) string {
	raw, err := os.ReadFile(filepath.Join(root, startupFile))
	if err != nil {
		return DefaultProfile
	}
	p := strings.TrimSpace(string(raw))
	if validateProfile(p) != nil {
		return DefaultProfile
	}
	return p
}

// SetStartupProfile saves the profile to open next time none is given.
func SetStartupProfile(root, profile string) error {
	if err := validateProfile(profile); err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return apperr.Wrap(apperr.Internal, err, "create home %s", root)
	}
	path := filepath.Join(root, startupFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(profile+"\n"), 0o600); err != nil {
		return apperr.Wrap(apperr.Internal, err, "save startup profile")
	}
	if err := os.Rename(tmp, path); err != nil {
		return apperr.Wrap(apperr.Internal, err, "save startup profile")
	}
	return nil
}

// Profiles lists the profiles of root: "default" and every folder under
// profiles/ with a valid name, sorted.
func Profiles(root string) []string {
	out := []string{DefaultProfile}
	entries, _ := os.ReadDir(filepath.Join(root, "profiles"))
	for _, e := range entries {
		if e.IsDir() && validateProfile(e.Name()) == nil && e.Name() != DefaultProfile {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out[1:])
	return out
}
