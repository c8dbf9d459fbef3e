package workflows

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
)

// maxSignalsPerRun bounds the history of one run of the webhook workflow;
// each signal adds at most an activity to it.
const maxSignalsPerRun = 500

// lifecycleChange versions how a change of the enabled flag is written.
// Before it, SetWebhookState wrote it like any change of the counter; since,
// TransitionWebhook writes it with its transition number and stores the
// webhook.disabled or webhook.enabled event in the same transaction.
// Histories recorded before replay the old way; a workflow that ran then
// takes the new way at its next change (lifecycleEvents).
const lifecycleChange = "lifecycle-events"

// chainOrder versions how chain reports are counted. Before it, every
// report counted; since, a report of a chain already counted (its activity
// retried after the signal went) and a failure that ended before the last
// re-enable are not. Histories recorded before replay the old way; a run
// that began before takes the new way after its next continue-as-new.
const chainOrder = "chain-order"

// goneCheck versions how the workflow learns that its webhook was deleted.
// Before it, only a write of a changed state found the webhook gone, so a
// deleted webhook's workflow ran for ever; since, it also re-reads its
// webhook on SignalDeleted and every goneCheckEvery, and ends when the
// webhook is gone. The signal is handled whatever the version (no history
// recorded before it holds one); the timer is versioned: a run that began
// before takes it at its next continue-as-new.
const goneCheck = "gone-check"

// lateSuccess versions how a delivered chain's report is counted when the
// chain ended before the latest counted failure. Before it, every
// delivered chain restarted the count, so a success reported after a
// failure that ended later wiped that failure out. At version 1 such a
// report left the count as it was, failures that ended before the success
// included. At version 2 the count becomes the failures counted since the
// last restart that ended after the success, when the run knows when each
// of them ended (else as at version 1). It is asked only for such a
// report: histories recorded before replay their own way.
const lateSuccess = "late-success"

// lateSuccessRecount is lateSuccess's version that counts again.
const lateSuccessRecount = 2

// reenableKept versions what a re-enable of a webhook already enabled at 0
// failures leaves: before it, nothing (nothing was written), so a failure
// that ended before it and was reported after counted; since, the run
// remembers when it was re-enabled. It is asked only for such a re-enable.
const reenableKept = "reenable-kept"

// goneCheckEvery is how often the workflow re-reads its webhook, so that a
// delete whose SignalDeleted never came (Temporal was down) still ends it
// within a day, at the cost of one read a day per webhook.
const goneCheckEvery = 24 * time.Hour

// rememberedChains bounds the chains whose reports a run remembers, to
// know a report sent twice: retries of one report come within minutes.
const rememberedChains = 256

// WebhookInput is the input of the per-webhook workflow. State is nil on a
// first start (the workflow then reads it from the store) and carried over
// by continue-as-new, as are Counted, the chains whose reports were counted
// last, oldest first, LastFailedAtMs, when the latest counted failed chain
// ended (0: none, or its report did not say), and FailedEndsMs, when the
// failed chains the count holds ended, in the order they were counted.
// FailedMs and DeliveredMs are when the failed and the delivered chains
// reported since the last re-enable ended, ascending, the newest
// rememberedEnds of each (chainStreaks).
type WebhookInput struct {
	WebhookID      uuid.UUID
	State          *WebhookState
	Counted        []string `json:",omitempty"`
	LastFailedAtMs int64    `json:",omitempty"`
	FailedEndsMs   []int64  `json:",omitempty"`
	FailedMs       []int64  `json:",omitempty"`
	DeliveredMs    []int64  `json:",omitempty"`
}

