package furrow

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/google/uuid"
)

var appendJSONValues = []string{
	"21.50", "", "wet", `a"b\c`, "<b>&amp;</b>", "tab\there\n", "\x00\x1f\x7f",
	"é ü 😀", "\u2028\u2029", "bad \xff utf8 \xed\xa0\x80", "\ufffd", "/path",
}

// TestAppendJSONMatchesEncodingJSON: the hand-written encoders write what
// encoding/json writes for the same values.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	for _, v := range appendJSONValues {
		checkAppendJSON(t, v, 1<<31-1, 1_700_000_000_123)
	}
}

func FuzzAppendJSONMatchesEncodingJSON(f *testing.F) {
	for _, v := range appendJSONValues {
		f.Add(v, int32(220), int64(1))
	}
	f.Fuzz(func(t *testing.T, v string, metric int32, ts int64) { checkAppendJSON(t, v, metric, ts) })
}

func checkAppendJSON(t *testing.T, v string, metric int32, ts int64) {
	t.Helper()
	r := Reading{DeviceID: uuid.New(), MetricID: metric, Value: v, Timestamp: ts, FarmID: uuid.New()}
	rj := readingJSON{r.DeviceID, r.MetricID, r.Value, strconv.FormatInt(r.Timestamp, 10)}
	same := func(what string, got []byte, err error, want any) {
		t.Helper()
		w, _ := json.Marshal(want)
		if err != nil || !bytes.Equal(got, w) {
			t.Fatalf("%s of %q: got %s, %v; encoding/json writes %s", what, v, got, err, w)
		}
	}
	got, err := r.MarshalJSON()
	same("Reading", got, err, rj)
	got, err = LiveReading{r}.MarshalJSON()
	same("LiveReading", got, err, struct {
		readingJSON
		FarmID uuid.UUID `json:"farm_id"`
	}{rj, r.FarmID})
	got, err = json.Marshal(r) // through MarshalJSON, as the API writes it
	same("json.Marshal(Reading)", got, err, rj)
	d := MetricValueData{DeviceID: r.DeviceID, MetricID: metric, Value: v, Timestamp: ts}
	same("MetricValueData", d.AppendJSON([]byte{}), nil, d)
	if e := NewMetricValueEvent(uuid.New(), r); !bytes.Equal(e.Data, d.AppendJSON(nil)) {
		t.Fatalf("event data %s, want %s", e.Data, d.AppendJSON(nil))
	}
}
