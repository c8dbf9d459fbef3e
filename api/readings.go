package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/furrowhq/furrow"
)

// postMetricValue stores one reading. Checks run in the documented order
// (docs/devices.md): credential, rate limit, body, device match, store.
func (s *server) postMetricValue(w http.ResponseWriter, r *http.Request) error {
	cred, err := s.authDevice(r)
	if err != nil {
		return err
	}
	if err := s.acceptReading(w, r, cred); err != nil {
		return s.recheckKey(w, r, cred, err)
	}
	return nil
}

// acceptReading runs the checks after the credential, stores the reading
// and answers 201.
func (s *server) acceptReading(w http.ResponseWriter, r *http.Request, cred deviceCredential) error {
	if err := s.rateLimit(w, r, cred.key); err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	in, err := DecodeReadingIn(body)
	if err != nil {
		return err
	}
	if in.DeviceID != cred.device.ID {
		return furrow.Errorf(furrow.EFORBIDDEN, "The device_id does not match the device of the credential.")
	}
	stored, ev, replayed, err := s.storeReading(r, furrow.Reading{
		DeviceID: in.DeviceID, MetricID: in.MetricID, Value: in.Value, FarmID: cred.device.FarmID,
	}, cred.keyHash, body)
	if err != nil {
		return err
	}
	if replayed {
		writeJSON(w, http.StatusCreated, stored)
		return nil
	}
	stored.FarmID = cred.device.FarmID
	if s.Publisher != nil {
		s.Publisher.Publish(furrow.LiveReading{Reading: stored})
	}
	if s.Waker != nil && ev.Pending {
		s.Waker.Wake(stored.FarmID)
	}
	writeJSON(w, http.StatusCreated, stored)
	return nil
}

// idempotencyHeader is the header of the IETF httpapi draft that makes a
// retried reading safe.
const idempotencyHeader = "Idempotency-Key"

// storeReading stores in, under the request's Idempotency-Key when it has
// one: a retry of the same body then answers the original reading
// (replayed) and stores nothing.
func (s *server) storeReading(r *http.Request, in furrow.Reading, keyHash *furrow.SecretHash, body []byte) (furrow.Reading, furrow.OutboxEvent, bool, error) {
	keys := r.Header.Values(idempotencyHeader)
	if len(keys) == 0 {
		stored, ev, err := s.Readings.CreateReading(r.Context(), in, keyHash)
		return stored, ev, false, err
	}
	if len(keys) > 1 || !furrow.ValidIdempotencyKey(keys[0]) {
		return furrow.Reading{}, furrow.OutboxEvent{}, false, furrow.Errorf(furrow.EINVALID,
			"The Idempotency-Key header must be given once, as 1 to %d printable ASCII characters.", furrow.MaxIdempotencyKey)
	}
	return s.Readings.CreateReadingOnce(r.Context(), in, keyHash, furrow.Idempotency{Key: keys[0], Fingerprint: sha256.Sum256(body)})
}

// rateLimit counts the request for key, setting retry-after when it is over
// the limit. A failing limiter is an internal error; wrap it in
// ratelimit.FailOpen to let requests through instead.
func (s *server) rateLimit(w http.ResponseWriter, r *http.Request, key string) error {
	return limit(w, r, s.Limiter, key, "Over the limit of requests for this credential; retry after the number of seconds in retry-after.")
}

// limit counts the request for key with l, setting retry-after and
// answering reason when it is over the limit. The refusal is a
// rateRefusal, counted in the metrics only if it is answered 429.
func limit(w http.ResponseWriter, r *http.Request, l furrow.RateLimiter, key, reason string) error {
	d, count, err := allow(r.Context(), l, key)
	if err != nil {
		return err
	}
	if d.Allowed {
		return nil
	}
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(d.RetryAfter)))
	return rateRefusal{furrow.Errorf(furrow.ERATELIMITED, "%s", reason), count}
}

// answerCounted is a limiter that counts its refusals as requests
// answered 429 (telemetry's counting limiter) and can leave that count to
// its caller: AllowUncounted returns, with a refusal, the function that
// counts it.
type answerCounted interface {
	AllowUncounted(ctx context.Context, key string) (furrow.RateDecision, func(), error)
}

