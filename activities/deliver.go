package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/sender"
)

// DeliverInput names one delivery attempt. It holds ids only: the secret
// and the body are read afresh from the store by every attempt.
type DeliverInput struct {
	WebhookID uuid.UUID
	EventID   string
	// FirstAttempt is the chain's attempt number of this activity's first
	// attempt; later retries count on from it.
	FirstAttempt int
	// Schedule is the delay after each failed attempt of the chain.
	Schedule []furrow.Duration
	// Test marks a test delivery (furrow.IsTestDelivery): its event is a
	// stored webhook.test event, and it is sent even to a disabled webhook,
	// since its owner is trying the endpoint before enabling it again.
	Test bool `json:",omitempty"`
	// Paced makes the attempt keep to the webhook's max_per_second: it
	// takes a slot of the rate first and, when the slot is not near, sends
	// nothing and returns Throttled. Workflows set it since pacingChange.
	Paced bool `json:",omitempty"`
	// Reserved says the slot was taken by the Throttled call before this
	// one, so the attempt sends at once.
	Reserved bool `json:",omitempty"`
}

// DeliverResult is the outcome of an attempt that did not fail.
type DeliverResult struct {
	Attempt    int
	StatusCode int
	// Skipped is set when the webhook was disabled or gone, or the event
	// gone, so nothing was sent.
	Skipped bool
	// SkipReason says why, when Skipped.
	SkipReason string `json:",omitempty"`
	// Failures is the webhook's failure counter read by the attempt: the
	// greater of the count loaded before the POST and, for a 2xx, the
	// count when its row was written (see Deliver).
	Failures int
	// Throttled says the attempt sent nothing and wrote no row: the slot
	// it took of the webhook's Rate (attempts a second) comes after Wait.
	// It is not an attempt of the chain; the workflow waits and makes it
	// then, with Reserved.
	Throttled bool            `json:",omitempty"`
	Wait      furrow.Duration `json:",omitempty"`
	Rate      float64         `json:",omitempty"`
}

// Deliver makes one attempt to POST the event to the webhook and writes one
// attempt row. A 2xx answer or a skip returns a result; any other outcome
// returns a temporal ApplicationError of type ErrorTypeRetryable (with the
// schedule's NextRetryDelay) or ErrorTypeRejected (non-retryable), whose
// details hold the attempt number and the answer's status code (0 when
// none), and whose message is at most MaxErrorText bytes. Errors never
// include the secret.
func (a *Activities) Deliver(ctx context.Context, in DeliverInput) (DeliverResult, error) {
	attempt := in.FirstAttempt + int(activity.GetInfo(ctx).Attempt) - 1
	res := DeliverResult{Attempt: attempt}
	w, e, body, skip, err := a.load(ctx, in)
	if err != nil {
		err = attemptError(ErrorTypeUnsent, in.Schedule, attempt, 0, "could not load the delivery", err)
		a.observeUnsent(in, attempt, err)
		return res, err
	}
	row := furrow.Attempt{DeliveryID: uuid.New(), WebhookID: in.WebhookID, EventID: in.EventID, Attempt: attempt}
	if skip != "" {
		row.Error, row.AtMs = skip, furrow.Millis(a.Clock.Now())
		a.record(ctx, row)
		a.observeSkip(in)
		res.Skipped, res.SkipReason = true, skip
		return res, nil
	}
	res.Failures = w.ConsecutiveFailures
	wait, admitted := a.pace(ctx, in, w, row.DeliveryID)
	if wait > 0 {
		a.holdOld(ctx, in, e, wait) // the next read comes after the wait
		res.Throttled, res.Wait, res.Rate = true, furrow.Duration(wait), *w.MaxPerSecond
		return res, nil
	}
	sent := a.post(ctx, w, in.EventID, row.DeliveryID, body, a.wentOut(ctx, w.ID, row.DeliveryID, admitted))
	row.StatusCode, row.ResponseBody, row.Error = sent.status, sent.body, sent.errText
	row.SignedWith = sent.signedWith
	row.DurationMs, row.AtMs = sent.duration.Milliseconds(), furrow.Millis(sent.at)
	// A failed chain may have been counted while the POST waited for its
	// answer, by a write that found no row of this delivery: the count read
	// as the row goes in is taken too, so that the delivered chain is
	// reported. The store orders that write and this row: either the write
	// sees the row and counts nothing, or the row reads the count
	// (furrow.WebhookService.SetWebhookState).
	res.Failures = max(res.Failures, a.record(ctx, row))
	a.logger().InfoContext(ctx, "delivery attempt", "webhook_id", in.WebhookID, "event_id", in.EventID,
		"attempt", attempt, "status", sent.status, "error", sent.errText, "duration_ms", row.DurationMs)
	res.StatusCode = sent.status
	err = classify(in.Schedule, attempt, sent)
	a.observeAttempt(in, attempt, sent.duration, err, e.OccurredAtMs)
	return res, err
}

