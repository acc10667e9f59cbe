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
const (
	gcMemoryLimit = 160 << 20
	gcPercent     = 200
)

// tuneGC sets the limit and percent above, unless the environment sets
// them, and returns what restores the previous ones.
func tuneGC() (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := debug.SetMemoryLimit(gcMemoryLimit)
	if os.Getenv("GOGC") != "" {
		return func() { debug.SetMemoryLimit(limit) }
	}
	percent := debug.SetGCPercent(gcPercent)
	return func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) }
}
