package storetest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// sameJSON reports whether a and b encode the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// EventService checks the furrow.EventService contract.
func EventService(t *testing.T, newSubject New) {
	run(t, newSubject, map[string]func(*env){
		"CreateAssignsIDAndTime": func(e *env) {
			f, _ := e.farm()
			in := furrow.Event{Type: furrow.EventTriggerFired, FarmID: f.ID, Data: json.RawMessage(`{"rule": "dry soil"}`)}
			ev, err := e.Events.CreateEvent(e.ctx, in)
			e.must(err)
			if _, err := furrow.ParseEventID(ev.ID); err != nil {
				e.t.Fatalf("event id %q: %v", ev.ID, err)
			}
			if ev.OccurredAtMs != furrow.Millis(e.clock.Now()) || ev.Type != in.Type || ev.FarmID != f.ID {
				e.t.Fatalf("created %+v", ev)
			}
			got, err := e.Events.Event(e.ctx, ev.ID)
			e.must(err)
			if got.ID != ev.ID || got.Type != ev.Type || got.FarmID != f.ID || got.OccurredAtMs != ev.OccurredAtMs || !sameJSON(got.Data, in.Data) {
				e.t.Fatalf("Event = %+v, want %+v", got, ev)
			}
		},
		"CreateKeepsGivenIDAndTime": func(e *env) {
			f, _ := e.farm()
			in := furrow.Event{ID: furrow.NewEventID(), Type: furrow.EventRecommendationCreated, FarmID: f.ID, OccurredAtMs: 1234, Data: json.RawMessage(`{}`)}
			ev, err := e.Events.CreateEvent(e.ctx, in)
			e.must(err)
			if ev.ID != in.ID || ev.OccurredAtMs != 1234 {
				e.t.Fatalf("created %+v, want id and time kept", ev)
			}
		},
		"PendingOnlyWhenAWebhookSubscribes": func(e *env) {
			f, _ := e.farm()
			create := func(typ string) bool {
				ev, err := e.Events.CreateEvent(e.ctx, furrow.Event{Type: typ, FarmID: f.ID, Data: json.RawMessage(`{}`)})
				e.must(err)
				return ev.Pending
			}
			if create(furrow.EventTriggerFired) {
				e.t.Fatal("an event of a farm without webhooks is pending")
			}
			e.webhook(f.ID, furrow.EventRecommendationCreated)
			if create(furrow.EventTriggerFired) || !create(furrow.EventRecommendationCreated) {
				e.t.Fatal("pending must follow the webhook's event types")
			}
			if _, err := e.Webhooks.CreateWebhook(e.ctx, furrow.Webhook{ID: uuid.New(), FarmID: f.ID, URL: "https://hooks.example.com/all", Secret: furrow.WebhookSecretPrefix + "x"}); err != nil {
				e.t.Fatal(err)
			}
			if !create(furrow.EventTriggerFired) {
				e.t.Fatal("an event that a disabled webhook subscribes to must be pending: the webhook records it as skipped")
			}
		},
		"UnknownIsNotFound": func(e *env) {
			_, err := e.Events.Event(e.ctx, furrow.NewEventID())
			e.wantCode(err, furrow.ENOTFOUND, "Event(unknown)")
		},
		"ListAcrossDays": listAcrossDays,
		"ListPageSize": func(e *env) {
			f, _ := e.farm()
			for range furrow.DefaultListLimit + 1 {
				_, err := e.Events.CreateEvent(e.ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: f.ID, Data: json.RawMessage(`{}`)})
				e.must(err)
			}
			// No limit is a page of the default size, which leaves one
			// event; a limit past the maximum takes every one of them.
			for limit, want := range map[int]struct {
				n    int
				more bool
			}{0: {furrow.DefaultListLimit, true}, furrow.MaxListLimit + 1: {furrow.DefaultListLimit + 1, false}} {
				es, next, err := e.Events.Events(e.ctx, furrow.EventFilter{FarmID: f.ID, Limit: limit})
				e.must(err)
				if len(es) != want.n || (next != nil) != want.more {
					e.t.Fatalf("limit %d: %d events, cursor %v; want %d and a cursor %v", limit, len(es), next, want.n, want.more)
				}
			}
		},
		"ListPageBytes":     listPageBytes,
		"ListPageOfTheMost": listPageOfTheMost,
		"ListNewestFirstFiltered": func(e *env) {
			f, _ := e.farm()
			other, _ := e.farm()
			var ids []string
			for i, typ := range []string{furrow.EventTriggerFired, furrow.EventRecommendationCreated, furrow.EventTriggerFired, furrow.EventTriggerFired} {
				ev, err := e.Events.CreateEvent(e.ctx, furrow.Event{Type: typ, FarmID: f.ID, Data: json.RawMessage(`{}`)})
				e.must(err)
				if typ == furrow.EventTriggerFired && i > 0 {
					ids = append([]string{ev.ID}, ids...)
				}
				e.clock.Advance(time.Second)
			}
			_, err := e.Events.CreateEvent(e.ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: other.ID, Data: json.RawMessage(`{}`)})
			e.must(err)
			es, _, err := e.Events.Events(e.ctx, furrow.EventFilter{FarmID: f.ID, Type: furrow.EventTriggerFired, Limit: 2})
			e.must(err)
			if len(es) != 2 || es[0].ID != ids[0] || es[1].ID != ids[1] {
				e.t.Fatalf("Events = %+v, want ids %v", es, ids)
			}
		},
	})
}

