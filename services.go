package furrow

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// The service interfaces below are implemented by package store (PostgreSQL)
// and consumed by api, activities and the dispatcher. Unless a method says
// otherwise, a missing row is an ENOTFOUND *Error, a duplicate an ECONFLICT
// *Error, and anything else an internal error.

// UserService manages users and their bearer tokens.
type UserService interface {
	// CreateUser creates a user and returns it with its token, shown once.
	// An email CheckEmail refuses is EINVALID; a taken one is ECONFLICT.
	CreateUser(ctx context.Context, email string) (User, string, error)
	// UserByToken returns the user holding token; unknown is EUNAUTHORIZED.
	UserByToken(ctx context.Context, token string) (User, error)
}

// FarmService manages farms and their members.
type FarmService interface {
	// CreateFarm creates a farm with owner as its owner.
	CreateFarm(ctx context.Context, owner uuid.UUID, name string) (Farm, error)
	// AddMember gives a user a role on a farm; an existing member is
	// ECONFLICT and an unknown user ENOTFOUND.
	AddMember(ctx context.Context, m Member) error
	// MemberRole returns the user's role on the farm; ENOTFOUND when the
	// farm does not exist or the user is not a member.
	MemberRole(ctx context.Context, farmID, userID uuid.UUID) (Role, error)
}

// DeviceService manages devices and their keys.
type DeviceService interface {
	// CreateDevice claims a new device on a farm and returns it with its API
	// key, shown once.
	CreateDevice(ctx context.Context, farmID uuid.UUID, name string) (Device, string, error)
	// RotateDeviceKey issues a new key for the device, revoking the old one.
	RotateDeviceKey(ctx context.Context, farmID, deviceID uuid.UUID) (string, error)
	// DeviceByKey returns the device whose API key has the hash keyHash
	// (see HashSecret); ENOTFOUND if none.
	DeviceByKey(ctx context.Context, keyHash SecretHash) (Device, error)
	// DeviceByID returns a device by id, whatever its farm.
	DeviceByID(ctx context.Context, id uuid.UUID) (Device, error)
	// Devices lists the page of a farm's devices that f selects, by name
	// and then id, and the place of the next page's start (nil when no
	// device is left); an unknown farm has none.
	Devices(ctx context.Context, f DeviceFilter) ([]Device, *DevicePlace, error)
	// MarkOffline marks at most limit devices whose last reading is older
	// than now-offlineAfter and that are not yet offline, and stores one
	// device.offline event for each, in one transaction. It returns the
	// events stored.
	MarkOffline(ctx context.Context, offlineAfter time.Duration, limit int) ([]Event, error)
}

// ReadingService stores and lists readings.
type ReadingService interface {
	// CreateReading stores r (FarmID and DeviceID set by the caller), its
	// metric.value event and the device's last-seen time in one transaction,
	// and returns r with its server-assigned Timestamp and the event. A
	// non-nil keyHash (the hash of the device key presented) is checked in
	// that transaction: a key that is no longer the device's is
	// EUNAUTHORIZED and nothing is stored, so callers may authenticate keys
	// from a cache. A device that is gone is ENOTFOUND.
	CreateReading(ctx context.Context, r Reading, keyHash *SecretHash) (Reading, OutboxEvent, error)
	// CreateReadingOnce is CreateReading under an idempotency key, kept in
	// the reading's transaction: if the device used the key within the
	// IdempotencyWindow for the same body, nothing is stored and the
	// original reading is returned with replayed true (and a zero
	// OutboxEvent); for another body the error is ECONFLICT.
	CreateReadingOnce(ctx context.Context, r Reading, keyHash *SecretHash, once Idempotency) (stored Reading, ev OutboxEvent, replayed bool, err error)
	// Readings lists readings, newest first, with the cursor of the last
	// one returned (nil when there are no more).
	Readings(ctx context.Context, f ReadingFilter) ([]Reading, *Cursor, error)
}