// allow asks l about key; with a refusal it returns the function that
// counts it, nil when l does not count.
func allow(ctx context.Context, l furrow.RateLimiter, key string) (furrow.RateDecision, func(), error) {
	if c, ok := l.(answerCounted); ok {
		return c.AllowUncounted(ctx, key)
	}
	d, err := l.Allow(ctx, key)
	return d, nil, err
}

// rateRefusal is a rate limiter's refusal. fail calls count when it
// answers it 429; a refusal answered otherwise (401 for a cached key found
// revoked) is not counted.
type rateRefusal struct {
	err   *furrow.Error
	count func()
}

func (e rateRefusal) Error() string { return e.err.Error() }

func (e rateRefusal) Unwrap() error { return e.err }

// retryAfterSeconds rounds up to whole seconds, at least one.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// readBody reads the whole body up to MaxBodyBytes; larger is ETOOLARGE,
// unreadable EINVALID. The request's deadline then starts again
// (restartDeadline): a body sent slowly costs the server's read timeout,
// not the time the request's work has. A body that stops coming (the read
// timeout passed, the client went away) ends the request without an
// answer, as a dropped connection, which a device retries; a 400 would
// tell it to drop the reading.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	restartDeadline(w, r)
	var tooLarge *http.MaxBytesError
	switch {
	case err == nil && encoded(r):
		return nil, errEncodedBody
	case err == nil:
		return b, nil
	case errors.As(err, &tooLarge):
		return nil, furrow.Errorf(furrow.ETOOLARGE, "The body must be at most %d bytes.", s.cfg.MaxBodyBytes)
	case bodyCut(err):
		panic(http.ErrAbortHandler)
	}
	return nil, furrow.Errorf(furrow.EINVALID, "The body could not be read.")
}

// errEncodedBody refuses a compressed body: it is not JSON as sent, and
// "not valid JSON" would send its sender looking in the wrong place.
var errEncodedBody = furrow.Errorf(furrow.EINVALID, "The body must not be compressed (a Content-Encoding other than identity): send it as plain JSON.")

// encoded reports whether r's body came with a Content-Encoding, which the
// server does not undo.
func encoded(r *http.Request) bool {
	for _, v := range r.Header.Values("Content-Encoding") {
		if v = strings.TrimSpace(v); v != "" && !strings.EqualFold(v, "identity") {
			return true
		}
	}
	return false
}

// bodyCut reports whether a body read failed because the body stopped
// coming, by the read deadline or by the connection's end, rather than
// because it was malformed.
func bodyCut(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout() ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, net.ErrClosed)
}

// listReadings is the polling API: the farm's readings newest first,
// filtered by device_id, metric_id and since_ms. When more remain, the
// Furrow-Next-Cursor header holds the cursor of the next page.
func (s *server) listReadings(w http.ResponseWriter, r *http.Request) error {
	f, err := readingFilter(r)
	if err != nil {
		return err
	}
	readings, next, err := s.Readings.Readings(r.Context(), f)
	if err != nil {
		return err
	}
	setNextCursor(w, readingsList, next)
	writeJSON(w, http.StatusOK, nonNil(readings))
	return nil
}

// readingFilter reads the query of the polling API; malformed is EINVALID.
func readingFilter(r *http.Request) (furrow.ReadingFilter, error) {
	f := furrow.ReadingFilter{FarmID: currentFarm(r)}
	var err error
	if f.DeviceID, err = queryUUID(r, "device_id"); err != nil {
		return f, err
	}
	metric, ok, err := queryInt(r, "metric_id", 1, math.MaxInt32)
	if err != nil {
		return f, err
	} else if ok {
		m := int32(metric)
		f.MetricID = &m
	}
	if f.SinceMs, err = querySinceMs(r); err != nil {
		return f, err
	}
	if f.Limit, err = queryLimit(r); err != nil {
		return f, err
	}
	f.Before, err = queryCursor(r, readingsList)
	return f, err
}
