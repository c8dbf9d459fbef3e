package api

import (
	"math"
	"net/http"
	"strconv"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

// queryLimit parses ?limit=, 1..furrow.MaxListLimit,
// furrow.DefaultListLimit when absent.
func queryLimit(r *http.Request) (int, error) {
	n, ok, err := queryInt(r, "limit", 1, furrow.MaxListLimit)
	if err != nil || !ok {
		return furrow.DefaultListLimit, err
	}
	return int(n), nil
}

// queryInt parses an optional integer query parameter within [lo, hi].
func queryInt(r *http.Request, name string, lo, hi int64) (int64, bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, false, furrow.Errorf(furrow.EINVALID, "The query parameter %s must be an integer from %d to %d.", name, lo, hi)
	}
	return n, true, nil
}

// querySinceMs parses an optional ?since_ms= (epoch milliseconds, >= 0).
func querySinceMs(r *http.Request) (*int64, error) {
	n, ok, err := queryInt(r, "since_ms", 0, math.MaxInt64)
	if err != nil || !ok {
		return nil, err
	}
	return &n, nil
}

// queryUUID parses an optional uuid query parameter.
func queryUUID(r *http.Request, name string) (*uuid.UUID, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return nil, nil
	}
	id, err := furrow.ParseUUID(s)
	if err != nil {
		return nil, furrow.Errorf(furrow.EINVALID, "The query parameter %s must be a UUID.", name)
	}
	return &id, nil
}
