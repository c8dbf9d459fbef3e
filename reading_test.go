package furrow_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

func TestReadingValidate(t *testing.T) {
	ok := furrow.Reading{DeviceID: uuid.New(), MetricID: 220, Value: "21.50"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid reading: %v", err)
	}
	for want, change := range map[string]func(*furrow.Reading){
		"metric_id must be an integer": func(r *furrow.Reading) { r.MetricID = 0 },
		"must not be empty":            func(r *furrow.Reading) { r.Value = "" },
		"at most 1024 bytes":           func(r *furrow.Reading) { r.Value = strings.Repeat("x", furrow.MaxValueBytes+1) },
		"NUL":                          func(r *furrow.Reading) { r.Value = "a\x00b" },
		"UTF-8":                        func(r *furrow.Reading) { r.Value = "\xff" },
	} {
		r := ok
		change(&r)
		err := r.Validate()
		if furrow.ErrorCode(err) != furrow.EINVALID || !strings.Contains(furrow.ErrorMessage(err), want) {
			t.Errorf("%s: Validate = %v", want, err)
		}
	}
	r := ok
	r.Value = strings.Repeat("é", furrow.MaxValueBytes/2)
	if err := r.Validate(); err != nil {
		t.Fatalf("a value of exactly %d bytes: %v", furrow.MaxValueBytes, err)
	}
}

// The filters whose readings no index gives in time order, a metric alone
// or a device alone, read a bounded part of the farm's.
func TestReadingFilterScanLimit(t *testing.T) {
	device, metric := uuid.New(), int32(7)
	for _, c := range []struct {
		f    furrow.ReadingFilter
		want int
	}{
		{furrow.ReadingFilter{}, 0},
		{furrow.ReadingFilter{DeviceID: &device, MetricID: &metric}, 0},
		{furrow.ReadingFilter{MetricID: &metric}, furrow.MaxScanRows},
		{furrow.ReadingFilter{DeviceID: &device}, furrow.MaxScanRows},
		{furrow.ReadingFilter{DeviceID: &device, ScanRows: 5}, 5},
		{furrow.ReadingFilter{DeviceID: &device, MetricID: &metric, ScanRows: 5}, 0},
	} {
		if got := c.f.ScanLimit(); got != c.want {
			t.Errorf("ScanLimit of device %v metric %v scan %d = %d, want %d", c.f.DeviceID != nil, c.f.MetricID != nil, c.f.ScanRows, got, c.want)
		}
	}
}
