package api

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/furrowhq/furrow"
	"github.com/google/uuid"
)

// ReadingIn is the request body of POST /api/metric-values, validated.
type ReadingIn struct {
	DeviceID uuid.UUID
	MetricID int32
	// Value is the exact JSON text of a number ("21.50" stays "21.50") or
	// the decoded text of a string.
	Value string
}

// The fields of ReadingIn, matched case-sensitively.
const (
	fieldDeviceID = "device_id"
	fieldMetricID = "metric_id"
	fieldValue    = "value"
)

// DecodeReadingIn parses a ReadingIn body and validates it with
// furrow.Reading.Validate. Every failure is an
// EINVALID *furrow.Error whose message names the field at fault.
//
// Rules beyond the spec: unknown fields (and timestamp) are ignored; a known
// field given twice is rejected, because parsers disagree on which copy wins;
// metric_id must be an integer literal (220.0 and 2.2e2 are rejected, like
// "220"); device_id must be the 36-character hyphenated UUID form, in any
// case; a value containing a NUL character is rejected, as it cannot be
// stored as text.
func DecodeReadingIn(body []byte) (ReadingIn, error) {
	fields, err := topLevelFields(body)
	if err != nil {
		return ReadingIn{}, err
	}
	var in ReadingIn
	raw, err := required(fields, fieldDeviceID)
	if err == nil {
		in.DeviceID, err = decodeDeviceID(raw)
	}
	if err != nil {
		return ReadingIn{}, err
	}
	if raw, err = required(fields, fieldMetricID); err == nil {
		in.MetricID, err = decodeMetricID(raw)
	}
	if err != nil {
		return ReadingIn{}, err
	}
	if raw, err = required(fields, fieldValue); err == nil {
		in.Value, err = decodeValue(raw)
	}
	if err != nil {
		return ReadingIn{}, err
	}
	if err := (furrow.Reading{DeviceID: in.DeviceID, MetricID: in.MetricID, Value: in.Value}).Validate(); err != nil {
		return ReadingIn{}, err
	}
	return in, nil
}

// topLevelFields returns the raw values of the known fields of a JSON
// object, rejecting anything that is not exactly one JSON object and any
// known field given twice.
func topLevelFields(body []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(body) {
		return nil, invalid("The body must be a single valid JSON object.")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, _ := dec.Token(); tok != json.Delim('{') {
		return nil, invalid("The body must be a JSON object.")
	}
	fields := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalid("The body must be a single valid JSON object.")
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, invalid("The body must be a single valid JSON object.")
		}
		if key != fieldDeviceID && key != fieldMetricID && key != fieldValue {
			continue
		}
		if _, dup := fields[key]; dup {
			return nil, invalid("The field %s is given more than once.", key)
		}
		fields[key] = raw
	}
	return fields, nil
}

func required(fields map[string]json.RawMessage, name string) (json.RawMessage, error) {
	raw, ok := fields[name]
	if !ok {
		return nil, invalid("The field %s is required.", name)
	}
	return raw, nil
}

func decodeDeviceID(raw json.RawMessage) (uuid.UUID, error) {
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return uuid.Nil, invalid("The field device_id must be a UUID string.")
	}
	id, err := parseUUID(s)
	if err != nil {
		return uuid.Nil, invalid("The field device_id must be a UUID in the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.")
	}
	return id, nil
}

// parseUUID accepts only the 36-character hyphenated form, in any case;
// uuid.Parse alone would also take braces, URNs and bare hex.
func parseUUID(s string) (uuid.UUID, error) {
	if len(s) != 36 {
		return uuid.Nil, invalid("not a UUID")
	}
	return uuid.Parse(s)
}

func decodeMetricID(raw json.RawMessage) (int32, error) {
	text := string(raw)
	if strings.ContainsAny(text, ".eE") || (text[0] != '-' && (text[0] < '0' || text[0] > '9')) {
		return 0, invalid("The field metric_id must be an integer.")
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 1 || n > math.MaxInt32 {
		return 0, invalid("The field metric_id must be an integer from 1 to 2147483647.")
	}
	return int32(n), nil
}

func decodeValue(raw json.RawMessage) (string, error) {
	var v string
	switch c := raw[0]; {
	case c == '"':
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", invalid("The field value must be a number or a string.")
		}
	case c == '-' || (c >= '0' && c <= '9'):
		v = string(raw) // the exact JSON text of the number
	default:
		return "", invalid("The field value must be a number or a string.")
	}
	return v, nil
}

func invalid(format string, args ...any) error {
	return furrow.Errorf(furrow.EINVALID, format, args...)
}
