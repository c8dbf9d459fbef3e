package dispatch

import "time"

// Metrics receives how the dispatcher fares, for the process's metrics
// (cmd/furrow wires *telemetry.Metrics).
type Metrics interface {
	// WorkflowStarted counts a delivery workflow started; a start refused
	// because the workflow already exists is not counted.
	WorkflowStarted()
	// DispatchFarmFailed counts a farm whose events could not be dispatched
	// in a pass; shared says the cause was common to every farm (the
	// database or Temporal).
	DispatchFarmFailed(shared bool)
	// DispatchLeasesReleased counts claims given back unfinished.
	DispatchLeasesReleased(n int)
	// DispatchHeld counts events held unstarted for a paced webhook (see
	// startPacer).
	DispatchHeld(n int)
	// DispatchBackingOff reports the wait before the next claim after
	// failures; 0 once a pass succeeds again.
	DispatchBackingOff(wait time.Duration)
	// DeliveryAttempt counts an attempt row by its result, a furrow
	// Outcome word: the dispatcher writes one, skipped, for an event
	// stored while its webhook is disabled (took is 0).
	DeliveryAttempt(result string, took time.Duration)
}

type noMetrics struct{}

func (noMetrics) WorkflowStarted()                      {}
func (noMetrics) DispatchFarmFailed(bool)               {}
func (noMetrics) DispatchLeasesReleased(int)            {}
func (noMetrics) DispatchHeld(int)                      {}
func (noMetrics) DispatchBackingOff(time.Duration)      {}
func (noMetrics) DeliveryAttempt(string, time.Duration) {}
