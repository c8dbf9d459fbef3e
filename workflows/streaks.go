package workflows

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
)

// chainStreaks versions how chain reports are counted. Before it, each
// report moved the count as it came, and a failed chain's write was
// dropped when a delivery had begun after the chain ended: under a backlog
// that held reports back until the endpoint recovered, every failure was
// dropped and a webhook with any number of consecutive failed chains was
// never disabled. Since, the run remembers when its failed and delivered
// chains ended and counts them in that order, with the deliveries the
// store holds between them (DeliveredBetween), whatever order the reports
// come in: five failed chains with no delivery between them disable the
// webhook, even when a delivery came after them. It is asked per report,
// as lifecycleChange is per change, so a run that replayed reports
// counted the old way takes the new way at its next report.
const chainStreaks = "chain-streaks"

// rememberedEnds bounds how many ends of failed, and of delivered, chains
// a run remembers, the newest by when they ended: a late report is placed
// among them, and one older than all of them is not counted. Five in a
// row among the newest 64 disable the webhook however many came before;
// a run of five among older ones, each reported after all 64, would be
// missed.
const rememberedEnds = 64

// byEnds says whether the report just received is counted by when the
// chains ended (chainStreaks), asked again per report (askAgain).
func (w *webhookRun) byEnds(ctx workflow.Context) bool {
	return askAgain(ctx, chainStreaks, &w.oldReports)
}

// remember adds the report r, counted at now, to the chains the run
// remembers, and asks apply to count them again.
func (w *webhookRun) remember(r furrow.ChainReport, now time.Time) {
	if len(w.failed) == 0 && w.state.Failures > 0 {
		w.failed = w.countedEnds(now)
	}
	end := cmp.Or(r.EndedAtMs, furrow.Millis(now))
	if r.Failed {
		w.failed = insertEnd(w.failed, end)
	} else {
		w.delivered = insertEnd(w.delivered, end)
	}
	w.recount = &r
}

// countedEnds is when the failures of the count ended, for a run that did not
// remember them (it counted the old way, or started from the store): those
// it knows, and the others as at the count's last change (or now), after
// which a delivery restarts the count.
func (w *webhookRun) countedEnds(now time.Time) []int64 {
	ends := slices.Clone(w.ends)
	slices.Sort(ends)
	at := furrow.Millis(now)
	if w.state.ChangedAt != nil {
		at = furrow.Millis(*w.state.ChangedAt)
	}
	for len(ends) < w.state.Failures {
		ends = insertEnd(ends, at)
	}
	return ends
}

// insertEnd adds end to ends, kept ascending and to the newest
// rememberedEnds.
func insertEnd(ends []int64, end int64) []int64 {
	i, _ := slices.BinarySearch(ends, end)
	ends = slices.Insert(ends, i, end)
	if len(ends) > rememberedEnds {
		ends = ends[len(ends)-rememberedEnds:]
	}
	return ends
}

// forget drops the chains the run remembers, at a re-enable: what ended
// before it does not count.
func (w *webhookRun) forget() {
	w.failed, w.delivered, w.recount = nil, nil, nil
}

// countAgain sets next from the remembered chains and the deliveries the
// store holds between them, after the report w.recount. A disabled
// webhook stays disabled (only a re-enable moves it): its count follows
// the reports.
func (w *webhookRun) countAgain(ctx workflow.Context) error {
	r, now := *w.recount, workflow.Now(ctx)
	w.recount = nil
	if !w.state.Enabled {
		w.next, w.nextEnds = w.afterChain(r, now), nil
		return nil
	}
	if len(w.failed) == 0 {
		return nil // a delivered chain, no failure to count: nothing changes
	}
	var a *activities.Activities
	var got activities.DeliveredBetweenResult
	in := activities.DeliveredBetweenInput{WebhookID: w.state.WebhookID, EndsMs: w.failed}
	if err := workflow.ExecuteActivity(ctx, a.DeliveredBetween, in).Get(ctx, &got); err != nil {
		return err
	}
	count, disables := countByEnds(w.breaks(got.Delivered))
	s := w.state
	s.Failures, s.ChangedAt, s.LastChange = count, &now, w.changeText(r, count)
	w.next, w.nextEnds = s, nil
	switch {
	case disables:
		w.next.Enabled = false
		w.next.LastChange += fmt.Sprintf("; disabled after %d consecutive failed chains", count)
		w.change = furrow.WebhookTransition{AtMs: furrow.Millis(now), LastStatusCode: r.StatusCode, LastError: r.Error}
	case count > 0:
		// A delivery that begins after the latest failure, before this
		// write, reads the count of before and may not report itself.
		w.failedAtMs = w.failed[len(w.failed)-1]
	}
	return nil
}

// breaks says, for each remembered failed chain, whether a delivery came
// after it and before the next: found in the store, or reported.
func (w *webhookRun) breaks(found []bool) []bool {
	out := make([]bool, len(w.failed))
	for i, end := range w.failed {
		next := int64(math.MaxInt64)
		if i+1 < len(w.failed) {
			next = w.failed[i+1]
		}
		j, _ := slices.BinarySearch(w.delivered, end+1)
		out[i] = (i < len(found) && found[i]) || (j < len(w.delivered) && w.delivered[j] < next)
	}
	return out
}

// countByEnds counts failed chains in the order they ended, breaks[i]
// saying whether a delivery came after the i-th and before the next: the
// count restarts after each. It returns the count after the last, or,
// when a run of consecutive failures reached furrow.MaxFailedChains, that
// run's length and true.
func countByEnds(breaks []bool) (count int, disables bool) {
	for i := range breaks {
		count++
		disables = disables || count >= furrow.MaxFailedChains
		if breaks[i] {
			if disables {
				return count, true
			}
			count = 0
		}
	}
	return count, disables
}

// changeText says what the report r did to the count, now count.
func (w *webhookRun) changeText(r furrow.ChainReport, count int) string {
	switch {
	case r.Failed:
		return fmt.Sprintf("chain of %s failed: its last attempt %s", r.EventID, answer(r.StatusCode, r.Error))
	case count == 0:
		return fmt.Sprintf("chain of %s delivered after failed chains; the count restarts", r.EventID)
	default:
		return fmt.Sprintf("chain of %s delivered before %d of the counted failed chains ended; the count restarts from them",
			r.EventID, count)
	}
}
