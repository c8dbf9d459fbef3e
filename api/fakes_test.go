package api

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

// fakeStore is an in-memory stand-in for every service the API uses.
type fakeStore struct {
	mu    sync.Mutex
	clock furrow.Clock

	users    map[string]furrow.User // by token
	roles    map[[2]uuid.UUID]furrow.Role
	devices  map[uuid.UUID]furrow.Device
	keys     map[furrow.SecretHash]uuid.UUID // device key's hash -> device
	once     map[onceKey]onceEntry
	readings []furrow.Reading
	events   []furrow.Event
	webhooks map[uuid.UUID]furrow.Webhook
	hookSeq  []uuid.UUID // webhook ids, oldest first
	attempts []furrow.Attempt

	failReadings error // returned by CreateReading when set
	panicReading bool
	lastFilter   furrow.ReadingFilter
	published    []furrow.LiveReading
	wakes        int
	keyLookups   int // DeviceByKey calls
	keyChecks    int // CreateReading calls, which check the key
	reenabled    []uuid.UUID
	flipOnSignal bool // Reenable enables the webhook at once
	redelivered  []furrow.Event
}

func newFakeStore(clock furrow.Clock) *fakeStore {
	return &fakeStore{
		clock: clock, users: map[string]furrow.User{}, roles: map[[2]uuid.UUID]furrow.Role{},
		devices: map[uuid.UUID]furrow.Device{}, keys: map[furrow.SecretHash]uuid.UUID{},
		webhooks: map[uuid.UUID]furrow.Webhook{},
	}
}

var errNotFound = furrow.Errorf(furrow.ENOTFOUND, "The resource was not found.")

func (f *fakeStore) CreateUser(_ context.Context, email string) (furrow.User, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range f.users {
		if u.Email == email {
			return furrow.User{}, "", furrow.Errorf(furrow.ECONFLICT, "The user already exists.")
		}
	}
	u := furrow.User{ID: uuid.New(), Email: email}
	token := furrow.NewUserToken()
	f.users[token] = u
	return u, token, nil
}

func (f *fakeStore) UserByToken(_ context.Context, token string) (furrow.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.users[token]
	if !ok {
		return furrow.User{}, furrow.Errorf(furrow.EUNAUTHORIZED, "The token is invalid.")
	}
	return u, nil
}

func (f *fakeStore) CreateFarm(_ context.Context, owner uuid.UUID, name string) (furrow.Farm, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	farm := furrow.Farm{ID: uuid.New(), Name: name}
	f.roles[[2]uuid.UUID{farm.ID, owner}] = furrow.RoleOwner
	return farm, nil
}

func (f *fakeStore) AddMember(_ context.Context, m furrow.Member) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := [2]uuid.UUID{m.FarmID, m.UserID}
	if !f.userExists(m.UserID) {
		return errNotFound
	}
	if _, ok := f.roles[k]; ok {
		return furrow.Errorf(furrow.ECONFLICT, "The user is already a member of the farm.")
	}
	f.roles[k] = m.Role
	return nil
}

func (f *fakeStore) userExists(id uuid.UUID) bool {
	for _, u := range f.users {
		if u.ID == id {
			return true
		}
	}
	return false
}

func (f *fakeStore) MemberRole(_ context.Context, farmID, userID uuid.UUID) (furrow.Role, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.roles[[2]uuid.UUID{farmID, userID}]
	if !ok {
		return 0, errNotFound
	}
	return r, nil
}

func (f *fakeStore) CreateDevice(_ context.Context, farmID uuid.UUID, name string) (furrow.Device, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := furrow.Device{ID: uuid.New(), FarmID: farmID, Name: name}
	f.devices[d.ID] = d
	key := furrow.NewDeviceKey()
	f.keys[furrow.HashSecret(key)] = d.ID
	return d, key, nil
}

func (f *fakeStore) RotateDeviceKey(_ context.Context, farmID, deviceID uuid.UUID) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d, ok := f.devices[deviceID]; !ok || d.FarmID != farmID {
		return "", errNotFound
	}
	for k, id := range f.keys {
		if id == deviceID {
			delete(f.keys, k)
		}
	}
	key := furrow.NewDeviceKey()
	f.keys[furrow.HashSecret(key)] = deviceID
	return key, nil
}

func (f *fakeStore) DeviceByKey(_ context.Context, key furrow.SecretHash) (furrow.Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keyLookups++
	id, ok := f.keys[key]
	if !ok {
		return furrow.Device{}, errNotFound
	}
	return f.devices[id], nil
}

