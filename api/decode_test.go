package api

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"

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

// TestDecodeReadingInReasons pins the exact reason of each rejection.
func TestDecodeReadingInReasons(t *testing.T) {
	const (
		notJSON   = "The body must be a single valid JSON object."
		notObject = "The body must be a JSON object."
		uuidStr   = "The field device_id must be a UUID string."
		uuidForm  = "The field device_id must be a UUID in the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx."
		integer   = "The field metric_id must be an integer."
		metricMax = "The field metric_id must be an integer from 1 to 2147483647."
		numOrStr  = "The field value must be a number or a string."
	)
	dev := `"device_id":"` + testDevice + `"`
	cases := []struct{ body, reason string }{
		{``, notJSON},
		{`  `, notJSON},
		{`{`, notJSON},
		{`{}{}`, notJSON},
		{`{} x`, notJSON},
		{`{"a":1,}`, notJSON},
		{`{"a" 1}`, notJSON},
		{`{"a":01}`, notJSON},
		{`{"a":1.}`, notJSON},
		{`{"a":1e}`, notJSON},
		{`{"a":-}`, notJSON},
		{`{"a":tru}`, notJSON},
		{`{"a":"\x"}`, notJSON},
		{`{"a":"\u12g4"}`, notJSON},
		{"{\"a\":\"\t\"}", notJSON},
		{`{"a":[1,]}`, notJSON},
		{`{"a":{"b"}}`, notJSON},
		{`{'a':1}`, notJSON},
		{`{"value":1,"value":2,}`, notJSON}, // invalid JSON outranks the duplicate
		{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), notJSON},
		{`{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`, notJSON},
		{`[]`, notObject},
		{` null `, notObject},
		{`"x"`, notObject},
		{`-1.5e3`, notObject},
		{strings.Repeat("[", 10000) + strings.Repeat("]", 10000), notObject},
		{`{"value":1,"metric_id":1,"value":2,"metric_id":2}`, "The field value is given more than once."},
		{`{"metric_id":1,"metric\u005fid":2}`, "The field metric_id is given more than once."},
		{`{}`, "The field device_id is required."},
		{`{"Device_ID":"` + testDevice + `"}`, "The field device_id is required."},
		{`{` + dev + `}`, "The field metric_id is required."},
		{`{` + dev + `,"metric_id":1}`, "The field value is required."},
		{`{"device_id":null}`, uuidStr},
		{`{"device_id":["` + testDevice + `"]}`, uuidStr},
		{`{"device_id":""}`, uuidForm},
		{`{"device_id":"` + testDevice[:35] + `g"}`, uuidForm},
		{`{"device_id":"` + testDevice[:35] + "\xff" + `"}`, uuidForm},
		{`{"device_id":"` + testDevice + ` "}`, uuidForm},
		{`{` + dev + `,"metric_id":"1"}`, integer},
		{`{` + dev + `,"metric_id":true}`, integer},
		{`{` + dev + `,"metric_id":{}}`, integer},
		{`{` + dev + `,"metric_id":1E2}`, integer},
		{`{` + dev + `,"metric_id":-0}`, metricMax},
		{`{` + dev + `,"metric_id":-99999999999999999999}`, metricMax},
		{`{` + dev + `,"metric_id":9999999999}`, metricMax},
		{`{` + dev + `,"metric_id":2147483648}`, metricMax},
		{`{` + dev + `,"metric_id":1,"value":null}`, numOrStr},
		{`{` + dev + `,"metric_id":1,"value":{"a":1}}`, numOrStr},
		{`{` + dev + `,"metric_id":1,"value":""}`, "The field value must not be empty."},
		{`{` + dev + `,"metric_id":1,"value":"` + strings.Repeat("é", 513) + `"}`, "The field value must be at most 1024 bytes."},
		{`{` + dev + `,"metric_id":1,"value":"a\u0000"}`, "The field value must not contain a NUL character."},
	}
	for _, c := range cases {
		_, err := DecodeReadingIn([]byte(c.body))
		if furrow.ErrorCode(err) != furrow.EINVALID || furrow.ErrorMessage(err) != c.reason {
			t.Errorf("%.80q: got %v, want %q", c.body, err, c.reason)
		}
		if _, err := decodeReadingInStdlib([]byte(c.body)); furrow.ErrorMessage(err) != c.reason {
			t.Errorf("%.80q: the reference gives %v, want %q", c.body, err, c.reason)
		}
	}
}

