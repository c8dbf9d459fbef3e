package dispatch

import (
	"context"
	"errors"
	"sync"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/furrowhq/furrow/workflows"
)

// starter records starts and acts like Temporal on duplicate IDs. block,
// if set, is waited on (or the call's end) before each start, or, when
// blockFarm is set too, before each start of that farm's events.
type starter struct {
	mu          sync.Mutex
	started     map[string]client.StartWorkflowOptions
	inputs      map[string]workflows.DeliveryInput
	farms       []uuid.UUID // of each start made, in order
	err         error
	block       chan struct{}
	blockFarm   uuid.UUID
	noDeadlines int
	calls       int // starts asked for, refused ones too
	// inFlight counts the calls waiting on block, and maxInFlight the most
	// at once.
	inFlight, maxInFlight int
}

func (s *starter) ExecuteWorkflow(ctx context.Context, o client.StartWorkflowOptions, wf any, args ...any) (client.WorkflowRun, error) {
	if s.block != nil && (s.blockFarm == uuid.Nil || args[0].(workflows.DeliveryInput).FarmID == s.blockFarm) {
		s.mu.Lock()
		s.inFlight++
		s.maxInFlight = max(s.maxInFlight, s.inFlight)
		s.mu.Unlock()
		select {
		case <-s.block:
		case <-ctx.Done():
			return nil, serviceerror.NewCanceled(ctx.Err().Error())
		}
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if _, ok := ctx.Deadline(); !ok {
		s.noDeadlines++
	}
	if s.err != nil {
		return nil, s.err
	}
	if _, ok := s.started[o.ID]; ok {
		return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("already started", "", "")
	}
	if wf != workflows.DeliveryWorkflowName || len(args) != 1 {
		return nil, errors.New("unexpected workflow")
	}
	s.started[o.ID] = o
	s.farms = append(s.farms, args[0].(workflows.DeliveryInput).FarmID)
	s.inputs[o.ID] = args[0].(workflows.DeliveryInput)
	return nil, nil
}

func (s *starter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.started)
}

// hasStarted reports whether the workflow id was started.
func (s *starter) hasStarted(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.started[id]
	return ok
}

// waiting returns the calls waiting on block now, and the most at once.
func (s *starter) waiting() (now, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight, s.maxInFlight
}
