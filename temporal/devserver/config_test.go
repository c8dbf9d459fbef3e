package devserver

import (
	"testing"

	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
)

// TestQueueCheckpointsKeepTrackedTasksUnderTheCriticalCount reads the
// settings as the server does and checks the sum of queueCheckpoint: at 600
// delivery workflows a second, with three tasks each in the transfer and the
// visibility queue, the tasks tracked between two checkpoints stay
// within the count past which the server splits its queue slices.
func TestQueueCheckpointsKeepTrackedTasksUnderTheCriticalCount(t *testing.T) {
	const workflowsPerSecond, tasksPerWorkflow = 600, 3
	dc := dynamicconfig.NewCollection(dynamicConfig(), log.NewNoopLogger())
	critical := dynamicconfig.QueuePendingTaskCriticalCount.Get(dc)()
	for name, setting := range map[string]dynamicconfig.GlobalDurationSetting{
		"transfer":   dynamicconfig.TransferProcessorUpdateAckInterval,
		"visibility": dynamicconfig.VisibilityProcessorUpdateAckInterval,
	} {
		every := setting.Get(dc)()
		if tracked := int(every.Seconds() * workflowsPerSecond * tasksPerWorkflow); tracked > critical {
			t.Errorf("%s queue checkpoints every %s: %d tasks tracked between two, over the critical count of %d",
				name, every, tracked, critical)
		}
	}
}