// TestDecodeReadingInDecodesAsEncodingJSON: escapes in names and strings
// are decoded.
func TestDecodeReadingInDecodesAsEncodingJSON(t *testing.T) {
	cases := []struct{ body, value string }{
		{`{"device\u005fid":"\u0035` + testDevice[1:] + `","metric_id":7,"value":"a\/b\n\u00e9\ud83d\ude00\ufffd"}`, "a/b\né😀\uFFFD"},
		{"\r\n\t{ \"device_id\" : \"" + testDevice + "\" , \"metric_id\" : 7 ,\"value\":\r3 } \n", "3"},
		{`{"device_id":"` + testDevice + `","metric_id":7,"value":0,"other":[{"a":[true,false,null,"]"]},-1.5E-3]}`, "0"},
	}
	for _, c := range cases {
		in, err := DecodeReadingIn([]byte(c.body))
		want, wantErr := decodeReadingInStdlib([]byte(c.body))
		if in != want || furrow.ErrorMessage(err) != furrow.ErrorMessage(wantErr) {
			t.Errorf("%q: got %+v, %v; encoding/json gives %+v, %v", c.body, in, err, want, wantErr)
		}
		if err == nil && (in.Value != c.value || in.DeviceID.String() != testDevice || in.MetricID != 7) {
			t.Errorf("%q: got %+v, want value %q", c.body, in, c.value)
		}
	}
}

// A value a decoder cannot read exactly, invalid UTF-8 or a lone UTF-16
// surrogate escape, is refused rather than stored as U+FFFD; elsewhere in
// the body such text is read as encoding/json reads it.
func TestDecodeReadingInRefusesInexactValues(t *testing.T) {
	const reason = "The field value must be valid UTF-8 text, with no lone UTF-16 surrogate escape."
	for _, v := range []string{`"x` + "\xff" + `y"`, `"\ud800"`, `"a\udc00"`, `"\ud83d\u0041"`, `"\ud83d"`} {
		body := `{"device_id":"` + testDevice + `","metric_id":7,"value":` + v + `}`
		if _, err := DecodeReadingIn([]byte(body)); furrow.ErrorMessage(err) != reason {
			t.Errorf("%q: %v, want %q", body, err, reason)
		}
		if _, err := decodeReadingInStdlib([]byte(body)); furrow.ErrorMessage(err) != reason {
			t.Errorf("%q: the reference gives %v, want %q", body, err, reason)
		}
	}
	body := `{"device_id":"` + testDevice + `","metric_id":7,"value":"ok","other":"` + "\xff" + `\ud800"}`
	if in, err := DecodeReadingIn([]byte(body)); err != nil || in.Value != "ok" {
		t.Errorf("%q: %+v, %v; want the value ok", body, in, err)
	}
}

