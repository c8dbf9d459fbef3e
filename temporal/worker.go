package temporal

import (
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/workflows"
)

// WorkerOptions tunes the worker; zero values take the SDK defaults.
type WorkerOptions struct {
	MaxConcurrentActivities      int
	MaxConcurrentLocalActivities int
	MaxConcurrentWorkflowTasks   int
}

// NewWorker returns a worker (not started) on workflows.TaskQueue running
// both workflows and the activities of acts. When acts.Reporter is nil the
// worker's activities report chains through c.
func NewWorker(c client.Client, acts *activities.Activities, opts WorkerOptions) worker.Worker {
	w := worker.New(c, workflows.TaskQueue, worker.Options{
		MaxConcurrentActivityExecutionSize:      opts.MaxConcurrentActivities,
		MaxConcurrentLocalActivityExecutionSize: opts.MaxConcurrentLocalActivities,
		MaxConcurrentWorkflowTaskExecutionSize:  opts.MaxConcurrentWorkflowTasks,
	})
	Register(w, withReporter(acts, c))
	return w
}

// Register registers the workflows and the activities of acts on r, for a
// worker, a test environment or a replayer.
func Register(r worker.Registry, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.Delivery, workflow.RegisterOptions{Name: workflows.DeliveryWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.Webhook, workflow.RegisterOptions{Name: workflows.WebhookWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.SweepDevices, workflow.RegisterOptions{Name: workflows.SweepDevicesWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.Retention, workflow.RegisterOptions{Name: workflows.RetentionWorkflowName})
	r.RegisterActivity(acts)
}

// withReporter returns acts, or a copy reporting through c when it has no
// Reporter; the caller's value is left as it was.
func withReporter(acts *activities.Activities, c client.Client) *activities.Activities {
	if acts.Reporter != nil {
		return acts
	}
	cp := *acts
	cp.Reporter = NewControl(c)
	return &cp
}
