package storetest

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// event stores an event of farm of type typ that occurred at atMs, with
// some data, and returns its id.
func (e *env) event(farm uuid.UUID, typ string, atMs int64) string {
	e.t.Helper()
	ev, err := e.Events.CreateEvent(e.ctx, furrow.Event{Type: typ, FarmID: farm, OccurredAtMs: atMs, Data: json.RawMessage(`{"n":1}`)})
	e.must(err)
	return ev.ID
}

// redeliveryIDs reads every event of set, pages of limit at a time, and
// returns their ids in the order listed; it fails on an event with data or
// a page longer than limit.
func (e *env) redeliveryIDs(set furrow.RedeliverySet, limit int) []string {
	e.t.Helper()
	ids := []string{}
	var after *furrow.Cursor
	for pages := 0; ; pages++ {
		if pages > 100 {
			e.t.Fatal("RedeliveryEvents pages without end")
		}
		page, next, err := e.Webhooks.RedeliveryEvents(e.ctx, set, after, limit)
		e.must(err)
		if len(page) > limit {
			e.t.Fatalf("a page of %d events, asked for %d", len(page), limit)
		}
		for _, ev := range page {
			if len(ev.Data) != 0 {
				e.t.Fatalf("event %s listed with its data %s", ev.ID, ev.Data)
			}
			ids = append(ids, ev.ID)
		}
		if next == nil {
			return ids
		}
		after = next
	}
}

// Redeliveries checks the furrow.WebhookService methods of a redelivery
// since a time: RedeliverySet and RedeliveryEvents.
func Redeliveries(t *testing.T, newSubject New) {
	at := Start.UnixMilli()
	run(t, newSubject, map[string]func(*env){
		"SetCountsOnlyTheSubscribedTypesSince": func(e *env) {
			f, _ := e.farm()
			other, _ := e.farm()
			e.event(f.ID, furrow.EventTriggerFired, at-1)
			for i := range 4 {
				e.event(f.ID, furrow.EventMetricValue, at+int64(i))
			}
			e.event(f.ID, furrow.EventTriggerFired, at+10)
			e.event(f.ID, furrow.EventDeviceOffline, at+11)
			e.event(other.ID, furrow.EventTriggerFired, at+12)
			types := []string{furrow.EventTriggerFired, furrow.EventDeviceOffline}
			set, err := e.Webhooks.RedeliverySet(e.ctx, f.ID, types, at, 100)
			e.must(err)
			if set.Count != 2 || set.FarmID != f.ID || set.SinceMs != at || !slices.Equal(set.Types, types) || set.ThroughSeq == 0 {
				e.t.Fatalf("set %+v, want 2 events of the farm since %d", set, at)
			}
			// More than limit is said without counting them all.
			set, err = e.Webhooks.RedeliverySet(e.ctx, f.ID, []string{furrow.EventMetricValue}, at, 2)
			e.must(err)
			if set.Count != 3 {
				e.t.Fatalf("4 events counted at most 2+1: Count %d, want 3", set.Count)
			}
			set, err = e.Webhooks.RedeliverySet(e.ctx, f.ID, []string{furrow.EventRecommendationCreated}, 0, 100)
			e.must(err)
			if set.Count != 0 || len(e.redeliveryIDs(set, 10)) != 0 {
				e.t.Fatalf("a set of no event: %+v", set)
			}
		},
		"EventsPageOldestFirstWithoutData": func(e *env) {
			f, _ := e.farm()
			types := []string{furrow.EventTriggerFired}
			var want []string
			// Out of time order, and two in one millisecond, which keep the
			// order stored.
			for _, ms := range []int64{5, 1, 3, 3, 2, 9, 7} {
				id := e.event(f.ID, furrow.EventTriggerFired, at+ms)
				e.event(f.ID, furrow.EventMetricValue, at+ms)
				want = append(want, id)
			}
			want = []string{want[1], want[4], want[2], want[3], want[0], want[6], want[5]}
			set, err := e.Webhooks.RedeliverySet(e.ctx, f.ID, types, at, 100)
			e.must(err)
			// Events stored after the set was fixed are not in it, even
			// when they occurred before its newest.
			e.event(f.ID, furrow.EventTriggerFired, at+4)
			e.event(f.ID, furrow.EventTriggerFired, at+20)
			for _, limit := range []int{1, 2, 3, 7, 100} {
				if got := e.redeliveryIDs(set, limit); !slices.Equal(got, want) {
					e.t.Fatalf("pages of %d: %v, want %v", limit, got, want)
				}
			}
		},
	})
}
