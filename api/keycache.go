package api

import (
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// keyCacheSize bounds the cache: one entry per device that posts, about
// 150 bytes each.
const keyCacheSize = 100_000

// keyRecheckEvery is how often a cached key refused with 429 is looked up
// again, to find it revoked.
const keyRecheckEvery = time.Second

// keyCache remembers the device of each bearer key seen, so that a reading
// costs no lookup of its key. That is safe because the store checks the key
// again in the transaction that stores the reading (see
// furrow.ReadingService.CreateReading), and every other answer given to a
// cached key is checked against the store first (recheckKey): a revoked key
// gets 401 at once and is forgotten. A 429 is the exception: a device
// looping over its limit would cost a lookup per request, so its key is
// checked at most once per keyRecheckEvery, and a revoked key gets 401
// within that on other instances; the instance that issues a device's new
// key forgets the old one at once. Entries are keyed by the key's SHA-256,
// which the caller has computed anyway for the rate-limit key.
type keyCache struct {
	mu       sync.Mutex
	entries  map[furrow.SecretHash]keyEntry
	byDevice map[uuid.UUID]furrow.SecretHash
	max      int
	// revocations counts forgetDevice calls: a lookup that began before
	// one may have read a key revoked since, so its answer is not cached.
	revocations uint64
}

// keyEntry is a cached key's device and when the store last confirmed the
// key.
type keyEntry struct {
	device    furrow.Device
	confirmed time.Time
}

func newKeyCache(max int) *keyCache {
	return &keyCache{entries: make(map[furrow.SecretHash]keyEntry), byDevice: make(map[uuid.UUID]furrow.SecretHash), max: max}
}

func (c *keyCache) get(h furrow.SecretHash) (furrow.Device, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[h]
	return e.device, ok
}

// revocation returns the count of revocations, to be given to put with
// the answer of a lookup that begins now.
func (c *keyCache) revocation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.revocations
}

// put remembers key's device, confirmed by the store at now by a lookup
// that began at revocation since (see revocation); not when a key was
// revoked meanwhile. When the cache is full an arbitrary entry makes room:
// its key costs one lookup the next time.
func (c *keyCache) put(h furrow.SecretHash, d furrow.Device, now time.Time, since uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if since != c.revocations {
		return
	}
	if _, ok := c.entries[h]; !ok && len(c.entries) >= c.max {
		for old := range c.entries {
			c.remove(old)
			break
		}
	}
	if prev, ok := c.byDevice[d.ID]; ok && prev != h {
		delete(c.entries, prev) // the device's former key
	}
	c.entries[h] = keyEntry{device: d, confirmed: now}
	c.byDevice[d.ID] = h
}

// recheckDue reports whether key was last confirmed keyRecheckEvery or
// more before now, and if so counts it as confirmed now: of concurrent
// callers, one makes the lookup.
func (c *keyCache) recheckDue(h furrow.SecretHash, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[h]
	if !ok {
		return true // forgotten meanwhile, maybe revoked: look it up
	}
	if now.Sub(e.confirmed) < keyRecheckEvery {
		return false
	}
	e.confirmed = now
	c.entries[h] = e
	return true
}

func (c *keyCache) forget(h furrow.SecretHash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(h)
}

// forgetDevice forgets the cached key of the device id, once a new key
// revoked it.
func (c *keyCache) forgetDevice(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.revocations++
	if h, ok := c.byDevice[id]; ok {
		c.remove(h)
	}
}

// remove drops the entry of h; c.mu is held.
func (c *keyCache) remove(h furrow.SecretHash) {
	if e, ok := c.entries[h]; ok && c.byDevice[e.device.ID] == h {
		delete(c.byDevice, e.device.ID)
	}
	delete(c.entries, h)
}