// Webhook is the per-webhook workflow, the single writer of the webhook's
// failure counter and enabled flag. It counts consecutive failed chains in
// the order they ended (chainStreaks), disables the webhook at
// furrow.MaxFailedChains, restarts the count after a successful chain, and
// re-enables and resets on SignalReenable. It ends
// when the webhook is deleted: when a write finds it gone, on
// SignalDeleted, or at the latest goneCheckEvery after the delete. It
// answers QueryState and keeps its current details saying its state, for
// the Temporal UI.
func Webhook(ctx workflow.Context, in WebhookInput) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, MaximumInterval: time.Minute},
	})
	state, err := initialState(ctx, in)
	if err != nil || state.Gone {
		return err
	}
	w := &webhookRun{state: state, counted: in.Counted, lastFailedAtMs: in.LastFailedAtMs, ends: in.FailedEndsMs,
		failed: in.FailedMs, delivered: in.DeliveredMs}
	err = workflow.SetQueryHandlerWithOptions(ctx, QueryState, func() (WebhookState, error) { return w.state, nil },
		workflow.QueryHandlerOptions{Description: "The webhook's enabled flag, consecutive failed chains and last change."})
	if err != nil {
		return err
	}
	workflow.SetCurrentDetails(ctx, w.state.details())
	chain := workflow.GetSignalChannel(ctx, SignalChain)
	reenable := workflow.GetSignalChannel(ctx, SignalReenable)
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(chain, func(c workflow.ReceiveChannel, _ bool) {
		var r furrow.ChainReport
		c.Receive(ctx, &r)
		w.failedAtMs = 0
		w.next, w.nextEnds = w.state, w.ends
		if workflow.GetVersion(ctx, chainOrder, workflow.DefaultVersion, 1) >= 1 {
			if why := w.notCounted(r); why != "" {
				workflow.GetLogger(ctx).Info("chain report not counted", "webhook_id", w.state.WebhookID, "chain", r.Chain, "why", why)
				return
			}
			w.count(r.Chain)
			if w.byEnds(ctx) {
				w.remember(r, workflow.Now(ctx))
				return
			}
			if r.Failed {
				w.failedAtMs = r.EndedAtMs
				w.lastFailedAtMs = max(w.lastFailedAtMs, r.EndedAtMs)
			} else if r.EndedAtMs != 0 && r.EndedAtMs < w.lastFailedAtMs {
				if v := workflow.GetVersion(ctx, lateSuccess, workflow.DefaultVersion, lateSuccessRecount); v >= 1 {
					w.afterLateSuccess(ctx, r, v)
					return
				}
			}
		}
		w.next = w.afterChain(r, workflow.Now(ctx))
	})
	sel.AddReceive(reenable, func(c workflow.ReceiveChannel, _ bool) {
		// Any payload decodes into an any; only the API's says who it is.
		var by any
		c.Receive(ctx, &by)
		w.failedAtMs = 0
		w.next, w.nextEnds = w.afterReenable(reenabledBy(by), workflow.Now(ctx)), nil
		w.forget()
	})
	sel.AddReceive(workflow.GetSignalChannel(ctx, SignalDeleted), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, nil)
		w.check = true
	})
	if workflow.GetVersion(ctx, goneCheck, workflow.DefaultVersion, 1) >= 1 {
		var arm func()
		arm = func() {
			sel.AddFuture(workflow.NewTimer(ctx, goneCheckEvery), func(workflow.Future) {
				w.check = true
				arm()
			})
		}
		arm()
	}
	for handled := 1; ; handled++ {
		sel.Select(ctx)
		if err := w.apply(ctx); err != nil || w.state.Gone {
			return err
		}
		if handled >= maxSignalsPerRun || workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
			break
		}
	}
	// Drain what arrived meanwhile so no signal is lost across runs.
	for sel.HasPending() {
		sel.Select(ctx)
		if err := w.apply(ctx); err != nil || w.state.Gone {
			return err
		}
	}
	return workflow.NewContinueAsNewError(ctx, Webhook, WebhookInput{WebhookID: in.WebhookID, State: &w.state, Counted: w.counted,
		LastFailedAtMs: w.lastFailedAtMs, FailedEndsMs: w.ends, FailedMs: w.failed, DeliveredMs: w.delivered})
}

