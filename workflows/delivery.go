package workflows

import (
	"errors"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
)

// attemptTimeout bounds one attempt: comfortably above the HTTP timeout,
// so that the store calls around the POST fit too.
const attemptTimeout = 3 * furrow.DeliveryTimeout

// attemptsChange versions how attempts after the first run. Before it they
// ran as one activity with a retry policy, so the workflow learnt nothing
// until the chain ended; since, each runs as its own activity after a
// timer, so the workflow can tell at every step which attempt it waits
// for. Histories recorded before replay the old way.
const attemptsChange = "attempt-per-activity"

// pacingChange versions the webhook's delivery rate (max_per_second).
// Since it, every attempt first takes a slot of the rate; when the slot is
// not near, the attempt sends nothing (Throttled) and the workflow sleeps a
// durable timer until the slot, saying so in its current details, then
// makes the same attempt: waiting is never a failed attempt and never uses
// one up. Histories recorded before never wait.
const pacingChange = "webhook-rate"

// unsentChange versions how a chain that ends on an attempt never made
// (activities.ErrorTypeUnsent: its webhook or event could not be read) is
// counted. Before it (DefaultVersion), as a failed chain. At version 1, not
// at all, for the endpoint was not tried, though an attempt before the
// last may have been: a chain whose endpoint failed attempts 1 to 7 went
// unreported when its 8th could not be read. At version 2, as a failed
// chain when any of its attempts was made (chain.made), and not at all
// when none was. It is asked only for such a chain, so no other history
// carries its marker, and at every revision, unlike the changes above.
const unsentChange = "unsent-not-counted"

// Revision is the revision of the delivery workflow's code that new starts
// carry in DeliveryInput.Rev. A workflow started at revision 1 or later
// takes every change above without asking for its version: each
// workflow.GetVersion adds a marker and a TemporalChangeVersion
// search-attribute upsert to the history, four of the seventeen events of
// a delivery rejected at once. Workflows started before (Rev 0) still ask,
// so their histories replay as recorded.
const Revision = 1

// DeliveryInput is the input of the delivery workflow: ids and the event
// type only, never the secret or the body.
type DeliveryInput struct {
	WebhookID uuid.UUID
	EventID   string
	FarmID    uuid.UUID
	EventType string
	// Schedule is the delay after each failed attempt but the last; empty
	// means furrow.DefaultSchedule.
	Schedule []furrow.Duration
	// Rev is the Revision the start was made for; 0 for starts made before
	// revisions.
	Rev int `json:",omitempty"`
}

// DeliveryResult is the result of the delivery workflow. Outcome is
// furrow.OutcomeDelivered, OutcomeFailed or OutcomeSkipped. StatusCode and
// Error are those of the last attempt: the answer's status (0 when there
// was none) and, unless delivered, why it failed or was skipped.
type DeliveryResult struct {
	Outcome    string
	Attempts   int
	StatusCode int
	Error      string `json:",omitempty"`
}

// Delivery delivers one event to one webhook with up to len(schedule)+1
// attempts. The first attempt runs as a local activity, since most
// deliveries succeed at once; each later one runs as its own activity
// after the schedule's delay. A failed chain, and a success after
// failures, are reported to the webhook's workflow. The workflow's current
// details say at every step what it waits for. At the end the outcome and
// the last status are set as search attributes, and a failed chain then
// fails the workflow (ErrorTypeChainFailed).
func Delivery(ctx workflow.Context, in DeliveryInput) (DeliveryResult, error) {
	c := newChain(in)
	c.in.Paced = c.takes(ctx, pacingChange)
	res, err := c.deliver(ctx)
	out := DeliveryResult{Outcome: furrow.OutcomeDelivered, Attempts: res.Attempt, StatusCode: res.StatusCode}
	var appErr *temporal.ApplicationError
	switch {
	case err != nil && !errors.As(err, &appErr):
		// Not an answer of the endpoint (e.g. cancellation): fail the
		// workflow rather than count a chain.
		return out, err
	case err != nil:
		f := failureOf(err)
		out.Outcome, out.StatusCode, out.Error = furrow.OutcomeFailed, f.status, f.text
		if f.attempt > 0 {
			out.Attempts = f.attempt
		}
	case res.Skipped:
		out.Outcome, out.Error = furrow.OutcomeSkipped, res.SkipReason
	}
	workflow.SetCurrentDetails(ctx, c.ended(out))
	// A chain whose last attempt was never made (its webhook or event could
	// not be read) is not counted when no attempt of it was: the endpoint
	// was not tried. The version is asked only then, so other histories
	// carry no marker of it.
	unsent := err != nil && activities.Unsent(err) && c.unsentUncounted(ctx)
	if reported(in, out, res) && !unsent {
		if err := report(ctx, in, out); err != nil {
			return out, err
		}
	}
	return out, c.end(ctx, out)
}

