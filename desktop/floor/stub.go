//go:build !desktop

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "wails-floor: build with -tags desktop,production,webkit2_41 (make bench-ui does)")
	os.Exit(2)
}
