package memstore

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/furrowhq/furrow"
)

// event is a stored event with its place in the outbox.
type event struct {
	furrow.Event
	seq        int64
	dispatched bool
	lease
}

// insertEvent stores e as waiting for the dispatcher when a webhook of its
// farm subscribes to its type, enabled or not, and as dispatched already
// otherwise, as the store does.
func (s *Store) insertEvent(e furrow.Event) furrow.OutboxEvent {
	pending := slices.ContainsFunc(s.webhooks, func(w *webhook) bool { return w.FarmID == e.FarmID && w.Subscribes(e.Type) })
	stored := &event{Event: e, seq: s.next(), dispatched: !pending}
	stored.Data = bytes.Clone(e.Data)
	s.events = append(s.events, stored)
	s.eventIDs[e.ID] = stored
	return furrow.OutboxEvent{Event: e, Pending: pending}
}

// copied returns the event with its own copy of the data.
func (e *event) copied() furrow.Event {
	out := e.Event
	out.Data = bytes.Clone(e.Data)
	return out
}

// CreateEvent implements furrow.EventService.
func (s *Store) CreateEvent(ctx context.Context, e furrow.Event) (furrow.OutboxEvent, error) {
	return do(ctx, s, "CreateEvent", []any{e}, func() (furrow.OutboxEvent, error) {
		if e.ID == "" {
			e.ID = furrow.NewEventID()
		}
		if e.OccurredAtMs == 0 {
			e.OccurredAtMs = s.nowMs()
		}
		if len(e.Data) == 0 {
			e.Data = json.RawMessage("{}")
		}
		if _, err := furrow.ParseEventID(e.ID); err != nil {
			return furrow.OutboxEvent{}, err
		}
		switch _, taken := s.eventIDs[e.ID]; {
		case !furrow.IsEventType(e.Type):
			return furrow.OutboxEvent{}, furrow.Errorf(furrow.EINVALID, "The event type is unknown.")
		case taken:
			return furrow.OutboxEvent{}, furrow.Errorf(furrow.ECONFLICT, "An event with this id already exists.")
		}
		if _, ok := s.farms[e.FarmID]; !ok {
			return furrow.OutboxEvent{}, notFound("farm")
		}
		return s.insertEvent(e), nil
	})
}

// Event implements furrow.EventService.
func (s *Store) Event(ctx context.Context, id string) (furrow.Event, error) {
	return do(ctx, s, "Event", []any{id}, func() (furrow.Event, error) {
		if _, err := furrow.ParseEventID(id); err != nil {
			return furrow.Event{}, err
		}
		e, ok := s.eventIDs[id]
		if !ok {
			return furrow.Event{}, notFound("event")
		}
		return e.copied(), nil
	})
}

// Events implements furrow.EventService, newest first by (OccurredAtMs,
// order stored) like the store, a page of furrow.ListLimit(f.Limit) at a
// time.
func (s *Store) Events(ctx context.Context, f furrow.EventFilter) ([]furrow.Event, *furrow.Cursor, error) {
	res, err := do(ctx, s, "Events", []any{f}, func() (page[furrow.Event, furrow.Cursor], error) {
		var es []*event
		for _, e := range s.events {
			if e.FarmID == f.FarmID && (f.Type == "" || e.Type == f.Type) && (f.SinceMs == nil || e.OccurredAtMs >= *f.SinceMs) {
				es = append(es, e)
			}
		}
		var p page[furrow.Event, furrow.Cursor]
		p.rows, p.next = newestPage(es, (*event).place, f.Before, f.Limit, (*event).copied)
		return p, nil
	})
	return res.rows, res.next, err
}

// place is the event's place in the lists: its time, then the order
// stored.
func (e *event) place() furrow.Cursor { return furrow.Cursor{TimestampMs: e.OccurredAtMs, Seq: e.seq} }

// compareEvents orders events by time, then by the order stored.
func compareEvents(a, b *event) int { return compareAt(a.place(), b.place()) }
