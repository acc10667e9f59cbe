// Package profile runs adopt under the profilers the environment asks
// for (ADOPT_CPUPROFILE, ADOPT_MEMPROFILE), for the bench and for whoever
// tunes adopt. It does nothing else, and nothing unless asked.
package profile

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/adopt-dev/adopt/internal/atomicfile"
)

// failed is adopt's ExitError: the work failed.
const failed = 1

// Run runs fn under the profilers the environment asks for:
// ADOPT_CPUPROFILE names a file for a CPU profile of the whole run,
// ADOPT_MEMPROFILE one for the heap profile at the run's peak (go tool
// pprof reads both). Unset, it only runs fn. Each file is written whole
// (internal/atomicfile): the CPU profile when the run ends, the heap
// profile at each new peak.
func Run(fn func() int) int {
	if path := os.Getenv("ADOPT_MEMPROFILE"); path != "" {
		inner := fn
		fn = func() int {
			stop := make(chan struct{})
			done := make(chan struct{})
			go peakHeap(path, stop, done)
			defer func() { close(stop); <-done }()
			return inner()
		}
	}
	path := os.Getenv("ADOPT_CPUPROFILE")
	if path == "" {
		return fn()
	}
	code, ran := failed, false
	err := atomicfile.Write(path, 0o644, func(w io.Writer) error {
		if err := pprof.StartCPUProfile(w); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
		code, ran = fn(), true
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "adopt: ADOPT_CPUPROFILE:", err)
		if !ran {
			return failed
		}
	}
	return code
}

// peakHeap writes the heap profile to path each time the heap in use
// reaches a new peak (checked every 50 ms), so the file ends up holding
// the profile at the run's peak.
func peakHeap(path string, stop, done chan struct{}) {
	defer close(done)
	var peak uint64
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		if m.HeapInuse <= peak+peak/20 {
			continue
		}
		peak = m.HeapInuse
		if err := atomicfile.Write(path, 0o644, func(w io.Writer) error { return pprof.Lookup("heap").WriteTo(w, 0) }); err != nil {
			fmt.Fprintln(os.Stderr, "adopt: ADOPT_MEMPROFILE:", err)
			return
		}
	}
}
