package workflows_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	"github.com/furrowhq/furrow/internal/memstore"
	ftemporal "github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

// unsentFrom makes every read of an attempt's webhook and event from the
// n-th on fail, as a database down would: those attempts send nothing
// (activities.ErrorTypeUnsent).
func unsentFrom(f *fixture, n int32) {
	var loads atomic.Int32
	f.store.Fault(func(c memstore.Call) error {
		if c.Method == "AttemptParts" && loads.Add(1) >= n {
			return errors.New("store: connection refused")
		}
		return nil
	})
}

// A chain whose endpoint failed attempts 1 to 7 and whose 8th attempt
// could not be made (a database blip) ends failed on its last attempt and
// counts as a failed chain: the endpoint was tried.
func TestDeliveryEndingUnsentAfterTriedAttemptsIsCounted(t *testing.T) {
	srv, hits := endpoint(t, 503)
	f := newFixture(srv.URL, furrow.MaxFailedChains-1)
	unsentFrom(f, 8)
	res := runDelivery(t, f, srv.Client(), nil)
	if res.Outcome != furrow.OutcomeFailed || res.Attempts != 8 || hits.Load() != 7 || !strings.Contains(res.Error, "could not load") {
		t.Fatalf("got %+v after %d hits, want failed on an 8th attempt that sent nothing after 7 hits", res, hits.Load())
	}
	reports := f.reporter.Reports()
	if len(reports) != 1 || !reports[0].Failed || reports[0].WebhookID != f.webhook.ID || reports[0].EventID != f.event.ID {
		t.Fatalf("reports = %+v, want one of a failed chain", reports)
	}
}

// One attempt made is enough: a chain whose first attempt reached the
// endpoint and whose others could not be made is counted too.
func TestDeliveryUnsentAfterOneTriedAttemptIsCounted(t *testing.T) {
	srv, hits := endpoint(t, 503)
	f := newFixture(srv.URL, 0)
	unsentFrom(f, 2)
	res := runDelivery(t, f, srv.Client(), nil)
	if res.Outcome != furrow.OutcomeFailed || res.Attempts != 8 || hits.Load() != 1 {
		t.Fatalf("got %+v after %d hits, want failed after 8 attempts, one sent", res, hits.Load())
	}
	if reports := f.reporter.Reports(); len(reports) != 1 || !reports[0].Failed {
		t.Fatalf("reports = %+v, want one of a failed chain", reports)
	}
}

// A chain none of whose attempts was made is not counted, as before.
func TestDeliveryAllUnsentIsNotCounted(t *testing.T) {
	srv, hits := endpoint(t, 503)
	f := newFixture(srv.URL, furrow.MaxFailedChains-1)
	unsentFrom(f, 1)
	res := runDelivery(t, f, srv.Client(), nil)
	if res.Outcome != furrow.OutcomeFailed || res.Attempts != 8 || hits.Load() != 0 {
		t.Fatalf("got %+v after %d hits, want failed after 8 attempts that sent nothing", res, hits.Load())
	}
	if reports := f.reporter.Reports(); len(reports) != 0 {
		t.Fatalf("reports = %+v, want none", reports)
	}
}

// A workflow whose history recorded version 1 of the unsent change goes on
// as it ran: a chain ending unsent is not counted, whatever came before;
// one that recorded none counts it as failed.
func TestDeliveryUnsentOlderVersions(t *testing.T) {
	for version, want := range map[workflow.Version]int{1: 0, workflow.DefaultVersion: 1} {
		srv, _ := endpoint(t, 503)
		f := newFixture(srv.URL, 0)
		unsentFrom(f, 8)
		env := newEnv()
		ftemporal.Register(env, &activities.Activities{Webhooks: f.store, HTTP: srv.Client(),
			Clock: furrow.ClockFunc(env.Now), Reporter: f.reporter})
		env.OnGetVersion(workflows.ChangeUnsent, workflow.DefaultVersion, 2).Return(version)
		_, in := workflows.DeliveryStart("id", f.webhook, f.event, nil)
		env.ExecuteWorkflow(workflows.DeliveryWorkflowName, in)
		if !env.IsWorkflowCompleted() {
			t.Fatalf("version %d: workflow did not complete", version)
		}
		if res := deliveryResult(t, env); res.Outcome != furrow.OutcomeFailed || res.Attempts != 8 {
			t.Fatalf("version %d: got %+v, want failed after 8 attempts", version, res)
		}
		if reports := f.reporter.Reports(); len(reports) != want || (want == 1 && !reports[0].Failed) {
			t.Errorf("version %d: reports = %+v, want %d of a failed chain", version, reports, want)
		}
	}
}