// listPageBytes stores events of about 60 KB of data, a few more than
// furrow.MaxPageBytes holds, and checks that a page of the most rows ends
// at the first event that brings its data to the bound, with a cursor, and
// that the next page holds the rest: every event once, newest first.
func listPageBytes(e *env) {
	f, _ := e.farm()
	data := json.RawMessage(`{"blob":"` + strings.Repeat("x", 60<<10) + `"}`)
	var ids []string // newest first
	var per int      // the bytes of an event's data as listed
	for i := 0; i == 0 || i < furrow.MaxPageBytes/per+3; i++ {
		ev, err := e.Events.CreateEvent(e.ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: f.ID, Data: data})
		e.must(err)
		ids = append([]string{ev.ID}, ids...)
		if i == 0 {
			got, err := e.Events.Event(e.ctx, ev.ID)
			e.must(err)
			per = got.Size()
		}
	}
	first := (furrow.MaxPageBytes + per - 1) / per // the rows whose data reaches the bound
	var got []string
	var pages []int
	filter := furrow.EventFilter{FarmID: f.ID, Limit: furrow.MaxListLimit}
	for {
		es, next, err := e.Events.Events(e.ctx, filter)
		e.must(err)
		pages = append(pages, len(es))
		for _, ev := range es {
			got = append(got, ev.ID)
		}
		if next == nil || len(pages) > 2 {
			break
		}
		filter.Before = next
	}
	if !reflect.DeepEqual(pages, []int{first, len(ids) - first}) || !reflect.DeepEqual(got, ids) {
		e.t.Fatalf("%d events of %d bytes came in pages of %v, want %d then %d, each event once newest first",
			len(ids), per, pages, first, len(ids)-first)
	}
}

// listPageOfTheMost stores one event more than a page holds at most, some
// at the same millisecond, and checks that a page of furrow.MaxListLimit
// holds the newest of them in order, however the store reads it, and that
// the next page holds the oldest alone.
func listPageOfTheMost(e *env) {
	f, _ := e.farm()
	var ids []string // newest first
	for i := range furrow.MaxListLimit + 1 {
		ev, err := e.Events.CreateEvent(e.ctx, furrow.Event{Type: furrow.EventTriggerFired, FarmID: f.ID, Data: json.RawMessage(`{}`)})
		e.must(err)
		ids = append([]string{ev.ID}, ids...)
		if i%7 == 0 {
			e.clock.Advance(time.Millisecond)
		}
	}
	es, next, err := e.Events.Events(e.ctx, furrow.EventFilter{FarmID: f.ID, Limit: furrow.MaxListLimit})
	e.must(err)
	if len(es) != furrow.MaxListLimit || next == nil {
		e.t.Fatalf("a page of the most: %d events, cursor %v; want %d and a cursor", len(es), next, furrow.MaxListLimit)
	}
	for i, ev := range es {
		if ev.ID != ids[i] {
			e.t.Fatalf("event %d of the page is %s, want %s", i, ev.ID, ids[i])
		}
	}
	rest, next, err := e.Events.Events(e.ctx, furrow.EventFilter{FarmID: f.ID, Limit: furrow.MaxListLimit, Before: next})
	e.must(err)
	if len(rest) != 1 || rest[0].ID != ids[furrow.MaxListLimit] || next != nil {
		e.t.Fatalf("the next page: %d events, cursor %v; want the oldest alone", len(rest), next)
	}
}

