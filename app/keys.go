package app

import (
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
