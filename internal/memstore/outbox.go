package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// lease is a dispatcher's hold on an event; a zero owner with a time is a
// hold of nobody's (see HoldEvents), a zero lease none.
type lease struct {
	owner uuid.UUID
	until time.Time
}

// live tells whether the lease, or hold, lasts at now.
func (l lease) live(now time.Time) bool { return l.until.After(now) }

// ClaimEvents implements furrow.Outbox.
func (s *Store) ClaimEvents(ctx context.Context, c furrow.Claim) ([]furrow.Event, error) {
	return do(ctx, s, "ClaimEvents", []any{c}, func() ([]furrow.Event, error) {
		now := s.now()
		var free []*event
		for _, e := range s.events {
			if !e.dispatched && !e.live(now) && !slices.Contains(c.SkipFarms, e.FarmID) && e.OccurredAtMs >= c.FromMs {
				free = append(free, e)
			}
		}
		slices.SortFunc(free, compareEvents)
		var out []furrow.Event
		for _, e := range free[:min(max(c.Limit, 0), len(free))] {
			e.lease = lease{owner: c.Owner, until: now.Add(c.Lease)}
			out = append(out, e.copied())
		}
		return out, nil
	})
}

// RenewLeases implements furrow.Outbox: only leases that still hold are
// renewed.
func (s *Store) RenewLeases(ctx context.Context, owner uuid.UUID, ids []string, d time.Duration) (int, error) {
	return do(ctx, s, "RenewLeases", []any{owner, ids, d}, func() (int, error) {
		es, err := s.outboxEvents(ids)
		now, n := s.now(), 0
		for _, e := range es {
			if !e.dispatched && e.owner == owner && e.live(now) {
				e.until = now.Add(d)
				n++
			}
		}
		return n, err
	})
}

// HoldEvents implements furrow.Outbox.
func (s *Store) HoldEvents(ctx context.Context, owner uuid.UUID, holds []furrow.Hold) (int, error) {
	return do(ctx, s, "HoldEvents", []any{owner, holds}, func() (int, error) {
		now, n := s.now(), 0
		for _, h := range holds {
			es, err := s.outboxEvents([]string{h.EventID})
			if err != nil {
				return 0, err
			}
			for _, e := range es {
				if !e.dispatched && e.owner == owner && e.live(now) {
					e.lease = lease{until: now.Add(h.For)}
					n++
				}
			}
		}
		return n, nil
	})
}

// ReleaseLeases implements furrow.Outbox.
func (s *Store) ReleaseLeases(ctx context.Context, owner uuid.UUID, ids []string) (int, error) {
	return do(ctx, s, "ReleaseLeases", []any{owner, ids}, func() (int, error) {
		es, err := s.outboxEvents(ids)
		n := 0
		for _, e := range es {
			if !e.dispatched && e.owner == owner {
				e.lease = lease{}
				n++
			}
		}
		return n, err
	})
}

// MarkDispatched implements furrow.Outbox; unknown ids are ignored.
func (s *Store) MarkDispatched(ctx context.Context, ids []string) error {
	_, err := do(ctx, s, "MarkDispatched", []any{ids}, func() (none, error) {
		es, err := s.outboxEvents(ids)
		for _, e := range es {
			e.dispatched, e.lease = true, lease{}
		}
		return nil, err
	})
	return err
}

// outboxEvents returns the stored events of ids, or none and EINVALID when
// an id is malformed.
func (s *Store) outboxEvents(ids []string) ([]*event, error) {
	var out []*event
	for _, id := range ids {
		if _, err := furrow.ParseEventID(id); err != nil {
			return nil, err
		}
		if e, ok := s.eventIDs[id]; ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// OutboxState is where an event stands in the outbox.
type OutboxState struct {
	Dispatched bool
	// LeaseOwner holds a live lease of the event; uuid.Nil when none does.
	LeaseOwner uuid.UUID
	// Held says the event is held for a webhook's rate (see HoldEvents).
	Held bool
}

// OutboxState returns the state of the event id now; false if there is no
// such event. It is not a call: neither the fault hook nor the observer
// sees it.
func (s *Store) OutboxState(id string) (OutboxState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.eventIDs[id]
	if !ok {
		return OutboxState{}, false
	}
	st := OutboxState{Dispatched: e.dispatched}
	if !e.dispatched && e.live(s.now()) {
		st.LeaseOwner, st.Held = e.owner, e.owner == uuid.Nil
	}
	return st, true
}