// load reads the webhook and the event with the body to send, or says why
// the attempt is skipped.
func (a *Activities) load(ctx context.Context, in DeliverInput) (furrow.Webhook, furrow.Event, []byte, string, error) {
	p, err := a.Webhooks.AttemptParts(ctx, in.WebhookID, in.EventID, in.Test)
	switch {
	case err != nil:
		return p.Webhook, p.Event, nil, "", err
	case !p.WebhookFound:
		return p.Webhook, p.Event, nil, furrow.SkipWebhookDeleted, nil
	case !p.Webhook.Enabled && !in.Test:
		return p.Webhook, p.Event, nil, furrow.SkipWebhookDisabled, nil
	case !p.EventFound:
		return p.Webhook, p.Event, nil, furrow.SkipEventDeleted, nil
	}
	a.holdOld(ctx, in, p.Event, 0)
	body, err := json.Marshal(p.Event)
	return p.Webhook, p.Event, body, "", err
}

// holdAge is the age past which an attempt holds its event from retention:
// only a redelivered chain, or one an operator replays by a reset, reads
// an event that old, and its day may pass retention before it ends.
const holdAge = furrow.AttemptRetention / 2

// holdOld holds e from retention for the rest of in's chain, after wait,
// when it is past holdAge. The event is there now: a failed hold is logged
// and the attempt goes on.
func (a *Activities) holdOld(ctx context.Context, in DeliverInput, e furrow.Event, wait time.Duration) {
	now := a.Clock.Now()
	if a.Retention == nil || now.Sub(time.UnixMilli(e.OccurredAtMs)) < holdAge {
		return
	}
	until := now.Add(wait + furrow.ChainSpan(furrow.TimeDurations(in.Schedule)))
	if err := a.Retention.HoldEventDays(ctx, []furrow.Event{e}, until); err != nil {
		a.logger().WarnContext(ctx, "could not hold an old event from retention", "event_id", e.ID, "error", err)
	}
}

// sent is what one POST produced.
type sent struct {
	at       time.Time
	duration time.Duration
	status   int
	body     string
	errText  string
	timeout  bool
	// signedWith lists the versions of the secrets that signed the
	// request, X-Service-Signature's signer first; none when it was not
	// built.
	signedWith []int
}

// post sends body with every delivery header, signed over exactly those
// bytes, and reads at most furrow.MaxResponseBody of the answer. went, when
// not nil, is called once, as soon as the request is written (or the POST
// ends without it).
func (a *Activities) post(ctx context.Context, w furrow.Webhook, eventID string, deliveryID uuid.UUID, body []byte, went func()) sent {
	ctx, cancel := context.WithTimeout(ctx, furrow.DeliveryTimeout)
	defer cancel()
	if went != nil {
		went = sync.OnceFunc(went)
		defer went()
		ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				went()
			}
		}})
	}
	s := sent{at: a.Clock.Now()}
	signers := w.SigningSecrets(s.at)
	d := sender.Delivery{URL: w.URL, Secret: w.Secret, EventID: eventID, DeliveryID: deliveryID.String(), At: s.at, Body: body}
	if len(signers) > 1 {
		d.Previous = signers[0].Secret
	}
	req, err := d.Request(ctx)
	if err != nil {
		s.errText = "invalid endpoint address"
		return s
	}
	s.signedWith = furrow.Versions(signers)
	resp, err := a.client().Do(req)
	if err != nil {
		s.duration = a.Clock.Now().Sub(s.at)
		s.timeout = errors.Is(err, context.DeadlineExceeded) || isTimeout(err)
		s.errText = transportError(err, s.timeout)
		return s
	}
	defer resp.Body.Close()
	if resp.StatusCode < 100 || resp.StatusCode > 599 {
		// Go reads any three digits as a status; one outside HTTP's range
		// is a malformed answer, as a status of other length is to Go.
		s.duration = a.Clock.Now().Sub(s.at)
		s.errText = fmt.Sprintf("connection failed: malformed HTTP status code %03d", resp.StatusCode)
		return s
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, furrow.MaxResponseBody))
	s.duration = a.Clock.Now().Sub(s.at)
	s.status, s.body = resp.StatusCode, furrow.StorableText(string(b), furrow.MaxResponseBody)
	if err != nil {
		s.errText = "reading the answer failed"
	}
	return s
}

