package api

import (
	"crypto/sha256"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
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
// answering reason when it is over the limit.
func limit(w http.ResponseWriter, r *http.Request, l furrow.RateLimiter, key, reason string) error {
	d, err := l.Allow(r.Context(), key)
	if err != nil {
		return err
	}
	if d.Allowed {
		return nil
	}
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(d.RetryAfter)))
	return furrow.Errorf(furrow.ERATELIMITED, "%s", reason)
}

// retryAfterSeconds rounds up to whole seconds, at least one.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// readBody reads the whole body up to MaxBodyBytes; larger is ETOOLARGE.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, furrow.Errorf(furrow.ETOOLARGE, "The body must be at most %d bytes.", s.cfg.MaxBodyBytes)
	case err != nil:
		return nil, furrow.Errorf(furrow.EINVALID, "The body could not be read.")
	}
	return b, nil
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