// webhookRun is the state of one run: state as written, next as wanted,
// and change, what the lifecycle event of next says when next changes the
// enabled flag.
type webhookRun struct {
	state   WebhookState
	next    WebhookState
	change  furrow.WebhookTransition
	counted []string // the chains counted last, oldest first
	// failedAtMs is when the failed chain that makes next ended (0: next
	// is not made by one, or its report does not say): the write is then
	// dropped if a delivery began after it, which the report of that
	// delivery's chain, read at its first attempt, may not have said.
	failedAtMs int64
	// lastFailedAtMs is when the latest counted failed chain ended (0:
	// none, or no report said): a delivered chain that ended before it
	// does not restart the count (see lateSuccess).
	lastFailedAtMs int64
	// ends are when the failed chains state's count holds ended, in the
	// order they were counted (the time they were counted for a report
	// that did not say); nextEnds are next's. They may hold fewer than the
	// count: failures counted before a run kept them.
	ends, nextEnds []int64
	// check asks apply to read the webhook, to end if it is gone, rather
	// than write next (which the signal or timer that set it left as is).
	check bool
	// oldChanges counts the changes of the enabled flag this run found
	// written the old way (see lifecycleEvents), oldReports the reports it
	// found counted the old way (see byEnds).
	oldChanges, oldReports int
	// failed and delivered are when the failed and the delivered chains
	// reported since the last re-enable ended, ascending (chainStreaks);
	// recount, when set, is the report after which apply counts them
	// again.
	failed, delivered []int64
	recount           *furrow.ChainReport
}

// apply does what the signal or timer just handled asks: counts the
// chains again and writes next, or reads the webhook to learn whether it
// was deleted.
func (w *webhookRun) apply(ctx workflow.Context) error {
	if w.recount != nil {
		if err := w.countAgain(ctx); err != nil {
			return err
		}
	}
	if !w.check {
		return w.write(ctx)
	}
	w.check = false
	var a *activities.Activities
	var got activities.LoadWebhookStateResult
	if err := workflow.ExecuteActivity(ctx, a.LoadWebhookState, w.state.WebhookID).Get(ctx, &got); err != nil {
		return err
	}
	if got.Gone {
		w.state.Gone = true
		workflow.GetLogger(ctx).Info("webhook deleted; workflow ends", "webhook_id", w.state.WebhookID)
		workflow.SetCurrentDetails(ctx, w.state.details())
	}
	return nil
}

// notCounted says why the report r is not counted, or "" when it is: its
// chain was counted already, or it is a failure that ended before the
// webhook was last re-enabled, whose count restarted after it.
func (w *webhookRun) notCounted(r furrow.ChainReport) string {
	switch {
	case r.Chain != "" && slices.Contains(w.counted, r.Chain):
		return "this chain's report was counted already"
	case r.Failed && r.EndedAtMs != 0 && w.state.ReenabledAtMs > r.EndedAtMs:
		return "the chain failed before the webhook was re-enabled"
	}
	return ""
}

// count remembers that chain's report was counted.
func (w *webhookRun) count(chain string) {
	if chain == "" {
		return
	}
	if len(w.counted) >= rememberedChains {
		w.counted = slices.Delete(w.counted, 0, len(w.counted)-rememberedChains+1)
	}
	w.counted = append(w.counted, chain)
}

