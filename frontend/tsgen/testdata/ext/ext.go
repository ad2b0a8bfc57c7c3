// Package ext is a fixture: constants another package's routes use.
package ext

// Names.
const (
	OpA    = "a"
	OpB    = "b"
	FieldQ = "q2"
)