// listAcrossDays stores events on both sides of UTC midnights, where a
// store partitioned by day changes partition, some at the same
// millisecond, and checks that every listing keeps its order: newest first
// by time, then by the order stored.
func listAcrossDays(e *env) {
	f, _ := e.farm()
	midnight := time.Date(2031, 3, 11, 0, 0, 0, 0, time.UTC).UnixMilli()
	stamps := []int64{midnight - 86400000, midnight - 1, midnight - 1, midnight, midnight, midnight + 1, midnight + 86400000}
	var all []furrow.Event // newest first
	for i, at := range stamps {
		typ := furrow.EventTriggerFired
		if i%2 == 1 {
			typ = furrow.EventRecommendationCreated
		}
		ev, err := e.Events.CreateEvent(e.ctx, furrow.Event{Type: typ, FarmID: f.ID, OccurredAtMs: at, Data: json.RawMessage(`{}`)})
		e.must(err)
		all = append([]furrow.Event{ev.Event}, all...)
	}
	want := func(what string, got []furrow.Event, keep func(furrow.Event) bool, limit int) {
		var w []string
		for _, ev := range all {
			if keep(ev) && len(w) < limit {
				w = append(w, ev.ID)
			}
		}
		if g := ids(got); !reflect.DeepEqual(g, w) {
			e.t.Fatalf("%s: ids %v, want %v", what, g, w)
		}
	}
	any := func(furrow.Event) bool { return true }
	es, _, err := e.Events.Events(e.ctx, furrow.EventFilter{FarmID: f.ID})
	e.must(err)
	want("all", es, any, len(all))
	es, _, err = e.Events.Events(e.ctx, furrow.EventFilter{FarmID: f.ID, Limit: 4})
	e.must(err)
	want("limit 4", es, any, 4)
	es, _, err = e.Events.Events(e.ctx, furrow.EventFilter{FarmID: f.ID, Type: furrow.EventTriggerFired, Limit: 3})
	e.must(err)
	want("type, limit 3", es, func(ev furrow.Event) bool { return ev.Type == furrow.EventTriggerFired }, 3)
	since := midnight - 1
	es, _, err = e.Events.Events(e.ctx, furrow.EventFilter{FarmID: f.ID, SinceMs: &since})
	e.must(err)
	want("since a millisecond before midnight", es, func(ev furrow.Event) bool { return ev.OccurredAtMs >= since }, len(all))
	es, _, err = e.Events.Events(e.ctx, furrow.EventFilter{FarmID: f.ID, Type: furrow.EventRecommendationCreated, SinceMs: &since, Limit: 2})
	e.must(err)
	want("type since, limit 2", es, func(ev furrow.Event) bool {
		return ev.OccurredAtMs >= since && ev.Type == furrow.EventRecommendationCreated
	}, 2)
	for _, f := range []furrow.EventFilter{
		{FarmID: f.ID, Limit: 2},
		{FarmID: f.ID, Limit: 1, Type: furrow.EventTriggerFired},
		{FarmID: f.ID, Limit: 3, SinceMs: &since},
	} {
		what := fmt.Sprintf("pages of %d, type %q, since %v", f.Limit, f.Type, f.SinceMs != nil)
		want(what, pages(e, f), func(ev furrow.Event) bool {
			return (f.Type == "" || ev.Type == f.Type) && (f.SinceMs == nil || ev.OccurredAtMs >= *f.SinceMs)
		}, len(all))
	}
	for _, ev := range all {
		got, err := e.Events.Event(e.ctx, ev.ID)
		e.must(err)
		if got.ID != ev.ID || got.OccurredAtMs != ev.OccurredAtMs {
			e.t.Fatalf("Event(%s) = %+v, want %+v", ev.ID, got, ev)
		}
	}
}

// pages lists the events of f page by page, following each page's cursor
// until none is returned.
func pages(e *env, f furrow.EventFilter) []furrow.Event {
	var all []furrow.Event
	for n := 0; ; n++ {
		es, next, err := e.Events.Events(e.ctx, f)
		e.must(err)
		if len(es) > f.Limit || (next != nil && len(es) != f.Limit) {
			e.t.Fatalf("page %d: %d events and cursor %v for a limit of %d", n, len(es), next, f.Limit)
		}
		all = append(all, es...)
		if next == nil {
			return all
		}
		if n > 20 {
			e.t.Fatalf("paging does not end: %d pages", n)
		}
		f.Before = next
	}
}
