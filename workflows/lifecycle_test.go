package workflows_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/activities"
	ftemporal "github.com/furrowhq/furrow/temporal"
	"github.com/furrowhq/furrow/workflows"
)

// wantLifecycle checks the farm's lifecycle events against types and bys
// (the By of each webhook.enabled, "" for webhook.disabled) and returns them.
func wantLifecycle(t *testing.T, f *fixture, want ...string) []furrow.Event {
	t.Helper()
	es := f.store.lifecycleEvents(f.webhook.FarmID)
	if len(es) != len(want) {
		t.Fatalf("lifecycle events = %+v, want %v", es, want)
	}
	ids := map[string]bool{}
	for i, e := range es {
		got := e.Type
		if e.Type == furrow.EventWebhookEnabled {
			var d furrow.WebhookEnabledData
			if err := json.Unmarshal(e.Data, &d); err != nil || d.WebhookID != f.webhook.ID {
				t.Fatalf("data of %s: %s", e.Type, e.Data)
			}
			got += " by " + d.By
		}
		if got != want[i] || ids[e.ID] {
			t.Fatalf("lifecycle event %d = %s (%s), want %s, ids unique", i, got, e.ID, want[i])
		}
		ids[e.ID] = true
	}
	return es
}

const (
	disabled   = furrow.EventWebhookDisabled
	byAPI      = furrow.EventWebhookEnabled + " by " + furrow.EnabledByAPI
	bySignal   = furrow.EventWebhookEnabled + " by " + furrow.EnabledBySignal
	minuteInMs = int64(time.Minute / time.Millisecond)
)

// published records the events published on the live bus.
type published struct {
	mu     sync.Mutex
	events []furrow.Event
}

func (p *published) PublishEvent(e furrow.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, e)
}

func TestWebhookAnnouncesEachTransitionOnce(t *testing.T) {
	f := newFixture("https://example.com", 0)
	live := &published{}
	sigs := append(failed(4), signal{failed: true, status: 503}, signal{failed: true}, // disabled, then one more
		signal{reenable: true, api: true}, signal{reenable: true, api: true}) // enabled, then nothing to change
	sigs = append(sigs, failed(5)...)
	sigs = append(sigs, signal{reenable: true})
	env := newEnv()
	runWebhookWith(env, &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now), Live: live}, f,
		workflows.WebhookInput{WebhookID: f.webhook.ID}, sigs)
	es := wantLifecycle(t, f, disabled, byAPI, disabled, bySignal)
	if len(live.events) != len(es) || live.events[0].ID != es[0].ID || live.events[3].ID != es[3].ID {
		t.Fatalf("published on the live bus: %+v, want the stored events", live.events)
	}
	var d furrow.WebhookDisabledData
	if err := json.Unmarshal(es[0].Data, &d); err != nil ||
		d != (furrow.WebhookDisabledData{WebhookID: f.webhook.ID, FailedChains: furrow.MaxFailedChains, LastStatusCode: 503}) {
		t.Fatalf("webhook.disabled data = %s", es[0].Data)
	}
	// Each event occurs when the workflow received its signal.
	if gap := es[1].OccurredAtMs - es[0].OccurredAtMs; gap != 2*minuteInMs {
		t.Fatalf("enabled %d ms after disabled, want the two minutes between the signals", gap)
	}
	w := f.store.webhook(f.webhook.ID)
	if !w.Enabled || w.StateSeq != 4 || w.StateCause != furrow.EnabledBySignal || w.StateChangedAtMs != es[3].OccurredAtMs {
		t.Fatalf("webhook = %+v, want enabled by signal at transition 4", w)
	}
}

// commitThenFail is the store with a TransitionWebhook that commits and
// then fails, as a connection lost before the commit's answer would, the
// first time it is called.
type commitThenFail struct {
	*store
	calls atomic.Int32
}

func (s *commitThenFail) TransitionWebhook(ctx context.Context, t furrow.WebhookTransition, failedAtMs int64) (
	furrow.OutboxEvent, bool, bool, error) {
	ev, written, superseded, err := s.store.TransitionWebhook(ctx, t, failedAtMs)
	if s.calls.Add(1) == 1 && err == nil {
		return furrow.OutboxEvent{}, false, false, errors.New("connection lost after the commit")
	}
	return ev, written, superseded, err
}

