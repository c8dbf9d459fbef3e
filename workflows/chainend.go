package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
)

// outcomeChange versions how a chain ends. Before it, every chain ended its
// workflow Completed, with the outcome in the result only; since, the
// outcome and the last status are set as search attributes, and a failed
// chain fails its workflow, so that Temporal's lists, its Failures view and
// its batch reset by query find the failed deliveries. Histories recorded
// before, and workflows already past their chain's end, end the old way.
const outcomeChange = "outcome-search-attributes"

// ErrorTypeChainFailed is the type of the application error that fails the
// delivery workflow of a failed chain. Its message says the last attempt's
// answer (e.g. "attempt 8 of 8 answered 503") and its details hold the
// DeliveryResult.
const ErrorTypeChainFailed = "ChainFailed"

// end sets the search attributes of how the chain ended and returns the
// error that fails the workflow of a failed chain, nil for the others.
func (c *chain) end(ctx workflow.Context, out DeliveryResult) error {
	if !c.takes(ctx, outcomeChange) {
		return nil
	}
	err := workflow.UpsertTypedSearchAttributes(ctx,
		SearchOutcome.ValueSet(out.Outcome), SearchLastStatus.ValueSet(int64(out.StatusCode)))
	if err != nil || out.Outcome != furrow.OutcomeFailed {
		return err
	}
	return temporal.NewApplicationErrorWithOptions(c.failedMessage(out), ErrorTypeChainFailed, temporal.ApplicationErrorOptions{
		// A workflow retry would only repeat the chain; a reset is the
		// operator's way to deliver again.
		NonRetryable: true,
		// A receiver's failure is an outcome that furrow_delivery_chains_total
		// counts, not a fault of the worker: the SDK neither logs it as an
		// error nor counts it in temporal_workflow_failed.
		Category: temporal.ApplicationErrorCategoryBenign,
		Details:  []any{out},
	})
}
