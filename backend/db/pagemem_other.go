//go:build !linux || !cgo

package db

// pageMemErr: elsewhere SQLite's page caches allocate with malloc, as
// SQLite does by default (pagemem_linux.go).
var pageMemErr error
