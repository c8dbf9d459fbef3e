package live

import "time"

const (
	// dedupWindow is how long a connection remembers a publication it was
	// sent. The copies of one publication leave together: one right after
	// the other in one hub delivery in process, and through Redis as
	// adjacent PUBLISHes of one pipeline. Redis runs a client's commands in
	// order, those already read all in one go, so other clients' commands
	// (any number of other processes' PUBLISHes) come between the two only
	// when the pipeline is split across reads, and then for one turn of
	// Redis's event loop, or for as long as the network holds the rest of
	// the pipeline (a lost segment is sent again after 200 ms, then 400 ms).
	// The subscriber connection carries the messages in the order Redis ran
	// them, and the hub delivers them in that order. So the copies reach a
	// connection milliseconds apart, however many messages come in between;
	// a second also covers a segment lost twice.
	dedupWindow = time.Second
	// dedupCap bounds the publications a connection remembers, and so its
	// memory (some 50 bytes each, allocated as they come): more than a farm
	// of a thousand devices, each reporting twice a second, sends within
	// dedupWindow.
	dedupCap = 2048
)

// recentIDs remembers the ids of the publications sent to a connection,
// so that one matching several of its topics is sent to it once: those
// sent within dedupWindow, at most dedupCap of them, oldest first in a
// ring that grows as needed, and as a set. The zero value is empty.
//
// The bound: a publication is sent once when its copies reach the
// connection less than dedupWindow apart and fewer than dedupCap other
// publications reach it within dedupWindow. How many come between the
// copies does not matter.
type recentIDs struct {
	ring    []sentID
	head, n int
	set     map[uint64]struct{}
}

// sentID is a publication sent, and when.
type sentID struct {
	id uint64
	at time.Time
}

// seen reports whether publication id was sent within dedupWindow before
// now; if not, it remembers id as sent now.
func (r *recentIDs) seen(id uint64, now time.Time) bool {
	for r.n > 0 && now.Sub(r.ring[r.head].at) >= dedupWindow {
		r.pop()
	}
	if _, ok := r.set[id]; ok {
		return true
	}
	if r.n == dedupCap {
		r.pop()
	}
	r.push(sentID{id: id, at: now})
	return false
}

// push adds e as the newest, growing the ring when it is full.
func (r *recentIDs) push(e sentID) {
	if r.n == len(r.ring) {
		grown := make([]sentID, min(max(2*len(r.ring), 16), dedupCap))
		for i := range r.n {
			grown[i] = r.ring[(r.head+i)%len(r.ring)]
		}
		r.ring, r.head = grown, 0
	}
	if r.set == nil {
		r.set = make(map[uint64]struct{})
	}
	r.ring[(r.head+r.n)%len(r.ring)] = e
	r.n++
	r.set[e.id] = struct{}{}
}

// pop forgets the oldest.
func (r *recentIDs) pop() {
	delete(r.set, r.ring[r.head].id)
	r.ring[r.head] = sentID{}
	r.head = (r.head + 1) % len(r.ring)
	r.n--
}
