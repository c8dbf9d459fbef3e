package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/furrowhq/furrow/webhook"
)

// queueSize bounds the events acknowledged but not yet processed.
const queueSize = 1024

// receiver verifies, deduplicates and queues deliveries.
type receiver struct {
	secrets  []string
	verifier webhook.Verifier
	seen     *seenSet
	queue    chan webhook.Event
	done     chan struct{}
	log      *slog.Logger
}

// newReceiver accepts deliveries signed with any of secrets: one, or the
// new and the previous while the webhook's secret is rotated.
func newReceiver(secrets []string, log *slog.Logger) *receiver {
	return &receiver{
		secrets: secrets,
		seen:    newSeenSet(100_000),
		queue:   make(chan webhook.Event, queueSize),
		done:    make(chan struct{}),
		log:     log,
	}
}

// ServeHTTP answers 204 as soon as the event is verified and queued, 204
// as well for an event already seen, 401/400/413 for deliveries that fail
// verification, and 503 when the queue is full so that Furrow retries later.
func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	delivery := r.Header.Get(webhook.DeliveryHeader)
	body, err := rc.verifier.VerifyRequestAny(r, rc.secrets)
	if err != nil {
		rc.log.Warn("rejected delivery", "delivery", delivery, "err", err)
		http.Error(w, err.Error(), webhook.Status(err))
		return
	}
	var ev webhook.Event
	if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" {
		http.Error(w, "body is not a Furrow event", http.StatusBadRequest)
		return
	}
	if !rc.seen.add(ev.ID) {
		rc.log.Info("duplicate event ignored", "event", ev.ID, "delivery", delivery)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	select {
	case rc.queue <- ev:
		w.WriteHeader(http.StatusNoContent)
	default:
		rc.seen.remove(ev.ID)
		http.Error(w, "busy, retry later", http.StatusServiceUnavailable)
	}
}

// work prints queued events until stop; this is where slow work belongs.
func (rc *receiver) work(out io.Writer) {
	defer close(rc.done)
	for ev := range rc.queue {
		fmt.Fprintf(out, "%s %s farm=%s occurred_at_ms=%d data=%s\n", ev.ID, ev.Type, ev.FarmID, ev.OccurredAtMs, ev.Data)
	}
}

// stop drains the queue and waits for work to finish. Call it once, after
// the server no longer serves requests.
func (rc *receiver) stop() {
	close(rc.queue)
	<-rc.done
}

// seenSet remembers the most recent event ids, forgetting the oldest past
// its capacity. A receiver that must never process an event twice keeps the
// ids in its database, in the same transaction as its work.
type seenSet struct {
	mu    sync.Mutex
	ids   map[string]int // to the slot of the ring that holds the id
	order []string
	next  int
}

func newSeenSet(capacity int) *seenSet {
	return &seenSet{ids: make(map[string]int, capacity), order: make([]string, capacity)}
}

// add records id and reports whether it was new.
func (s *seenSet) add(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return false
	}
	// A slot left by remove may name an id added again since, in a newer
	// slot: that one is kept.
	if old := s.order[s.next]; old != "" && s.ids[old] == s.next {
		delete(s.ids, old)
	}
	s.order[s.next] = id
	s.ids[id] = s.next
	s.next = (s.next + 1) % len(s.order)
	return true
}

// remove forgets id; its slot in the ring stays until reused.
func (s *seenSet) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ids, id)
}