// FuzzDecodeReadingInMatchesEncodingJSON checks that DecodeReadingIn
// accepts, decodes and rejects exactly as decodeReadingInStdlib, the same
// rules built on encoding/json, with the same reason.
func FuzzDecodeReadingInMatchesEncodingJSON(f *testing.F) {
	for _, seed := range []string{
		`{"device_id":"` + testDevice + `","metric_id":220,"value":21.50}`,
		`{"device_id":"` + testDevice + `","metric_id":220,"value":"21.50","timestamp":"1"}`,
		`{"device\u005fid":"` + testDevice + `","metric_id":220,"value":"\u00e9"}`,
		`{"device_id":"` + testDevice + `","metric_id":-0,"value":1}`,
		`{"device_id":"` + testDevice + `","metric_id":1,"value":[1,{"a":null}]}`,
		`{"device_id":1,"device_id":2,}`,
		`{"a":{"b":[1,2,{"c":null}]}}`, `[[]]`, ` 1 `, `tru`, `{"a":"\u0`,
		`[]`, `{`, ``, `"`, `{"value":""}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := DecodeReadingIn(body)
		want, wantErr := decodeReadingInStdlib(body)
		if got != want || furrow.ErrorCode(err) != furrow.ErrorCode(wantErr) || furrow.ErrorMessage(err) != furrow.ErrorMessage(wantErr) {
			t.Fatalf("%q: got %+v, %v; want %+v, %v", body, got, err, want, wantErr)
		}
	})
}

// decodeReadingInStdlib is DecodeReadingIn's rules on top of encoding/json,
// the reference its one-pass reading is checked against.
func decodeReadingInStdlib(body []byte) (ReadingIn, error) {
	if !json.Valid(body) {
		return ReadingIn{}, invalid("The body must be a single valid JSON object.")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return ReadingIn{}, invalid("The body must be a JSON object.")
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return ReadingIn{}, invalid("The body must be a single valid JSON object.")
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return ReadingIn{}, invalid("The body must be a single valid JSON object.")
		}
		if key != fieldDeviceID && key != fieldMetricID && key != fieldValue {
			continue
		}
		if _, dup := fields[key]; dup {
			return ReadingIn{}, invalid("The field %s is given more than once.", key)
		}
		fields[key] = raw
	}
	var in ReadingIn
	raw, ok := fields[fieldDeviceID]
	if !ok {
		return ReadingIn{}, invalid("The field device_id is required.")
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return ReadingIn{}, invalid("The field device_id must be a UUID string.")
	}
	id, err := furrow.ParseUUID(s)
	if err != nil {
		return ReadingIn{}, invalid("The field device_id must be a UUID in the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.")
	}
	in.DeviceID = id
	if raw, ok = fields[fieldMetricID]; !ok {
		return ReadingIn{}, invalid("The field metric_id is required.")
	}
	text := string(raw)
	if strings.ContainsAny(text, ".eE") || (text[0] != '-' && (text[0] < '0' || text[0] > '9')) {
		return ReadingIn{}, invalid("The field metric_id must be an integer.")
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 1 || n > math.MaxInt32 {
		return ReadingIn{}, invalid("The field metric_id must be an integer from 1 to 2147483647.")
	}
	in.MetricID = int32(n)
	if raw, ok = fields[fieldValue]; !ok {
		return ReadingIn{}, invalid("The field value is required.")
	}
	switch c := raw[0]; {
	case c == '"':
		if err := json.Unmarshal(raw, &in.Value); err != nil {
			return ReadingIn{}, invalid("The field value must be a number or a string.")
		}
		// The v2 decoder refuses what v1 would replace with U+FFFD.
		if jsonv2.Unmarshal(raw, new(string)) != nil {
			return ReadingIn{}, invalid("The field value must be valid UTF-8 text, with no lone UTF-16 surrogate escape.")
		}
	case c == '-' || (c >= '0' && c <= '9'):
		in.Value = string(raw)
	default:
		return ReadingIn{}, invalid("The field value must be a number or a string.")
	}
	if err := (furrow.Reading{DeviceID: in.DeviceID, MetricID: in.MetricID, Value: in.Value}).Validate(); err != nil {
		return ReadingIn{}, err
	}
	return in, nil
}

func BenchmarkDecodeReadingIn(b *testing.B) {
	body := []byte(`{"device_id":"` + testDevice + `","metric_id":220,"value":21.5}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeReadingIn(body); err != nil {
			b.Fatal(err)
		}
	}
}