// afterChain is the state after the chain report r, received at now.
func (w *webhookRun) afterChain(r furrow.ChainReport, now time.Time) WebhookState {
	s := w.state
	s.ChangedAt = &now
	if !r.Failed {
		w.nextEnds = nil
		s.Failures = 0
		s.LastChange = fmt.Sprintf("chain of %s delivered after failed chains; the count restarts", r.EventID)
		return s
	}
	s.Failures++
	w.nextEnds = append(slices.Clone(w.ends), cmp.Or(r.EndedAtMs, furrow.Millis(now)))
	s.LastChange = fmt.Sprintf("chain of %s failed: its last attempt %s", r.EventID, answer(r.StatusCode, r.Error))
	if s.Failures >= furrow.MaxFailedChains {
		if s.Enabled {
			s.LastChange += fmt.Sprintf("; disabled after %d consecutive failed chains", s.Failures)
			w.change = furrow.WebhookTransition{AtMs: furrow.Millis(now), LastStatusCode: r.StatusCode, LastError: r.Error}
		}
		s.Enabled = false
	}
	return s
}

// afterLateSuccess sets next after the report r of a delivered chain that
// ended before the latest counted failure, at lateSuccess's version v: the
// count keeps the failures that ended after r's chain, or, when the run
// does not know when each counted failure ended, or before
// lateSuccessRecount, stays as it is.
func (w *webhookRun) afterLateSuccess(ctx workflow.Context, r furrow.ChainReport, v workflow.Version) {
	log := workflow.GetLogger(ctx)
	if v < lateSuccessRecount || len(w.ends) != w.state.Failures {
		log.Info("chain report counted; the count kept", "webhook_id", w.state.WebhookID, "chain", r.Chain,
			"why", "the chain was delivered before the latest counted failure ended")
		return
	}
	var after []int64
	for _, end := range w.ends {
		if end > r.EndedAtMs {
			after = append(after, end)
		}
	}
	if len(after) == len(w.ends) {
		return
	}
	now := workflow.Now(ctx)
	w.next.Failures, w.nextEnds = len(after), after
	w.next.ChangedAt = &now
	w.next.LastChange = fmt.Sprintf("chain of %s delivered before %d of the counted failed chains ended; the count restarts from them",
		r.EventID, len(after))
	log.Info("chain report counted; the count restarts from the failures that ended after it", "webhook_id", w.state.WebhookID,
		"chain", r.Chain, "failures", len(after))
}

// afterReenable is the state after SignalReenable sent by by
// (furrow.EnabledByAPI or EnabledBySignal), received at now.
func (w *webhookRun) afterReenable(by string, now time.Time) WebhookState {
	s := w.state
	s.Enabled, s.Failures, s.ReenabledAtMs = true, 0, furrow.Millis(now)
	s.ChangedAt, s.LastChange = &now, "re-enabled by the reenable signal; the count restarts"
	if by == furrow.EnabledByAPI {
		s.LastChange = "re-enabled by the API; the count restarts"
	}
	w.change = furrow.WebhookTransition{AtMs: furrow.Millis(now), By: by}
	return s
}

// reenabledBy tells who sent SignalReenable from its payload: the API sends
// ReenableByAPI; support sends none (or anything else).
func reenabledBy(payload any) string {
	if payload == ReenableByAPI {
		return furrow.EnabledByAPI
	}
	return furrow.EnabledBySignal
}

