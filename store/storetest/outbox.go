package storetest

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// Outbox checks the furrow.Outbox contract: claims, leases in the claimer's
// name, renewal, release, holds and marking. It makes its events through Events
// (CreateEvent only) on farms with a webhook of every type, so that the
// events wait for the dispatcher.
func Outbox(t *testing.T, newSubject New) {
	run(t, newSubject, map[string]func(*env){
		"ClaimOldestFirstUntilLeaseExpires":    claimOldestFirst,
		"ConcurrentClaimersNeverShare":         concurrentClaimers,
		"ReleaseFreesAtOnceOnlyForTheOwner":    releaseOnlyOwner,
		"RenewExtendsOnlyLiveLeasesOfTheOwner": renewOnlyLive,
		"SkipFarms":                            skipFarms,
		"FromMs":                               fromMs,
		"MarkDispatchedEndsTheLease":           markEndsLease,
		"HoldKeepsEventsFromClaimsUntilItEnds": holdUntilItEnds,
	})
}

// pendingFarm returns a farm whose events wait for the dispatcher: a new
// farm with a webhook of every type.
func (e *env) pendingFarm() uuid.UUID {
	e.t.Helper()
	f, _ := e.farm()
	e.webhook(f.ID)
	return f.ID
}

// pending stores n events of farm, each occurring a millisecond after the
// one before, and returns their ids.
func (e *env) pending(farm uuid.UUID, n int) []string {
	e.t.Helper()
	out := make([]string, n)
	for i := range out {
		e.clock.Advance(time.Millisecond)
		ev, err := e.Events.CreateEvent(e.ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: farm, Data: json.RawMessage(`{}`)})
		e.must(err)
		out[i] = ev.ID
	}
	return out
}

