package api

import (
	"sync"

	"github.com/furrowhq/furrow"
)

// keyCacheSize bounds the cache: one entry per device that posts, about
// 100 bytes each.
const keyCacheSize = 100_000

// keyCache remembers the device of each bearer key seen, so that a reading
// costs no lookup of its key. That is safe because the store checks the key
// again in the transaction that stores the reading (see
// furrow.ReadingService.CreateReading), and every other answer given to a
// cached key is checked against the store first (recheckKey): a revoked key
// gets 401 at once and is forgotten. Entries are keyed by the key's SHA-256,
// which the caller has computed anyway for the rate-limit key.
type keyCache struct {
	mu      sync.Mutex
	devices map[furrow.SecretHash]furrow.Device
	max     int
}

func newKeyCache(max int) *keyCache {
	return &keyCache{devices: make(map[furrow.SecretHash]furrow.Device), max: max}
}

func (c *keyCache) get(h furrow.SecretHash) (furrow.Device, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.devices[h]
	return d, ok
}

// put remembers key's device. When the cache is full an arbitrary entry
// makes room: its key costs one lookup the next time.
func (c *keyCache) put(h furrow.SecretHash, d furrow.Device) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.devices[h]; !ok && len(c.devices) >= c.max {
		for old := range c.devices {
			delete(c.devices, old)
			break
		}
	}
	c.devices[h] = d
}

func (c *keyCache) forget(h furrow.SecretHash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.devices, h)
}