// reported says whether the chain's end is reported to the webhook's
// workflow: a failed chain, and a delivered one after failures, unless it
// is a test delivery. A test delivery is never reported, so it never counts
// toward furrow.MaxFailedChains nor resets the count: only deliveries of
// farm events do. (No history holds a test delivery from before this rule,
// so it needs no version.)
func reported(in DeliveryInput, out DeliveryResult, res activities.DeliverResult) bool {
	if furrow.IsTestDelivery(in.EventType) {
		return false
	}
	return out.Outcome == furrow.OutcomeFailed || (out.Outcome == furrow.OutcomeDelivered && res.Failures > 0)
}

// chain is one delivery chain being run.
type chain struct {
	in       activities.DeliverInput
	schedule []time.Duration
	rev      int // DeliveryInput.Rev
	// made says whether an attempt of the chain was made: its activity
	// got past reading the webhook and event (it succeeded, or failed
	// otherwise than activities.ErrorTypeUnsent). The attempts that
	// retryInOneActivity runs as one activity are not seen one by one, so
	// there only the first attempt's tells.
	made bool
}

func newChain(in DeliveryInput) *chain {
	schedule := furrow.ScheduleOrDefault(furrow.TimeDurations(in.Schedule))
	return &chain{
		in: activities.DeliverInput{WebhookID: in.WebhookID, EventID: in.EventID, FirstAttempt: 1, Schedule: furrow.Durations(schedule),
			Test: furrow.IsTestDelivery(in.EventType)},
		schedule: schedule,
		rev:      in.Rev,
	}
}

// takes reports whether the chain runs the code of change: always from
// revision 1 on, else as the workflow's version of it says.
func (c *chain) takes(ctx workflow.Context, change string) bool {
	return c.rev >= 1 || workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1) != workflow.DefaultVersion
}

// unsentUncounted says whether the chain, which ended on an attempt never
// made, goes unreported, as its version of unsentChange says: never before
// it, always at version 1, and when no attempt of it was made since.
func (c *chain) unsentUncounted(ctx workflow.Context) bool {
	switch workflow.GetVersion(ctx, unsentChange, workflow.DefaultVersion, 2) {
	case workflow.DefaultVersion:
		return false
	case 1:
		return true
	default:
		return !c.made
	}
}

// total is the number of attempts the chain may make.
func (c *chain) total() int { return len(c.schedule) + 1 }

// deliver runs the attempts and returns the last one's result or error.
func (c *chain) deliver(ctx workflow.Context) (activities.DeliverResult, error) {
	var a *activities.Activities
	var res activities.DeliverResult
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: attemptTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:             c.attemptSummary(1),
	})
	err := c.paced(ctx, 1, &res, func(in activities.DeliverInput, res *activities.DeliverResult) error {
		return workflow.ExecuteLocalActivity(lctx, a.Deliver, in).Get(ctx, res)
	})
	res.Attempt = 1
	if err == nil || !activities.Retried(err) || len(c.schedule) == 0 {
		return res, err
	}
	if !c.takes(ctx, attemptsChange) {
		return c.retryInOneActivity(ctx, err)
	}
	for attempt := 2; attempt <= c.total(); attempt++ {
		if err := c.wait(ctx, attempt, failureOf(err)); err != nil {
			return res, err
		}
		res = activities.DeliverResult{}
		asked := workflow.Now(ctx)
		err = c.attempt(ctx, attempt, &res)
		res.Attempt = attempt
		if lost(err) {
			c.recordLost(ctx, attempt, asked)
		}
		if err == nil || !activities.Retried(err) {
			break
		}
	}
	return res, asChainFailure(err)
}

// wait sleeps the schedule's delay before attempt, saying why.
func (c *chain) wait(ctx workflow.Context, attempt int, last failure) error {
	delay := c.schedule[attempt-2]
	workflow.SetCurrentDetails(ctx, c.waiting(attempt-1, last, delay))
	t := workflow.NewTimerWithOptions(ctx, delay, workflow.TimerOptions{Summary: c.waitSummary(attempt, delay)})
	return t.Get(ctx, nil)
}

// attempt runs one attempt (2 or later) as its own activity.
func (c *chain) attempt(ctx workflow.Context, attempt int, res *activities.DeliverResult) error {
	var a *activities.Activities
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: attemptTimeout,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		Summary:             c.attemptSummary(attempt),
	})
	return c.paced(ctx, attempt, res, func(in activities.DeliverInput, res *activities.DeliverResult) error {
		return workflow.ExecuteActivity(actx, a.Deliver, in).Get(ctx, res)
	})
}

// paced makes attempt with run and, while the webhook's rate holds it back
// (a Throttled result), sleeps until its slot and makes it again with the
// slot reserved. Only a Paced chain is ever throttled.
func (c *chain) paced(ctx workflow.Context, attempt int, res *activities.DeliverResult,
	run func(activities.DeliverInput, *activities.DeliverResult) error) error {
	in := c.in
	in.FirstAttempt = attempt
	for {
		workflow.SetCurrentDetails(ctx, c.sending(attempt))
		*res = activities.DeliverResult{}
		if err := run(in, res); err != nil || !res.Throttled {
			c.made = c.made || !activities.Unsent(err)
			return err
		}
		wait := time.Duration(res.Wait)
		workflow.SetCurrentDetails(ctx, c.throttled(attempt, res.Rate, wait))
		t := workflow.NewTimerWithOptions(ctx, wait, workflow.TimerOptions{Summary: c.throttledSummary(attempt, res.Rate)})
		if err := t.Get(ctx, nil); err != nil {
			return err
		}
		in.Reserved = true
	}
}