// EventService stores farm events in the outbox and lists them.
type EventService interface {
	// CreateEvent stores e (ID, OccurredAtMs assigned when empty) in the
	// outbox and returns it.
	CreateEvent(ctx context.Context, e Event) (OutboxEvent, error)
	// Event returns one event by id.
	Event(ctx context.Context, id string) (Event, error)
	// Events lists a farm's events, newest first, and the cursor of the
	// next page (nil when none is left).
	Events(ctx context.Context, f EventFilter) ([]Event, *Cursor, error)
}

// Outbox is the dispatcher's view of undispatched events. A claimed event
// is leased to its claimer until the lease expires, is released, or the
// event is marked dispatched; only the claimer renews or releases it.
type Outbox interface {
	// ClaimEvents leases up to c.Limit undispatched events to c.Owner for
	// c.Lease, oldest first, skipping events under another lease, events
	// of c.SkipFarms and events that occurred before c.FromMs.
	ClaimEvents(ctx context.Context, c Claim) ([]Event, error)
	// RenewLeases extends owner's leases of the events by lease from now,
	// and returns how many it still held.
	RenewLeases(ctx context.Context, owner uuid.UUID, ids []string, lease time.Duration) (int, error)
	// ReleaseLeases gives owner's leases of the events back, so any
	// dispatcher may claim them at once, and returns how many it held.
	ReleaseLeases(ctx context.Context, owner uuid.UUID, ids []string) (int, error)
	// HoldEvents turns owner's live leases of the events into holds: no
	// dispatcher holds them, and no claim takes them, until each one's
	// hold has passed; then any dispatcher may. It returns how many it
	// held. An event is held when a webhook's rate has no room for its
	// start yet.
	HoldEvents(ctx context.Context, owner uuid.UUID, holds []Hold) (int, error)
	// MarkDispatched records that workflows were started for the events;
	// they are never claimed again.
	MarkDispatched(ctx context.Context, ids []string) error
}

// Hold is how long an event is kept from every claim (see
// Outbox.HoldEvents).
type Hold struct {
	EventID string
	For     time.Duration
}

// Claim asks the Outbox for events to dispatch.
type Claim struct {
	Owner     uuid.UUID     // the claiming dispatcher
	Limit     int           // at most this many events
	Lease     time.Duration // how long they stay leased unless renewed
	SkipFarms []uuid.UUID   // farms whose events are left for later
	FromMs    int64         // only events that occurred at or after it (Unix ms); 0: all
}

