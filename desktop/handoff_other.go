//go:build desktop && !linux

package desktop

// handOff is Linux-only; elsewhere Wails' own SingleInstanceLock hands over.
func handOff(string) bool { return false }