// write stores w.next when its enabled flag or counter differs from what
// is stored; what only the report texts change is not a change. A change
// of the enabled flag is a transition: it is written with the next
// transition number, with its lifecycle event.
func (w *webhookRun) write(ctx workflow.Context) error {
	if w.next.Enabled == w.state.Enabled && w.next.Failures == w.state.Failures {
		w.ends = w.nextEnds
		// A re-enable of a webhook enabled at 0 writes nothing, but the
		// failures that ended before it still must not count.
		if w.next.ReenabledAtMs != w.state.ReenabledAtMs &&
			workflow.GetVersion(ctx, reenableKept, workflow.DefaultVersion, 1) >= 1 {
			w.state.ReenabledAtMs = w.next.ReenabledAtMs
		}
		return nil
	}
	var a *activities.Activities
	var got activities.SetWebhookStateResult
	var call workflow.Future
	failedAt := w.failedAtMs
	w.failedAtMs = 0
	if w.next.Enabled != w.state.Enabled && w.lifecycleEvents(ctx) {
		t := activities.TransitionWebhookInput{WebhookTransition: w.change, UnlessDeliveredAfterMs: failedAt}
		t.WebhookID, t.Seq, t.Enabled, t.Failures = w.next.WebhookID, w.state.Seq+1, w.next.Enabled, w.next.Failures
		w.next.Seq = t.Seq
		call = workflow.ExecuteActivity(ctx, a.TransitionWebhook, t)
	} else {
		set := activities.SetWebhookStateInput{WebhookID: w.next.WebhookID, Enabled: w.next.Enabled, Failures: w.next.Failures,
			UnlessDeliveredAfterMs: failedAt}
		call = workflow.ExecuteActivity(ctx, a.SetWebhookState, set)
	}
	if err := call.Get(ctx, &got); err != nil {
		return err
	}
	if got.Superseded {
		w.next = w.state
		return nil
	}
	w.state, w.ends = w.next, w.nextEnds
	if got.Gone {
		w.state.Gone = true
		workflow.GetLogger(ctx).Info("webhook deleted; workflow ends", "webhook_id", w.state.WebhookID)
	}
	workflow.SetCurrentDetails(ctx, w.state.details())
	return nil
}

// lifecycleEvents says whether a change of the enabled flag is written the
// lifecycle way (lifecycleChange), asked again per change (askAgain).
func (w *webhookRun) lifecycleEvents(ctx workflow.Context) bool {
	return askAgain(ctx, lifecycleChange, &w.oldChanges)
}

// askAgain says whether a run takes change now. GetVersion keeps its first
// answer for the rest of a run, so a run that replayed a step taken the
// old way would take every later one the old way too, until its next
// continue-as-new. Such a run asks again, under a name of each step's own
// (askedAgain), counting them in old: a step taken since finds its marker,
// or records it, and takes the new way; one replayed from before finds
// none and keeps the old.
func askAgain(ctx workflow.Context, change string, old *int) bool {
	if workflow.GetVersion(ctx, change, workflow.DefaultVersion, 1) >= 1 {
		return true
	}
	*old++
	return workflow.GetVersion(ctx, askedAgain(change, *old), workflow.DefaultVersion, 1) >= 1
}

// askedAgain is the name change is asked under at a run's n-th step taken
// the old way.
func askedAgain(change string, n int) string { return fmt.Sprintf("%s-after-%d", change, n) }

// details tells the state in a line of Temporal markdown.
func (s WebhookState) details() string {
	var b strings.Builder
	switch {
	case s.Gone:
		b.WriteString("webhook deleted; this workflow ends")
	case s.Enabled:
		fmt.Fprintf(&b, "enabled; %d consecutive failed chains (disabled at %d)", s.Failures, furrow.MaxFailedChains)
	default:
		fmt.Fprintf(&b, "**disabled** after %d consecutive failed chains; re-enable with the `%s` signal", s.Failures, SignalReenable)
	}
	if s.ChangedAt != nil {
		fmt.Fprintf(&b, ". Last change %s: %s", s.ChangedAt.UTC().Format(time.RFC3339), s.LastChange)
	}
	return b.String()
}

// initialState is the state in carries, or, on a first start, the stored
// one, with when the webhook was re-enabled if that was its last change: a
// run started again (after an operator ended the last) still does not
// count a failure that ended before it.
func initialState(ctx workflow.Context, in WebhookInput) (WebhookState, error) {
	if in.State != nil {
		return *in.State, nil
	}
	var a *activities.Activities
	var got activities.LoadWebhookStateResult
	err := workflow.ExecuteActivity(ctx, a.LoadWebhookState, in.WebhookID).Get(ctx, &got)
	return WebhookState{WebhookID: in.WebhookID, Enabled: got.Enabled, Failures: got.Failures, Seq: got.Seq,
		ReenabledAtMs: got.ReenabledAtMs, Gone: got.Gone}, err
}