// WebhookService manages webhooks and their delivery log.
type WebhookService interface {
	// CreateWebhook stores w; ID, Secret, Enabled are set by the caller,
	// and the SecretVersion is 1.
	CreateWebhook(ctx context.Context, w Webhook) (Webhook, error)
	// Webhook returns a farm's webhook.
	Webhook(ctx context.Context, farmID, id uuid.UUID) (Webhook, error)
	// WebhookByID returns a webhook whatever its farm (delivery engine).
	WebhookByID(ctx context.Context, id uuid.UUID) (Webhook, error)
	// Webhooks lists a farm's webhooks, oldest first.
	Webhooks(ctx context.Context, farmID uuid.UUID) ([]Webhook, error)
	// DeleteWebhook removes a farm's webhook.
	DeleteWebhook(ctx context.Context, farmID, id uuid.UUID) error
	// RotateWebhookSecret makes secret the farm's webhook's current secret
	// and adds one to its SecretVersion. With an overlap above zero the
	// secret it replaces becomes PreviousSecret until the store's now plus
	// overlap (a previous secret of an earlier rotation is dropped);
	// with none there is no previous secret. A previous secret whose
	// overlap has ended by the store's clock is never returned by any read.
	RotateWebhookSecret(ctx context.Context, farmID, id uuid.UUID, secret string, overlap time.Duration) (Webhook, error)
	// SetWebhookState writes the enabled flag and failure counter. Only the
	// per-webhook workflow calls it. A change made by failed chains the
	// latest of which ended at failedAtMs writes nothing, and returns
	// superseded, when an attempt answered 2xx began after it, as
	// DeliveredBetween tells: the check and the write are one transaction
	// that locks the webhook first, so that a delivery added meanwhile by
	// AddDeliveredAttempt either is seen by the check or reads the count
	// written. failedAtMs 0 checks nothing.
	SetWebhookState(ctx context.Context, id uuid.UUID, enabled bool, failures int, failedAtMs int64) (superseded bool, err error)
	// TransitionWebhook writes t's enabled flag and failure counter, its
	// Seq, time and cause as the webhook's StateSeq, StateChangedAtMs and
	// StateCause, and stores t.Event in the outbox, in one transaction. A
	// webhook whose StateSeq is already t.Seq or more is left as it is and
	// nothing is stored: written is false, so a retried write stores one
	// event. failedAtMs guards it as it guards SetWebhookState (0 checks
	// nothing), though a transition written already is not superseded.
	// Only the per-webhook workflow calls it.
	TransitionWebhook(ctx context.Context, t WebhookTransition, failedAtMs int64) (ev OutboxEvent, written, superseded bool, err error)
	// AddAttempt appends a row to the delivery log. A row with the
	// DeliveryID, WebhookID and AtMs of one already there is ECONFLICT.
	AddAttempt(ctx context.Context, a Attempt) error
	// AddDeliveredAttempt is AddAttempt that, for a row answered 2xx,
	// returns the webhook's ConsecutiveFailures as it is once the row is
	// in (0 for another row, or when the webhook is gone): a state write
	// of SetWebhookState or TransitionWebhook guarded by a failedAtMs
	// under way is waited for, and what it wrote returned.
	AddDeliveredAttempt(ctx context.Context, a Attempt) (failures int, err error)
	// Attempts lists a webhook's attempts, newest first, and the cursor of
	// the next page (nil when none is left).
	Attempts(ctx context.Context, f AttemptFilter) ([]Attempt, *Cursor, error)
	// PruneAttempts removes attempts older than before, in bounded work.
	PruneAttempts(ctx context.Context, before time.Time) (int64, error)

	// AddTestEvent stores e, a webhook.test event (NewWebhookTestEvent),
	// addressed to its webhook only: it is never claimed by the outbox nor
	// listed with the farm's events, and is kept as long as attempts. An
	// unknown webhook is ENOTFOUND.
	AddTestEvent(ctx context.Context, webhookID uuid.UUID, e Event) error
	// AttemptParts reads what one delivery attempt sends, together: the
	// webhook by id whatever its farm, as WebhookByID, and the event by
	// id, as Event or, when test, among the webhook.test events
	// (AddTestEvent). A webhook or an event that is not there is not an
	// error: its Found flag is false. A malformed event id is EINVALID.
	AttemptParts(ctx context.Context, webhookID uuid.UUID, eventID string, test bool) (AttemptParts, error)
	// DeliveredBetween reports, for each failed chain's end in endsMs
	// (ascending), whether an attempt of the webhook answered 2xx began
	// after it and before the next end (after the last: at any time
	// since), test deliveries (AddTestEvent) excepted: where the run of
	// consecutive failed chains breaks, whatever order their reports
	// come in. Each answer is read from the first entries of an index
	// range.
	DeliveredBetween(ctx context.Context, webhookID uuid.UUID, endsMs []int64) ([]bool, error)
	// AttemptHealth summarizes the attempt log of each webhook, in the
	// order given, in one query: its attempts that sent something, over
	// the HealthWindow up to now for the counts and durations, and over
	// the whole log for the last delivery and failure.
	AttemptHealth(ctx context.Context, webhookIDs []uuid.UUID) ([]AttemptHealth, error)
	// UpdateWebhook applies p to a farm's webhook and returns it as it is
	// now.
	UpdateWebhook(ctx context.Context, farmID, id uuid.UUID, p WebhookPatch) (Webhook, error)

	// RedeliverySet fixes what a redelivery since sinceMs to a webhook of
	// the farm that subscribes to types sends (see RedeliverySet). It
	// counts at most limit+1 events, so that a far-back sinceMs costs no
	// more: a Count above limit says only that there are more.
	RedeliverySet(ctx context.Context, farmID uuid.UUID, types []string, sinceMs int64, limit int) (RedeliverySet, error)
	// RedeliveryEvents lists set's events oldest first, by OccurredAtMs
	// and then the order stored, without their data: at most limit of
	// those after the place after (nil: from the first), and the place of
	// the last one returned, from which the next page starts (nil when
	// none is left).
	RedeliveryEvents(ctx context.Context, set RedeliverySet, after *Cursor, limit int) ([]Event, *Cursor, error)
}

