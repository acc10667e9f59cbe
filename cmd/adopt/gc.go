package main

import (
	"os"
	"runtime/debug"
)

// gcMemoryLimit is the soft memory limit of every command, unless
// GOMEMLIMIT sets one: the Go runtime collects more often near it instead
// of letting the heap grow to twice what is live, which keeps a
// 100,000-object plan under 300 MB. It is soft: a larger cluster's plan
// still fits, with more time spent collecting. Under the limit, unless
// GOGC is set, the heap may grow to three times what is live (gcPercent)
// before a collection: a 20,000-object plan then collects a few times
// rather than ninety, and its peak does not follow the bodies' size the
// way it did at five times (400: 4x bodies raised the 20,000-object
// plan's RSS by up to 24%, 200: by 14%).
//
// apply keeps less live (the plan's objects, a clone's pack index and the
// files it writes) and allocates it in bursts (a fetched pack's parse is
// garbage at once), so it collects at half again what is live
// (applyGCPercent): into a repository of 20,000 files its heap then peaks
// at about 30 MB rather than 55 MB (bench row 8), for a few more
// collections of a small heap.
const (
	gcMemoryLimit  = 160 << 20
	gcPercent      = 200
	applyGCPercent = 50
)

// gcTuned is a verb's Options that collects at another percent than
// gcPercent.
type gcTuned interface{ gcPercent() int }

// tuneGC sets the limit above and percent, unless the environment sets
// them, and returns what restores the previous ones.
func tuneGC(percent int) (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := debug.SetMemoryLimit(gcMemoryLimit)
	if os.Getenv("GOGC") != "" {
		return func() { debug.SetMemoryLimit(limit) }
	}
	previous := debug.SetGCPercent(percent)
	return func() { debug.SetGCPercent(previous); debug.SetMemoryLimit(limit) }
}
