package dispatch

import "time"

// Metrics receives what the dispatcher does, for the process's metrics.
type Metrics interface {
	// WorkflowsStarted counts delivery workflows started.
	WorkflowsStarted(n int)
	// FarmFailed counts a farm whose events could not be dispatched in a
	// pass; shared says the cause was the database or Temporal.
	FarmFailed(shared bool)
	// LeasesReleased counts claims given back unfinished.
	LeasesReleased(n int)
	// BackingOff reports the wait before the next claim after failures; 0
	// once a pass succeeds again.
	BackingOff(wait time.Duration)
}

type noMetrics struct{}

func (noMetrics) WorkflowsStarted(int)     {}
func (noMetrics) FarmFailed(bool)          {}
func (noMetrics) LeasesReleased(int)       {}
func (noMetrics) BackingOff(time.Duration) {}
