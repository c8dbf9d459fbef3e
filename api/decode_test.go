package api

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/furrowhq/furrow"
)

const testDevice = "5f0c6a1e-2b7d-4c3a-9e8f-1a2b3c4d5e6f"

func TestDecodeReadingInAccepts(t *testing.T) {
	cases := []struct{ body, value string }{
		{`{"device_id":"` + testDevice + `","metric_id":220,"value":21.50}`, "21.50"},
		{`{"device_id":"` + testDevice + `","metric_id":220,"value": -0.0e+3 }`, "-0.0e+3"},
		{`{"device_id":"` + testDevice + `","metric_id":2147483647,"value":"wet"}`, "wet"},
		{` {"value":"a\u00e9\"b","timestamp":1,"metric_id":1,"device_id":"` + strings.ToUpper(testDevice) + `"} `, "a\u00e9\"b"},
		{`{"device_id":"` + testDevice + `","metric_id":220,"value":"` + strings.Repeat("9", furrow.MaxValueBytes) + `"}`, strings.Repeat("9", furrow.MaxValueBytes)},
		{`{"Device_ID":"x","device_id":"` + testDevice + `","metric_id":220,"value":1}`, "1"},
	}
	for _, c := range cases {
		in, err := DecodeReadingIn([]byte(c.body))
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		if in.DeviceID.String() != testDevice || in.Value != c.value {
			t.Fatalf("%s: got %+v, want device %s value %q", c.body, in, testDevice, c.value)
		}
	}
}

func TestDecodeReadingInRejects(t *testing.T) {
	ok := func(field, raw string) string {
		f := map[string]string{"device_id": `"` + testDevice + `"`, "metric_id": "220", "value": "1"}
		f[field] = raw
		return `{"device_id":` + f["device_id"] + `,"metric_id":` + f["metric_id"] + `,"value":` + f["value"] + `}`
	}
	cases := map[string]string{
		"empty body":        ``,
		"null body":         `null`,
		"string body":       `"x"`,
		"two objects":       `{}{}`,
		"braced uuid":       ok("device_id", `"{`+testDevice+`}"`),
		"bare hex uuid":     ok("device_id", `"`+strings.ReplaceAll(testDevice, "-", "")+`"`),
		"urn uuid":          ok("device_id", `"urn:uuid:`+testDevice+`"`),
		"numeric device":    ok("device_id", `5`),
		"metric negative":   ok("metric_id", `-1`),
		"metric 220.0":      ok("metric_id", `220.0`),
		"metric 22E1":       ok("metric_id", `22E1`),
		"metric huge":       ok("metric_id", `99999999999999999999999`),
		"metric null":       ok("metric_id", `null`),
		"value array":       ok("value", `[1]`),
		"value false":       ok("value", `false`),
		"value nul":         ok("value", `"a\u0000b"`),
		"value long number": ok("value", "1"+strings.Repeat("0", furrow.MaxValueBytes)),
		"duplicate value":   `{"device_id":"` + testDevice + `","metric_id":220,"value":1,"value":2}`,
	}
	for name, body := range cases {
		_, err := DecodeReadingIn([]byte(body))
		if furrow.ErrorCode(err) != furrow.EINVALID {
			t.Errorf("%s: %s: got %v, want a bad_request error", name, body, err)
		}
	}
}

// FuzzDecodeReadingIn checks the decoder's invariants: it never panics,
// fails only with bad_request, and anything accepted is valid and keeps its
// value text.
func FuzzDecodeReadingIn(f *testing.F) {
	for _, seed := range []string{
		`{"device_id":"` + testDevice + `","metric_id":220,"value":21.50}`,
		`{"device_id":"` + testDevice + `","metric_id":220,"value":"21.50","timestamp":"1"}`,
		`{"device_id":"` + testDevice + `","metric_id":1,"value":-1e-7}`,
		`{"device_id":"` + testDevice + `","metric_id":220.5,"value":1}`,
		`{"device_id":"` + testDevice + `","metric_id":"220","value":1}`,
		`{"device_id":"` + testDevice + `","metric_id":220,"value":null}`,
		`{"device_id":"` + testDevice + `","metric_id":220,"value":"\ud800"}`,
		`{"device_id":1,"device_id":2}`,
		`{"a":{"b":[1,2,{"c":null}]}}`,
		`[]`, `{`, ``, `"`, `{"value":""}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		in, err := DecodeReadingIn(body)
		if err != nil {
			if furrow.ErrorCode(err) != furrow.EINVALID || furrow.ErrorMessage(err) == "" {
				t.Fatalf("error %v is not a bad_request with a reason", err)
			}
			return
		}
		if in.MetricID < 1 || in.Value == "" || len(in.Value) > furrow.MaxValueBytes ||
			strings.ContainsRune(in.Value, 0) || !utf8.ValidString(in.Value) {
			t.Fatalf("accepted invalid reading %+v from %q", in, body)
		}
		// Sent again as a string, the value must come back unchanged.
		again, err := DecodeReadingIn([]byte(`{"device_id":"` + in.DeviceID.String() +
			`","metric_id":` + strconv.Itoa(int(in.MetricID)) + `,"value":` + jsonString(in.Value) + `}`))
		if err != nil || again != in {
			t.Fatalf("round trip of %+v gave %+v, %v", in, again, err)
		}
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