// AttemptParts is what one delivery attempt reads
// (WebhookService.AttemptParts). What is not there is zero.
type AttemptParts struct {
	Webhook      Webhook
	WebhookFound bool
	Event        Event
	EventFound   bool
}

// RateLimiter decides whether a credential may make one more request.
type RateLimiter interface {
	// Allow counts one request for key if it is within the limit. When it
	// is not, Allowed is false and RetryAfter says when a slot frees.
	// Rejected requests do not count. It returns, with an error, once ctx
	// ends.
	Allow(ctx context.Context, key string) (RateDecision, error)
}

// RateDecision is the answer of a RateLimiter.
type RateDecision struct {
	Allowed    bool
	RetryAfter time.Duration
}

// Publisher publishes stored readings to the live-updates bus. Publish is
// best effort: it never blocks the caller for long and never fails it.
type Publisher interface {
	Publish(r LiveReading)
}

// EventPublisher publishes stored farm events to the live-updates bus, on
// their farm's events topic. Like Publisher it is best effort. Publishers
// hand it every farm event but metric.value, which the readings topics
// carry already.
type EventPublisher interface {
	PublishEvent(e Event)
}

// Waker wakes the outbox dispatcher after events of farm were committed.
type Waker interface {
	Wake(farm uuid.UUID)
}

// DeliveryControl is the delivery engine as the API sees it.
type DeliveryControl interface {
	// Reenable sends the reenable signal to the webhook's workflow, saying
	// the API sent it.
	Reenable(ctx context.Context, webhookID uuid.UUID) error
	// Redeliver makes sure a new delivery of each event to w will start,
	// durably, and returns how many; the deliveries may start after it
	// returns.
	Redeliver(ctx context.Context, w Webhook, events []Event) (int, error)
	// TestDelivery starts the delivery of e, a stored webhook.test event,
	// to w only.
	TestDelivery(ctx context.Context, w Webhook, e Event) error
}

// WebhookControl is what the webhook owner's API asks of the delivery
// engine beyond DeliveryControl. temporal.Control implements both.
type WebhookControl interface {
	// RedeliverOnce is DeliveryControl.Redeliver under an idempotency
	// key, which names the redelivery: asked again with the key, it
	// starts nothing more.
	RedeliverOnce(ctx context.Context, w Webhook, events []Event, key string) error
	// RedeliverSince makes sure a new delivery of each event of set to w
	// will start, durably; the deliveries may start after it returns.
	// A non-empty key names the redelivery as in RedeliverOnce.
	RedeliverSince(ctx context.Context, w Webhook, set RedeliverySet, key string) error
	// WebhookDeleted tells the workflow of a webhook that was deleted to
	// end. A webhook without a running workflow is not an error.
	WebhookDeleted(ctx context.Context, webhookID uuid.UUID) error
}

// Retention removes what the service no longer needs to keep.
type Retention interface {
	// PruneEvents removes dispatched events that occurred before before, in
	// bounded work that never removes an undispatched event, and returns
	// about how many were removed.
	PruneEvents(ctx context.Context, before time.Time) (int64, error)
	// PruneReadings creates the readings partitions of the coming days
	// and, unless before is zero (keep forever), drops the whole day
	// partitions that end at or before it. It returns about how many
	// readings went.
	PruneReadings(ctx context.Context, before time.Time) (int64, error)
	// PruneIdempotencyKeys removes the idempotency keys of readings older
	// than before, of every device, and returns how many went.
	PruneIdempotencyKeys(ctx context.Context, before time.Time) (int64, error)
	// HoldEventDays keeps events from PruneEvents until until at least:
	// as long as the delivery chains started for them may read them (see
	// ChainSpan). Call it before they start.
	HoldEventDays(ctx context.Context, events []Event, until time.Time) error
}
