package api

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// thousands writes n as the documents do, its digits in groups of three:
// 20,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 16_383: "16,383", 131_072: "131,072", 1_000_000: "1,000,000"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// operationDescription returns the description of the operation method of
// path in the document.
func operationDescription(t *testing.T, path, method string) string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var op struct {
		Description string `json:"description"`
	}
	if err := json.Unmarshal(doc.Paths[path][method], &op); err != nil || op.Description == "" {
		t.Fatalf("%s %s has no description (%v)", method, path, err)
	}
	return op.Description
}

// TestOpenAPIReadingScanBound: a page of readings filtered by a metric
// alone or by a device alone reads at most furrow.MaxScanRows of the
// farm's readings (ReadingFilter.ScanLimit), and the document says so of
// both.
func TestOpenAPIReadingScanBound(t *testing.T) {
	metric := int32(1)
	device := uuid.New()
	for _, f := range []furrow.ReadingFilter{{MetricID: &metric}, {DeviceID: &device}} {
		if got := f.ScanLimit(); got != furrow.MaxScanRows {
			t.Fatalf("ScanLimit of %+v = %d, want %d: the document's bound no longer holds", f, got, furrow.MaxScanRows)
		}
	}
	desc := operationDescription(t, "/api/farms/{farm}/readings", "get")
	for _, want := range []string{
		"filtered by `metric_id` without `device_id`",
		"by `device_id` without `metric_id`",
		"reads at most " + thousands(furrow.MaxScanRows) + " of the farm's readings",
	} {
		if !strings.Contains(desc, want) {
			t.Errorf("the listReadings description does not say %q: %q", want, desc)
		}
	}
}

// TestOpenAPIEventDataDigits: the createEvent description states the
// numeric limits furrow.CheckEventData enforces.
func TestOpenAPIEventDataDigits(t *testing.T) {
	desc := operationDescription(t, "/api/farms/{farm}/events", "post")
	for _, want := range []string{
		thousands(furrow.MaxNumericFractionDigits) + " digits after the decimal point",
		thousands(furrow.MaxNumericWholeDigits) + " before it",
	} {
		if !strings.Contains(desc, want) {
			t.Errorf("the createEvent description does not say %q: %q", want, desc)
		}
	}
}
