package furrow

import (
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/google/uuid"
)

// The Append functions below write JSON byte for byte as encoding/json
// writes the same values (HTML-safe escaping included), without its
// reflection: they serve the resources written for every reading.

// appendJSONString appends s as a JSON string. Plain printable ASCII is
// copied; anything else is left to encoding/json, so the escaping rules
// have one definition.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONUUID appends id as encoding/json writes a uuid.UUID: its
// lower-case hyphenated text, quoted.
func appendJSONUUID(b []byte, id uuid.UUID) []byte {
	var text [36]byte
	hex.Encode(text[0:8], id[0:4])
	hex.Encode(text[9:13], id[4:6])
	hex.Encode(text[14:18], id[6:8])
	hex.Encode(text[19:23], id[8:10])
	hex.Encode(text[24:], id[10:])
	text[8], text[13], text[18], text[23] = '-', '-', '-', '-'
	b = append(b, '"')
	b = append(b, text[:]...)
	return append(b, '"')
}

// appendReadingFields appends the members of the Reading resource, without
// braces.
func appendReadingFields(b []byte, r Reading) []byte {
	b = append(b, `"device_id":`...)
	b = appendJSONUUID(b, r.DeviceID)
	b = append(b, `,"metric_id":`...)
	b = strconv.AppendInt(b, int64(r.MetricID), 10)
	b = append(b, `,"value":`...)
	b = appendJSONString(b, r.Value)
	b = append(b, `,"timestamp":"`...)
	b = strconv.AppendInt(b, r.Timestamp, 10)
	return append(b, '"')
}

// AppendJSON appends r's JSON, as MarshalJSON returns it, to b.
func (r Reading) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	return append(appendReadingFields(b, r), '}')
}

// AppendJSON appends l's JSON, as MarshalJSON returns it, to b.
func (l LiveReading) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	b = appendReadingFields(b, l.Reading)
	b = append(b, `,"farm_id":`...)
	b = appendJSONUUID(b, l.FarmID)
	return append(b, '}')
}

// AppendJSON appends d's JSON, as encoding/json writes it, to b.
func (d MetricValueData) AppendJSON(b []byte) []byte {
	b = append(b, `{"device_id":`...)
	b = appendJSONUUID(b, d.DeviceID)
	b = append(b, `,"metric_id":`...)
	b = strconv.AppendInt(b, int64(d.MetricID), 10)
	b = append(b, `,"value":`...)
	b = appendJSONString(b, d.Value)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, d.Timestamp, 10)
	return append(b, '}')
}
