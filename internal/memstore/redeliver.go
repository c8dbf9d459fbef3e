package memstore

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// redelivered reports whether e is among the events a redelivery since
// sinceMs of farm's events of types sends, before its set is fixed.
func (e *event) redelivered(farm uuid.UUID, types []string, sinceMs int64) bool {
	return e.FarmID == farm && slices.Contains(types, e.Type) && e.OccurredAtMs >= sinceMs
}

// RedeliverySet implements furrow.WebhookService.
func (s *Store) RedeliverySet(ctx context.Context, farmID uuid.UUID, types []string, sinceMs int64, limit int) (furrow.RedeliverySet, error) {
	return do(ctx, s, "RedeliverySet", []any{farmID, types, sinceMs, limit}, func() (furrow.RedeliverySet, error) {
		set := furrow.RedeliverySet{FarmID: farmID, Types: types, SinceMs: sinceMs}
		for _, e := range s.events {
			if set.Count > limit {
				break
			}
			if e.redelivered(farmID, types, sinceMs) {
				set.Count++
				set.ThroughSeq = max(set.ThroughSeq, e.seq)
			}
		}
		return set, nil
	})
}

// RedeliveryEvents implements furrow.WebhookService, oldest first by
// (OccurredAtMs, order stored) like the store.
func (s *Store) RedeliveryEvents(ctx context.Context, set furrow.RedeliverySet, after *furrow.Cursor, limit int) ([]furrow.Event, *furrow.Cursor, error) {
	res, err := do(ctx, s, "RedeliveryEvents", []any{set, after, limit}, func() (page[furrow.Event, furrow.Cursor], error) {
		var es []*event
		for _, e := range s.events {
			if e.redelivered(set.FarmID, set.Types, set.SinceMs) && e.seq <= set.ThroughSeq && (after == nil || compareAt(e.place(), *after) > 0) {
				es = append(es, e)
			}
		}
		slices.SortFunc(es, compareEvents)
		var p page[furrow.Event, furrow.Cursor]
		p.rows = []furrow.Event{}
		for i, e := range es {
			if i == furrow.ListLimit(limit) {
				c := es[i-1].place()
				p.next = &c
				break
			}
			bare := e.Event
			bare.Data, bare.TraceParent = nil, ""
			p.rows = append(p.rows, bare)
		}
		return p, nil
	})
	return res.rows, res.next, err
}