func TestWebhookTransitionRetriedAfterCommitStoresOnce(t *testing.T) {
	f := newFixture("https://example.com", 0)
	s := &commitThenFail{store: f.store}
	env := newEnv()
	runWebhookWith(env, &activities.Activities{Webhooks: s, Clock: furrow.ClockFunc(env.Now)}, f,
		workflows.WebhookInput{WebhookID: f.webhook.ID}, failed(5))
	if n := s.calls.Load(); n != 2 {
		t.Fatalf("TransitionWebhook called %d times, want a failed call and its retry", n)
	}
	wantLifecycle(t, f, disabled)
	if w := f.store.webhook(f.webhook.ID); w.Enabled || w.StateSeq != 1 {
		t.Fatalf("webhook = %+v, want disabled at transition 1", w)
	}
}

func TestWebhookTransitionsAcrossContinueAsNew(t *testing.T) {
	f := newFixture("https://example.com", 0)
	env := newEnv()
	acts := &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now)}
	// Disabled, then delivered chains until the run continues as new.
	env.RegisterDelayedCallback(func() {
		for range furrow.MaxFailedChains {
			env.SignalWorkflow(workflows.SignalChain, furrow.ChainReport{WebhookID: f.webhook.ID, Failed: true})
		}
		for range 500 - furrow.MaxFailedChains {
			env.SignalWorkflow(workflows.SignalChain, furrow.ChainReport{WebhookID: f.webhook.ID})
		}
	}, time.Minute)
	runWebhookWith(env, acts, f, workflows.WebhookInput{WebhookID: f.webhook.ID}, nil)
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &can) {
		t.Fatalf("err = %v, want continue-as-new", err)
	}
	var next workflows.WebhookInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.State == nil || next.State.Seq != 1 || next.State.Enabled {
		t.Fatalf("continued with state %+v, want disabled at transition 1", next.State)
	}
	env = newEnv()
	runWebhookWith(env, &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now)}, f,
		next, []signal{{reenable: true}})
	wantLifecycle(t, f, disabled, bySignal)
	if w := f.store.webhook(f.webhook.ID); !w.Enabled || w.StateSeq != 2 {
		t.Fatalf("webhook = %+v, want enabled at transition 2", w)
	}
}

func TestWebhookNumbersFromTheStoredTransition(t *testing.T) {
	f := newFixture("https://example.com", 0)
	ctx := context.Background()
	for seq, enabled := range []bool{false, true} {
		_, _, _, err := f.store.TransitionWebhook(ctx, furrow.WebhookTransition{WebhookID: f.webhook.ID, Seq: int64(seq + 1),
			AtMs: 1, Enabled: enabled, By: furrow.EnabledByAPI, Failures: 0}, 0)
		if err != nil {
			t.Fatal(err)
		}
	}
	runWebhook(t, f, workflows.WebhookInput{WebhookID: f.webhook.ID}, failed(5))
	es := wantLifecycle(t, f, disabled, byAPI, disabled)
	if want := (furrow.WebhookTransition{WebhookID: f.webhook.ID, Seq: 3}).Event(f.webhook.FarmID).ID; es[2].ID != want {
		t.Fatalf("the workflow's transition has id %s, want that of transition 3, %s", es[2].ID, want)
	}
}

// A run whose history wrote a change before lifecycle events (a disable
// replayed from then: both names answer DefaultVersion) writes its next
// change, the re-enable, the new way, with its event: GetVersion's first
// answer for a name holds for the whole run, so each change asks under
// its own name.
func TestWebhookBeforeLifecycleEventsTakesTheNewWayAtItsNextChange(t *testing.T) {
	f := newFixture("https://example.com", 0)
	env := newEnv()
	ftemporal.Register(env, &activities.Activities{Webhooks: f.store, Clock: furrow.ClockFunc(env.Now)})
	env.OnGetVersion("lifecycle-events", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	env.OnGetVersion("lifecycle-events-after-1", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	signalWebhook(env, f, workflows.WebhookInput{WebhookID: f.webhook.ID}, append(failed(5), signal{reenable: true}))
	wantLifecycle(t, f, bySignal)
	if n := f.store.calls.Count("TransitionWebhook"); n != 1 {
		t.Fatalf("TransitionWebhook called %d times, want once: the re-enable, after the disable written the old way", n)
	}
	if n := f.store.calls.Count("SetWebhookState"); n < 1 {
		t.Fatalf("SetWebhookState called %d times: the disable did not take the old way", n)
	}
	if w := f.store.webhook(f.webhook.ID); !w.Enabled {
		t.Fatal("the re-enable did not enable")
	}
}