// client returns a.HTTP with redirects turned off: a redirect is a failed
// delivery and must never be followed.
func (a *Activities) client() *http.Client {
	c := http.Client{}
	if a.HTTP != nil {
		c = *a.HTTP
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// record writes the attempt row and, for a 2xx, returns the webhook's
// failure counter read by the write (0 otherwise). A failed write is
// logged, not returned: failing the attempt would send the event again for
// a bookkeeping error.
func (a *Activities) record(ctx context.Context, row furrow.Attempt) int {
	var failures int
	var err error
	if furrow.Accepted(row.StatusCode) {
		failures, err = a.Webhooks.AddDeliveredAttempt(ctx, row)
	} else {
		err = a.Webhooks.AddAttempt(ctx, row)
	}
	if err != nil {
		a.logger().ErrorContext(ctx, "writing delivery attempt failed", "webhook_id", row.WebhookID,
			"event_id", row.EventID, "attempt", row.Attempt, "err", err)
	}
	return failures
}

// LostAttemptInput is an attempt whose activity timed out, so that it
// wrote no row: its webhook, event and number, and AtMs, when the
// workflow asked for it.
type LostAttemptInput struct {
	WebhookID uuid.UUID
	EventID   string
	Attempt   int
	AtMs      int64
}

// LostAttemptResult says whether the row was written; false when a retry
// of the call found it there.
type LostAttemptResult struct {
	Written bool
}

// RecordLostAttempt writes the row of a lost attempt (furrow.AttemptLost),
// so that the delivery log still holds every attempt. Its delivery id
// derives from the workflow run and the attempt, so a retried call writes
// it once.
func (a *Activities) RecordLostAttempt(ctx context.Context, in LostAttemptInput) (LostAttemptResult, error) {
	run := activity.GetInfo(ctx).WorkflowExecution.RunID
	id := uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "furrow:lost-attempt/%s/%d", run, in.Attempt))
	row := furrow.Attempt{DeliveryID: id, WebhookID: in.WebhookID, EventID: in.EventID, Attempt: in.Attempt,
		Error: furrow.AttemptLost, AtMs: in.AtMs}
	switch err := a.Webhooks.AddAttempt(ctx, row); furrow.ErrorCode(err) {
	case "":
	case furrow.ECONFLICT:
		return LostAttemptResult{}, nil
	default:
		return LostAttemptResult{}, fmt.Errorf("record lost attempt %d of webhook %s: %w", in.Attempt, in.WebhookID, err)
	}
	a.logger().WarnContext(ctx, "delivery attempt lost", "webhook_id", in.WebhookID, "event_id", in.EventID, "attempt", in.Attempt)
	return LostAttemptResult{Written: true}, nil
}

// classify turns a sent attempt into nil (furrow.Accepted) or an
// application error, retryable as furrow.Retried says.
func classify(schedule []furrow.Duration, attempt int, s sent) error {
	switch {
	case furrow.Accepted(s.status):
		return nil
	case furrow.Retried(s.status):
		return retryable(schedule, attempt, s.status, attemptText(s), nil)
	}
	return temporal.NewApplicationErrorWithOptions(attemptText(s), ErrorTypeRejected,
		temporal.ApplicationErrorOptions{NonRetryable: true, Details: []any{attempt, s.status}})
}

// Retried reports whether a failed attempt, as its workflow sees the
// error, leads to another attempt when one remains: an error of type
// ErrorTypeRetryable, or the activity timing out. Deliver's other errors
// are not retryable.
func Retried(err error) bool {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return !appErr.NonRetryable()
	}
	var timeout *temporal.TimeoutError
	return errors.As(err, &timeout)
}

// MaxErrorText bounds the text of an attempt's error, which workflow
// results and histories carry.
const MaxErrorText = 200

func attemptText(s sent) string {
	if s.status == 0 {
		return furrow.StorableText(s.errText, MaxErrorText)
	}
	return fmt.Sprintf("endpoint answered %d", s.status)
}

// retryable returns an ErrorTypeRetryable error whose next attempt comes after
// the schedule's delay for attempt.
func retryable(schedule []furrow.Duration, attempt, status int, msg string, cause error) error {
	return attemptError(ErrorTypeRetryable, schedule, attempt, status, msg, cause)
}

// attemptError is a retried error of type typ (ErrorTypeRetryable or
// ErrorTypeUnsent) for attempt, whose details hold the attempt and status
// and whose NextRetryDelay is the schedule's.
func attemptError(typ string, schedule []furrow.Duration, attempt, status int, msg string, cause error) error {
	opts := temporal.ApplicationErrorOptions{Cause: cause, Details: []any{attempt, status}}
	if attempt >= 1 && attempt <= len(schedule) {
		opts.NextRetryDelay = time.Duration(schedule[attempt-1])
	}
	return temporal.NewApplicationErrorWithOptions(msg, typ, opts)
}

// Unsent reports whether err is an attempt that was never made
// (ErrorTypeUnsent).
func Unsent(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == ErrorTypeUnsent
}

// transportError describes a failed request without the URL, which the
// *url.Error would otherwise repeat, in at most furrow.MaxAttemptError
// bytes.
func transportError(err error, timeout bool) string {
	if timeout {
		return fmt.Sprintf("timeout after %s", furrow.DeliveryTimeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return furrow.StorableText("connection failed: "+err.Error(), furrow.MaxAttemptError)
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}