func (f *fakeStore) DeviceByID(_ context.Context, id uuid.UUID) (furrow.Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.devices[id]
	if !ok {
		return furrow.Device{}, errNotFound
	}
	return d, nil
}

func (f *fakeStore) Devices(_ context.Context, farmID uuid.UUID) ([]furrow.Device, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []furrow.Device
	for _, d := range f.devices {
		if d.FarmID == farmID {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b furrow.Device) int { return compareStrings(a.Name, b.Name) })
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (f *fakeStore) MarkOffline(context.Context, time.Duration, int) ([]furrow.Event, error) {
	return nil, errors.New("not used by the API")
}

// onceKey and onceEntry are an idempotency key of a device and what it
// stored.
type onceKey struct {
	device uuid.UUID
	key    string
}

type onceEntry struct {
	fingerprint [32]byte
	reading     furrow.Reading
}

func (f *fakeStore) CreateReadingOnce(ctx context.Context, r furrow.Reading, key *furrow.SecretHash, once furrow.Idempotency) (furrow.Reading, furrow.OutboxEvent, bool, error) {
	f.mu.Lock()
	k := onceKey{r.DeviceID, once.Key}
	e, ok := f.once[k]
	f.mu.Unlock()
	now := furrow.Millis(f.clock.Now())
	if ok && e.reading.Timestamp >= now-furrow.IdempotencyWindow.Milliseconds() {
		if e.fingerprint != once.Fingerprint {
			return furrow.Reading{}, furrow.OutboxEvent{}, false, furrow.Errorf(furrow.ECONFLICT, "The idempotency key was used with another body.")
		}
		return e.reading, furrow.OutboxEvent{}, true, nil
	}
	stored, ev, err := f.CreateReading(ctx, r, key)
	if err != nil {
		return stored, ev, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.once == nil {
		f.once = map[onceKey]onceEntry{}
	}
	f.once[k] = onceEntry{once.Fingerprint, stored}
	return stored, ev, false, nil
}

// pending tells whether a webhook of the farm subscribes to the type, as
// the outbox does.
func (f *fakeStore) pending(farm uuid.UUID, typ string) bool {
	for _, w := range f.webhooks {
		if w.FarmID == farm && w.Subscribes(typ) {
			return true
		}
	}
	return false
}

func (f *fakeStore) CreateReading(_ context.Context, r furrow.Reading, key *furrow.SecretHash) (furrow.Reading, furrow.OutboxEvent, error) {
	if f.panicReading {
		panic("store exploded")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failReadings != nil {
		return furrow.Reading{}, furrow.OutboxEvent{}, f.failReadings
	}
	f.keyChecks++
	d, ok := f.devices[r.DeviceID]
	if !ok || d.FarmID != r.FarmID {
		return furrow.Reading{}, furrow.OutboxEvent{}, errNotFound
	}
	if key != nil && f.keys[*key] != r.DeviceID {
		return furrow.Reading{}, furrow.OutboxEvent{}, furrow.Errorf(furrow.EUNAUTHORIZED, "The key is no longer the device's.")
	}
	r.Timestamp = furrow.Millis(f.clock.Now())
	f.readings = append(f.readings, r)
	d.LastSeenMs = &r.Timestamp
	f.devices[r.DeviceID] = d
	ev := furrow.NewMetricValueEvent(uuid.New(), r)
	return r, furrow.OutboxEvent{Event: ev, Pending: f.pending(r.FarmID, ev.Type)}, nil
}

// Readings pages newest first; the cursor's Seq is the index in f.readings.
func (f *fakeStore) Readings(_ context.Context, flt furrow.ReadingFilter) ([]furrow.Reading, *furrow.ReadingCursor, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastFilter = flt
	var out []furrow.Reading
	var last furrow.ReadingCursor
	for i := len(f.readings) - 1; i >= 0; i-- {
		r := f.readings[i]
		switch {
		case r.FarmID != flt.FarmID,
			flt.DeviceID != nil && r.DeviceID != *flt.DeviceID,
			flt.MetricID != nil && r.MetricID != *flt.MetricID,
			flt.SinceMs != nil && r.Timestamp < *flt.SinceMs,
			flt.Before != nil && int64(i) >= flt.Before.Seq:
			continue
		}
		if len(out) == flt.Limit {
			return out, &last, nil
		}
		out = append(out, r)
		last = furrow.ReadingCursor{TimestampMs: r.Timestamp, Seq: int64(i)}
	}
	return out, nil, nil
}

func (f *fakeStore) CreateEvent(_ context.Context, e furrow.Event) (furrow.OutboxEvent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e.ID == "" {
		e.ID = furrow.NewEventID()
	}
	if e.OccurredAtMs == 0 {
		e.OccurredAtMs = furrow.Millis(f.clock.Now())
	}
	f.events = append(f.events, e)
	return furrow.OutboxEvent{Event: e, Pending: f.pending(e.FarmID, e.Type)}, nil
}

func (f *fakeStore) Event(_ context.Context, id string) (furrow.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.events {
		if e.ID == id {
			return e, nil
		}
	}
	return furrow.Event{}, errNotFound
}

func (f *fakeStore) Events(_ context.Context, flt furrow.EventFilter) ([]furrow.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []furrow.Event
	for i := len(f.events) - 1; i >= 0 && len(out) < flt.Limit; i-- {
		e := f.events[i]
		if e.FarmID == flt.FarmID && (flt.Type == "" || e.Type == flt.Type) &&
			(flt.SinceMs == nil || e.OccurredAtMs >= *flt.SinceMs) {
			out = append(out, e)
		}
	}
	return out, nil
}

func (f *fakeStore) CreateWebhook(_ context.Context, w furrow.Webhook) (furrow.Webhook, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.webhooks[w.ID] = w
	f.hookSeq = append(f.hookSeq, w.ID)
	return w, nil
}

func (f *fakeStore) Webhook(_ context.Context, farmID, id uuid.UUID) (furrow.Webhook, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.webhooks[id]
	if !ok || w.FarmID != farmID {
		return furrow.Webhook{}, errNotFound
	}
	return w, nil
}

func (f *fakeStore) WebhookByID(_ context.Context, id uuid.UUID) (furrow.Webhook, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.webhooks[id]
	if !ok {
		return furrow.Webhook{}, errNotFound
	}
	return w, nil
}

func (f *fakeStore) Webhooks(_ context.Context, farmID uuid.UUID) ([]furrow.Webhook, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []furrow.Webhook
	for _, id := range f.hookSeq {
		if w, ok := f.webhooks[id]; ok && w.FarmID == farmID {
			out = append(out, w)
		}
	}
	return out, nil
}

func (f *fakeStore) DeleteWebhook(_ context.Context, farmID, id uuid.UUID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if w, ok := f.webhooks[id]; !ok || w.FarmID != farmID {
		return errNotFound
	}
	delete(f.webhooks, id)
	return nil
}

func (f *fakeStore) SetWebhookState(_ context.Context, id uuid.UUID, enabled bool, failures int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	w, ok := f.webhooks[id]
	if !ok {
		return errNotFound
	}
	w.Enabled, w.ConsecutiveFailures = enabled, failures
	f.webhooks[id] = w
	return nil
}

func (f *fakeStore) AddAttempt(_ context.Context, a furrow.Attempt) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts = append(f.attempts, a)
	return nil
}

func (f *fakeStore) Attempts(_ context.Context, webhookID uuid.UUID, limit int) ([]furrow.Attempt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []furrow.Attempt
	for i := len(f.attempts) - 1; i >= 0 && len(out) < limit; i-- {
		if f.attempts[i].WebhookID == webhookID {
			out = append(out, f.attempts[i])
		}
	}
	return out, nil
}

func (f *fakeStore) PruneAttempts(context.Context, time.Time) (int64, error) {
	return 0, errors.New("not used by the API")
}

func (f *fakeStore) Publish(r furrow.LiveReading) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.published = append(f.published, r)
}

func (f *fakeStore) Wake() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wakes++
}

func (f *fakeStore) Reenable(ctx context.Context, id uuid.UUID) error {
	f.mu.Lock()
	f.reenabled = append(f.reenabled, id)
	flip := f.flipOnSignal
	f.mu.Unlock()
	if flip {
		return f.SetWebhookState(ctx, id, true, 0)
	}
	return nil
}

func (f *fakeStore) Redeliver(_ context.Context, _ furrow.Webhook, events []furrow.Event) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.redelivered = append(f.redelivered, events...)
	return len(events), nil
}

// Compile-time checks that fakeStore is every service.
var (
	_ furrow.UserService     = (*fakeStore)(nil)
	_ furrow.FarmService     = (*fakeStore)(nil)
	_ furrow.DeviceService   = (*fakeStore)(nil)
	_ furrow.ReadingService  = (*fakeStore)(nil)
	_ furrow.EventService    = (*fakeStore)(nil)
	_ furrow.WebhookService  = (*fakeStore)(nil)
	_ furrow.Publisher       = (*fakeStore)(nil)
	_ furrow.Waker           = (*fakeStore)(nil)
	_ furrow.DeliveryControl = (*fakeStore)(nil)
)