// retryInOneActivity runs attempts 2 and later as one activity whose retry
// policy and errors follow the schedule: how workflows started before
// attemptsChange go on. Only the last of those attempts' errors comes
// back, so whether any of the others was made is not known: c.made keeps
// what the first attempt said.
func (c *chain) retryInOneActivity(ctx workflow.Context, first error) (activities.DeliverResult, error) {
	var a *activities.Activities
	var res activities.DeliverResult
	workflow.SetCurrentDetails(ctx, c.waiting(1, failureOf(first), c.schedule[0]))
	if err := workflow.Sleep(ctx, c.schedule[0]); err != nil {
		return res, err
	}
	in := c.in
	in.FirstAttempt = 2
	workflow.SetCurrentDetails(ctx, c.sendingRetried())
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: attemptTimeout,
		RetryPolicy: &temporal.RetryPolicy{
			// Errors set NextRetryDelay; these apply only to failures
			// that carry none (timeouts of the activity itself).
			InitialInterval:    c.schedule[0],
			BackoffCoefficient: 2,
			MaximumAttempts:    int32(len(c.schedule)),
		},
		Summary: c.retriedSummary(),
	})
	err := workflow.ExecuteActivity(actx, a.Deliver, in).Get(ctx, &res)
	if err != nil {
		res.Attempt = c.total()
	}
	return res, asChainFailure(err)
}

// lostAttemptRow versions what a lost attempt leaves: before it, nothing,
// so the delivery log missed the attempts whose worker stopped during
// them; since, a row (furrow.AttemptLost). It is asked only for such an
// attempt, so other histories carry no marker of it.
const lostAttemptRow = "lost-attempt-row"

// lost reports whether an attempt's activity timed out: the worker making
// it stopped, or stalled, past attemptTimeout, and wrote no row.
func lost(err error) bool {
	var timeout *temporal.TimeoutError
	return err != nil && errors.As(err, &timeout)
}

// recordLost writes the row of the lost attempt asked for at asked. A row
// that cannot be written is logged, and the chain goes on: the attempt
// counts as failed either way.
func (c *chain) recordLost(ctx workflow.Context, attempt int, asked time.Time) {
	if workflow.GetVersion(ctx, lostAttemptRow, workflow.DefaultVersion, 1) < 1 {
		return
	}
	var a *activities.Activities
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute, MaximumAttempts: 10},
		Summary:             c.lostSummary(attempt),
	})
	in := activities.LostAttemptInput{WebhookID: c.in.WebhookID, EventID: c.in.EventID, Attempt: attempt, AtMs: furrow.Millis(asked)}
	if err := workflow.ExecuteActivity(actx, a.RecordLostAttempt, in).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Error("lost attempt not recorded", "webhook_id", c.in.WebhookID, "event_id", c.in.EventID,
			"attempt", attempt, "error", err)
	}
}

// failure is what a failed attempt's error tells.
type failure struct {
	attempt int // 0 when the error does not say
	status  int // 0 when there was no answer
	text    string
}

// failureOf reads the attempt number and status code that Deliver puts in
// its errors' details (histories recorded before have the attempt only).
func failureOf(err error) failure {
	var appErr *temporal.ApplicationError
	if !errors.As(err, &appErr) {
		return failure{text: "attempt timed out"}
	}
	f := failure{text: appErr.Message()}
	if appErr.HasDetails() {
		_ = appErr.Details(&f.attempt, &f.status)
	}
	return f
}

// asChainFailure turns an activity timeout into an application error so
// that it counts as a failed chain like any other endpoint failure.
func asChainFailure(err error) error {
	if lost(err) {
		return temporal.NewApplicationError("attempt timed out", activities.ErrorTypeRetryable)
	}
	return err
}

// report tells the webhook's workflow how the chain ended.
func report(ctx workflow.Context, in DeliveryInput, out DeliveryResult) error {
	var a *activities.Activities
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
		Summary:             "report the chain to " + WebhookWorkflowID(in.WebhookID),
	})
	run := workflow.GetInfo(ctx).WorkflowExecution
	r := furrow.ChainReport{WebhookID: in.WebhookID, EventID: in.EventID, Failed: out.Outcome == furrow.OutcomeFailed,
		StatusCode: out.StatusCode, Error: out.Error, Chain: run.ID + "/" + run.RunID, EndedAtMs: furrow.Millis(workflow.Now(ctx))}
	return workflow.ExecuteActivity(ctx, a.ReportChain, r).Get(ctx, nil)
}
