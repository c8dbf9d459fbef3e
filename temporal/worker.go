package temporal

import (
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/workflows"
)

// WorkerOptions tunes the worker; zero values take the SDK defaults.
type WorkerOptions struct {
	// StopTimeout is how long Stop waits for running activities to finish
	// before it abandons them to the server's timeouts and retries.
	StopTimeout time.Duration
	// LocalActivitiesOnly makes the worker run workflow tasks and local
	// activities only, leaving regular activities to other workers.
	LocalActivitiesOnly bool
	// OnFatalError is called once if the SDK stops the worker on an error
	// it does not retry, such as an unknown namespace. The worker then
	// takes no task, so its process must end or replace it; nil: nobody
	// hears of it but the log.
	OnFatalError func(error)
}

// NewWorker returns a worker (not started) on workflows.TaskQueue running
// the workflows and the activities of acts; the caller wires acts.Reporter.
func NewWorker(c client.Client, acts *activities.Activities, opts WorkerOptions) worker.Worker {
	w := worker.New(c, workflows.TaskQueue, worker.Options{
		WorkerStopTimeout:       opts.StopTimeout,
		LocalActivityWorkerOnly: opts.LocalActivitiesOnly,
		OnFatalError:            opts.OnFatalError,
	})
	Register(w, acts)
	return w
}

// Register registers the workflows and the activities of acts on r, for a
// worker or a test environment.
func Register(r worker.Registry, acts *activities.Activities) {
	RegisterWorkflows(r)
	r.RegisterActivity(acts)
}

// RegisterWorkflows registers every workflow under its history name, for
// Register and for a replayer.
func RegisterWorkflows(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(workflows.Delivery, workflow.RegisterOptions{Name: workflows.DeliveryWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.Webhook, workflow.RegisterOptions{Name: workflows.WebhookWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.SweepDevices, workflow.RegisterOptions{Name: workflows.SweepDevicesWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.Retention, workflow.RegisterOptions{Name: workflows.RetentionWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.Redeliver, workflow.RegisterOptions{Name: workflows.RedeliverWorkflowName})
}
