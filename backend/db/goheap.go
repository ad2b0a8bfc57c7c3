package db

import "sync"

// heapFloorBytes is the Go heap a process that opens a store keeps as a
// floor under its collection goal.
//
// Go collects when the heap has grown by GOGC % (100) of what the last
// collection left live, and at the least every 4 MB. A process that works a
// store (a command, the gateway, the window's backend) keeps little live
// between calls, about 2 MB, while every read copies its rows out of SQLite
// into new strings: the collector ran every 2 MB of reads, about every 10 ms
// of them, and timed in batches the reads were slow in streaks all along
// (GOGC=400 made them steady; GOGC=off made every one slow, all of its
// memory new and faulted in). A 16 MB block that holds no pointers and
// is never written moves the goal to about 2 × (live + 16 MB), so a
// collection comes ~9 times less often; the block itself is never scanned
// and, never touched, takes no memory beyond its address range. What it
// costs is the garbage allowed to pile up between collections: up to 16 MB
// more resident at the peak. Measured with storebench, 3–7 alternating runs
// per size (docs/benchmarks.md, issue #15, change 41): a list page 94 → 70
// µs, a transcript 53 → 39 µs, a search 289 → 228 µs; 8 MB gave most of it,
// 32 MB nothing more.
//
// Go has no setting for a minimum goal (golang/go#23044 was closed in favour
// of the memory limit, which caps the heap and never spares a collection);
// GOGC itself scales with the live heap, which would let the window's larger
// one grow several times over.
const heapFloorBytes = 16 << 20

var (
	heapFloorOnce sync.Once
	heapFloor     []byte // kept reachable: a package variable is a root
)

// raiseHeapFloor sets the floor once per process, at its first Open.
func raiseHeapFloor() {
	heapFloorOnce.Do(func() { heapFloor = make([]byte, heapFloorBytes) })
}
