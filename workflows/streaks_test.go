package workflows_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	ftemporal "github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

// delivered stores a delivery of the webhook that began at atMs, as the
// worker does for a chain that reads a count of 0 and so reports nothing.
func (f *fixture) delivered(t *testing.T, atMs int64) {
	t.Helper()
	err := f.store.AddAttempt(context.Background(), furrow.Attempt{DeliveryID: uuid.New(), WebhookID: f.webhook.ID,
		EventID: furrow.NewEventID(), Attempt: 1, StatusCode: 200, AtMs: atMs})
	if err != nil {
		t.Fatal(err)
	}
}

// lateFailures are the reports of n failed chains that ended at the
// minutes ends, sent from minute from on, one a minute.
func (f *fixture) lateFailures(from int, ends ...int64) []chainReport {
	var out []chainReport
	for i, end := range ends {
		out = append(out, chainReport{from + i, f.failedChain(fmt.Sprint("late-", i), end)})
	}
	return out
}

// Reports held back (a backlog) until the endpoint recovered: five failed
// chains with no delivery between them disable the webhook though a
// delivery began after each of them ended and before its report came.
// Before, each failure's write was dropped and the webhook stayed enabled
// at 0 however many chains failed in a row.
func TestWebhookFailuresReportedAfterARecoveryStillDisable(t *testing.T) {
	f := newFixture("https://example.com", 0)
	at := minutes()
	f.delivered(t, at(10)) // the endpoint recovered, its chain read 0
	runChainReports(t, f, f.lateFailures(11, at(1), at(2), at(3), at(4), at(5), at(6)))
	wantLifecycle(t, f, disabled)
	// The sixth, reported while disabled, counts as before.
	writes := f.store.Writes()
	if len(writes) != 2 || writes[0].Enabled || writes[0].Failures != furrow.MaxFailedChains || writes[1].Enabled || writes[1].Failures != 6 {
		t.Fatalf("writes = %+v, want the disable at %d, then 6 failures", writes, furrow.MaxFailedChains)
	}
}

// A delivery between them, found in the store though never reported,
// breaks the run: four failed chains before it and four after, all
// reported after a later delivery, leave the webhook enabled at 0; a
// fifth after it disables.
func TestWebhookLateFailuresCountFromTheDeliveryBetweenThem(t *testing.T) {
	for _, c := range []struct {
		after   int
		enabled bool
		want    int
	}{{4, true, 0}, {5, false, 5}} {
		t.Run(fmt.Sprintf("%d after", c.after), func(t *testing.T) {
			f := newFixture("https://example.com", 0)
			at := minutes()
			f.delivered(t, at(5))  // between the fourth and the fifth failure
			f.delivered(t, at(30)) // after them all
			ends := []int64{at(1), at(2), at(3), at(4)}
			for i := range c.after {
				ends = append(ends, at(6+i))
			}
			runChainReports(t, f, f.lateFailures(31, ends...))
			w := f.store.webhook(f.webhook.ID)
			if w.Enabled != c.enabled || w.ConsecutiveFailures != c.want {
				t.Fatalf("webhook = enabled %v failures %d, want enabled %v at %d", w.Enabled, w.ConsecutiveFailures, c.enabled, c.want)
			}
		})
	}
}

// Reports out of order: the count follows when the chains ended. Ended
// F1 F2 S F3 F4 F5, reported F5 F1 F4 S F2 F3: the count is 3 at the end,
// and it is never 5.
func TestWebhookCountsReportsInTheOrderTheChainsEnded(t *testing.T) {
	f := newFixture("https://example.com", 0)
	at := minutes()
	fail := f.failedChain
	runChainReports(t, f, []chainReport{
		{10, fail("f5", at(6))},
		{11, fail("f1", at(1))},
		{12, fail("f4", at(5))},
		{13, furrow.ChainReport{WebhookID: f.webhook.ID, Chain: "s", EndedAtMs: at(3)}},
		{14, fail("f2", at(2))},
		{15, fail("f3", at(4))},
	})
	w := f.store.webhook(f.webhook.ID)
	if !w.Enabled || w.ConsecutiveFailures != 3 {
		t.Fatalf("webhook = enabled %v failures %d, want enabled at 3", w.Enabled, w.ConsecutiveFailures)
	}
	for _, s := range f.store.Writes() {
		if s.Failures >= furrow.MaxFailedChains || !s.Enabled {
			t.Fatalf("writes = %+v, want none at %d", f.store.Writes(), furrow.MaxFailedChains)
		}
	}
}

// A run that counted its first reports the old way (it began before the
// change) counts the next ones by when the chains ended, from the
// failures its count holds: two the old way and three the new disable.
func TestWebhookCountedTheOldWayGoesOnByEnds(t *testing.T) {
	f := newFixture("https://example.com", 0)
	env := newEnv()
	ftemporal.Register(env, &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now)})
	countTheOldWay(env, 2)
	at := func(m int) int64 { return furrow.Millis(env.Now().Add(time.Duration(m) * time.Minute)) }
	sendChainReports(env, f, f.lateFailures(2, at(1), at(2), at(3), at(4), at(5)))
	w := f.store.webhook(f.webhook.ID)
	if w.Enabled || w.ConsecutiveFailures != furrow.MaxFailedChains {
		t.Fatalf("webhook = enabled %v failures %d, want disabled at %d", w.Enabled, w.ConsecutiveFailures, furrow.MaxFailedChains)
	}
}

// A re-enable forgets the chains before it: four failures before it and
// one after, with no delivery anywhere, leave the webhook enabled at 1.
func TestWebhookReenableForgetsTheChainsBefore(t *testing.T) {
	f := newFixture("https://example.com", 0)
	at := minutes()
	reports := f.lateFailures(1, at(0)+1, at(1)+1, at(2)+1, at(3)+1)
	reports = append(reports, chainReport{6, f.failedChain("after", at(5)+1)})
	runChainReports(t, f, reports, 5)
	w := f.store.webhook(f.webhook.ID)
	if !w.Enabled || w.ConsecutiveFailures != 1 {
		t.Fatalf("webhook = enabled %v failures %d, want enabled at 1", w.Enabled, w.ConsecutiveFailures)
	}
}

func TestCountByEnds(t *testing.T) {
	for _, c := range []struct {
		breaks   []bool // after each failure, in the order they ended
		count    int
		disables bool
	}{
		{nil, 0, false},
		{[]bool{false, false, false}, 3, false},
		{[]bool{false, false, true}, 0, false},
		{[]bool{false, true, false, false}, 2, false},
		{[]bool{false, false, false, false, false}, 5, true},
		{[]bool{false, false, false, false, true}, 5, true},                      // a delivery after the fifth does not undo it
		{[]bool{false, false, false, false, false, false, true, false}, 7, true}, // the run's length
		{[]bool{false, false, false, true, false, false, false, false}, 4, false},
		{[]bool{true, true, true, true, true, true}, 0, false},
	} {
		count, disables := workflows.CountByEnds(c.breaks)
		if count != c.count || disables != c.disables {
			t.Errorf("countByEnds(%v) = %d, %v; want %d, %v", c.breaks, count, disables, c.count, c.disables)
		}
	}
}
