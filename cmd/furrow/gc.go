package main

import (
	"os"
	"runtime/debug"
)

// The garbage collector's pacing for `furrow serve`: its heap is mostly
// short-lived request garbage over a small live set, so collecting at a
// larger growth costs less CPU per request; the memory limit keeps the
// process well under 100 MB meanwhile, collecting more often only when
// the heap nears it.
const (
	serveGCPercent   = 400
	serveMemoryLimit = 80 << 20
)

// paceGC applies serveGCPercent and serveMemoryLimit, each unless the
// operator set GOGC or GOMEMLIMIT, whose word is final.
func paceGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(serveGCPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}
