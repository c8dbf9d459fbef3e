package main

import "runtime/debug"

// The garbage collector's pacing for `furrow serve`: its heap is mostly
// short-lived request garbage over a small live set, so collecting at a
// larger growth costs less CPU per request; the memory limit keeps the
// process under 100 MiB resident meanwhile, collecting more often only
// when the heap nears it. The limit counts only the runtime's own memory:
// about 30 MiB more of the program's code is resident beside it, so at
// 80 MiB a fast machine's serve reached 101 MiB.
const (
	serveGCPercent   = 400
	serveMemoryLimit = 64 << 20
)

// paceGC applies serveGCPercent and serveMemoryLimit, each unless the
// operator set GOGC or GOMEMLIMIT, whose word is final.
func paceGC(cfg Config) {
	gcPercentUnlessSet(cfg, serveGCPercent)
	if !cfg.GOMemLimitSet {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
}

// paceBenchGC gives the load generator of `furrow bench` the server's
// growth, unless GOGC is set: at Go's default its own collections, on the
// same cores, added their pauses to the latencies it measures (p99 at
// 3,333 readings/s 14 to 18 ms, against 6 ms with the bench at 400%). It
// takes no memory limit: its heap is not the service's.
func paceBenchGC(cfg Config) { gcPercentUnlessSet(cfg, serveGCPercent) }

// gcPercentUnlessSet sets the GC percent unless GOGC is set.
func gcPercentUnlessSet(cfg Config, percent int) {
	if !cfg.GOGCSet {
		debug.SetGCPercent(percent)
	}
}