func ids(es []furrow.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func (e *env) claim(owner uuid.UUID, limit int, lease time.Duration, skip ...uuid.UUID) []string {
	e.t.Helper()
	es, err := e.Outbox.ClaimEvents(e.ctx, furrow.Claim{Owner: owner, Limit: limit, Lease: lease, SkipFarms: skip})
	e.must(err)
	return ids(es)
}

func (e *env) wantIDs(what string, got, want []string) {
	e.t.Helper()
	if !slices.Equal(got, want) {
		e.t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func claimOldestFirst(e *env) {
	farm := e.pendingFarm()
	all := e.pending(farm, 3)
	a, b := uuid.New(), uuid.New()
	if es, err := e.Outbox.ClaimEvents(e.ctx, furrow.Claim{Owner: a, Limit: 0, Lease: time.Minute}); err != nil || len(es) != 0 {
		e.t.Fatalf("a claim of 0 events = %v, %v; want none", es, err)
	}
	first, err := e.Outbox.ClaimEvents(e.ctx, furrow.Claim{Owner: a, Limit: 2, Lease: time.Minute})
	if err != nil || len(first) != 2 || first[0].FarmID != farm || first[0].Type == "" {
		e.t.Fatalf("first claim = %+v, %v; want two whole events", first, err)
	}
	e.wantIDs("first claim", ids(first), all[:2])
	e.wantIDs("claim while leased", e.claim(b, 10, time.Minute), all[2:])
	e.clock.Advance(59 * time.Second)
	e.wantIDs("claim before expiry", e.claim(b, 10, time.Minute), nil)
	e.clock.Advance(2 * time.Second)
	e.wantIDs("claim after the leases expired", e.claim(b, 10, time.Minute), all)
}

func concurrentClaimers(e *env) {
	const n = 200
	farm := e.pendingFarm()
	e.pending(farm, n)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 2 {
		owner := uuid.New()
		wg.Go(func() {
			for {
				es, err := e.Outbox.ClaimEvents(e.ctx, furrow.Claim{Owner: owner, Limit: 7, Lease: time.Hour})
				if err != nil {
					e.t.Error(err)
					return
				}
				if len(es) == 0 {
					return
				}
				mu.Lock()
				for _, ev := range es {
					seen[ev.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		e.t.Fatalf("claimed %d distinct events, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			e.t.Fatalf("event %s claimed %d times", id, c)
		}
	}
}

func releaseOnlyOwner(e *env) {
	all := e.pending(e.pendingFarm(), 3)
	a, b := uuid.New(), uuid.New()
	e.wantIDs("a's claim", e.claim(a, 3, time.Minute), all)
	if n, err := e.Outbox.ReleaseLeases(e.ctx, b, all); err != nil || n != 0 {
		e.t.Fatalf("b releasing a's leases = %d, %v; want 0", n, err)
	}
	if n, err := e.Outbox.ReleaseLeases(e.ctx, a, all[:2]); err != nil || n != 2 {
		e.t.Fatalf("a releasing two = %d, %v; want 2", n, err)
	}
	e.wantIDs("b's claim after the release", e.claim(b, 10, time.Minute), all[:2])
	// a's lease of the third expires and b takes it: a's late release must
	// not free b's lease.
	e.clock.Advance(2 * time.Minute)
	e.wantIDs("b's claim after a's lease expired", e.claim(b, 10, time.Minute), all)
	if n, err := e.Outbox.ReleaseLeases(e.ctx, a, all); err != nil || n != 0 {
		e.t.Fatalf("a's late release = %d, %v; want 0", n, err)
	}
	e.wantIDs("claim after a's late release", e.claim(a, 10, time.Minute), nil)
	if _, err := e.Outbox.ReleaseLeases(e.ctx, a, []string{"bad"}); furrow.ErrorCode(err) != furrow.EINVALID {
		e.t.Fatalf("releasing a malformed id: %v, want %s", err, furrow.EINVALID)
	}
	if n, err := e.Outbox.ReleaseLeases(e.ctx, a, nil); err != nil || n != 0 {
		e.t.Fatalf("releasing nothing = %d, %v", n, err)
	}
}

func renewOnlyLive(e *env) {
	all := e.pending(e.pendingFarm(), 2)
	a, b := uuid.New(), uuid.New()
	e.claim(a, 2, 10*time.Second)
	e.clock.Advance(8 * time.Second)
	if n, err := e.Outbox.RenewLeases(e.ctx, b, all, time.Hour); err != nil || n != 0 {
		e.t.Fatalf("b renewing a's leases = %d, %v; want 0", n, err)
	}
	if n, err := e.Outbox.RenewLeases(e.ctx, a, all[:1], 10*time.Second); err != nil || n != 1 {
		e.t.Fatalf("a renewing one = %d, %v; want 1", n, err)
	}
	e.clock.Advance(5 * time.Second) // the first is renewed; the second expired
	e.wantIDs("b's claim", e.claim(b, 10, time.Minute), all[1:])
	if n, err := e.Outbox.RenewLeases(e.ctx, a, all, time.Minute); err != nil || n != 1 {
		e.t.Fatalf("a renewing after losing one = %d, %v; want 1", n, err)
	}
	e.clock.Advance(30 * time.Second)
	e.wantIDs("claim within the renewed lease", e.claim(b, 10, time.Minute), nil)
	e.clock.Advance(31 * time.Second) // a's lease ran out unrenewed
	if n, err := e.Outbox.RenewLeases(e.ctx, a, all, time.Minute); err != nil || n != 0 {
		e.t.Fatalf("renewing an expired lease = %d, %v; want 0", n, err)
	}
}

func skipFarms(e *env) {
	f1, f2 := e.pendingFarm(), e.pendingFarm()
	e1 := e.pending(f1, 2)
	e2 := e.pending(f2, 1)
	e.wantIDs("claim skipping the first farm", e.claim(uuid.New(), 10, time.Minute, f1), e2)
	e.wantIDs("claim skipping the second farm", e.claim(uuid.New(), 10, time.Minute, f2), e1)
}

func fromMs(e *env) {
	farm := e.pendingFarm()
	all := e.pending(farm, 3)
	es, err := e.Outbox.ClaimEvents(e.ctx, furrow.Claim{Owner: uuid.New(), Limit: 10, Lease: time.Minute})
	e.must(err)
	from := es[1].OccurredAtMs
	e.clock.Advance(2 * time.Minute) // the first claim's leases expire
	got, err := e.Outbox.ClaimEvents(e.ctx, furrow.Claim{Owner: uuid.New(), Limit: 10, Lease: time.Minute, FromMs: from})
	e.must(err)
	e.wantIDs("claim from the second event's time", ids(got), all[1:])
}

func markEndsLease(e *env) {
	all := e.pending(e.pendingFarm(), 4)
	a := uuid.New()
	e.claim(a, 2, time.Minute)
	if err := e.Outbox.MarkDispatched(e.ctx, all[:3]); err != nil {
		e.t.Fatal(err)
	}
	if n, err := e.Outbox.RenewLeases(e.ctx, a, all, time.Minute); err != nil || n != 0 {
		e.t.Fatalf("renewing dispatched events = %d, %v; want 0", n, err)
	}
	if n, err := e.Outbox.ReleaseLeases(e.ctx, a, all); err != nil || n != 0 {
		e.t.Fatalf("releasing dispatched events = %d, %v; want 0", n, err)
	}
	e.clock.Advance(time.Hour)
	e.wantIDs("claim after marking", e.claim(a, 10, time.Minute), all[3:])
	if err := e.Outbox.MarkDispatched(e.ctx, []string{"bad"}); furrow.ErrorCode(err) != furrow.EINVALID {
		e.t.Fatalf("marking a malformed id: %v, want %s", err, furrow.EINVALID)
	}
	if err := e.Outbox.MarkDispatched(e.ctx, nil); err != nil {
		e.t.Fatal(err)
	}
}

func holdUntilItEnds(e *env) {
	all := e.pending(e.pendingFarm(), 3)
	a, b := uuid.New(), uuid.New()
	e.claim(a, 2, 10*time.Second)
	hold := func(owner uuid.UUID, ids []string, d ...time.Duration) (int, error) {
		holds := make([]furrow.Hold, len(ids))
		for i, id := range ids {
			holds[i] = furrow.Hold{EventID: id, For: d[min(i, len(d)-1)]}
		}
		return e.Outbox.HoldEvents(e.ctx, owner, holds)
	}
	if n, err := hold(b, all, time.Hour); err != nil || n != 0 {
		e.t.Fatalf("b holding a's events = %d, %v; want 0", n, err)
	}
	if n, err := hold(a, all, 30*time.Second, 40*time.Second); err != nil || n != 2 {
		e.t.Fatalf("a holding its two = %d, %v; want 2", n, err)
	}
	// Held, the events are nobody's: their claimer can neither renew nor
	// release them, and no claim takes them while the hold lasts, though
	// it outlasts the lease they had.
	if n, err := e.Outbox.RenewLeases(e.ctx, a, all, time.Hour); err != nil || n != 0 {
		e.t.Fatalf("a renewing held events = %d, %v; want 0", n, err)
	}
	if n, err := e.Outbox.ReleaseLeases(e.ctx, a, all); err != nil || n != 0 {
		e.t.Fatalf("a releasing held events = %d, %v; want 0", n, err)
	}
	e.wantIDs("claim while held", e.claim(b, 10, time.Minute), all[2:])
	e.clock.Advance(20 * time.Second)
	e.wantIDs("claim after the lease but within the holds", e.claim(b, 10, time.Minute), nil)
	e.clock.Advance(11 * time.Second)
	e.wantIDs("claim after the first hold", e.claim(b, 10, time.Minute), all[:1])
	e.clock.Advance(10 * time.Second)
	e.wantIDs("claim after the second hold", e.claim(b, 10, time.Minute), all[1:2])
	if n, err := hold(a, all, time.Hour); err != nil || n != 0 {
		e.t.Fatalf("a holding events b claimed = %d, %v; want 0", n, err)
	}
	if err := e.Outbox.MarkDispatched(e.ctx, all); err != nil {
		e.t.Fatal(err)
	}
	if n, err := hold(b, all, time.Hour); err != nil || n != 0 {
		e.t.Fatalf("holding dispatched events = %d, %v; want 0", n, err)
	}
	if _, err := hold(b, []string{"bad"}, time.Hour); furrow.ErrorCode(err) != furrow.EINVALID {
		e.t.Fatalf("holding a malformed id: %v, want %s", err, furrow.EINVALID)
	}
	if n, err := hold(b, nil); err != nil || n != 0 {
		e.t.Fatalf("holding nothing = %d, %v", n, err)
	}
}
