package api

import (
	"bytes"
	"encoding/json"
	"math"
	"unicode/utf8"

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

var (
	errBodyNotJSON   = invalid("The body must be a single valid JSON object.")
	errBodyNotObject = invalid("The body must be a JSON object.")
)

// DecodeReadingIn parses a ReadingIn body and validates it with
// furrow.Reading.Validate. Every failure is an
// EINVALID *furrow.Error whose message names the field at fault.
//
// Rules (docs/architecture.md, "Decisions"): unknown fields (and timestamp)
// are ignored; a known field given twice is rejected, because parsers
// disagree on which copy wins;
// metric_id must be an integer literal (220.0 and 2.2e2 are rejected, like
// "220"); device_id must be the 36-character hyphenated UUID form, in any
// case; a value containing a NUL character is rejected, as it cannot be
// stored as text, and so is a value that is not valid UTF-8 or holds a lone
// UTF-16 surrogate escape, which would be stored as U+FFFD. Field names and
// the other strings are read as encoding/json reads them.
func DecodeReadingIn(body []byte) (ReadingIn, error) {
	fields, err := topLevelFields(body)
	if err != nil {
		return ReadingIn{}, err
	}
	var in ReadingIn
	raw, err := fields.required(fieldDeviceID)
	if err == nil {
		in.DeviceID, err = decodeDeviceID(raw)
	}
	if err != nil {
		return ReadingIn{}, err
	}
	if raw, err = fields.required(fieldMetricID); err == nil {
		in.MetricID, err = decodeMetricID(raw)
	}
	if err != nil {
		return ReadingIn{}, err
	}
	if raw, err = fields.required(fieldValue); err == nil {
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

// readingFields holds the raw JSON text of each known field, nil if absent.
type readingFields struct {
	deviceID, metricID, value []byte
}

// slot returns where the field name is kept, nil for an unknown name.
func (f *readingFields) slot(name string) *[]byte {
	switch name {
	case fieldDeviceID:
		return &f.deviceID
	case fieldMetricID:
		return &f.metricID
	case fieldValue:
		return &f.value
	}
	return nil
}

func (f *readingFields) required(name string) ([]byte, error) {
	if raw := *f.slot(name); raw != nil {
		return raw, nil
	}
	return nil, invalid("The field %s is required.", name)
}

// topLevelFields returns the raw values of the known fields of a JSON
// object, rejecting anything that is not exactly one JSON object and any
// known field given twice. It reads the body once, checking it as
// json.Valid does: invalid JSON anywhere outranks a field given twice.
func topLevelFields(body []byte) (readingFields, error) {
	var f readingFields
	s := jsonScanner{b: body}
	s.space()
	if s.peek() != '{' {
		if s.value(0) && s.end() {
			return f, errBodyNotObject
		}
		return f, errBodyNotJSON
	}
	s.i++
	s.space()
	dup := ""
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			s.space()
			start := s.i
			escaped, ok := s.string()
			if !ok {
				return f, errBodyNotJSON
			}
			name := knownField(body[start:s.i], escaped)
			s.space()
			if s.peek() != ':' {
				return f, errBodyNotJSON
			}
			s.i++
			s.space()
			vstart := s.i
			if !s.value(1) {
				return f, errBodyNotJSON
			}
			if slot := f.slot(name); slot != nil {
				if *slot != nil && dup == "" {
					dup = name
				}
				*slot = body[vstart:s.i]
			}
			s.space()
			c := s.peek()
			s.i++
			if c == '}' {
				break
			} else if c != ',' {
				return f, errBodyNotJSON
			}
		}
	}
	if !s.end() {
		return f, errBodyNotJSON
	}
	if dup != "" {
		return f, invalid("The field %s is given more than once.", dup)
	}
	return f, nil
}

// knownField returns the field named by the JSON string quoted, "" if it
// names none of ReadingIn's.
func knownField(quoted []byte, escaped bool) string {
	name := quoted[1 : len(quoted)-1]
	if escaped {
		var s string
		if json.Unmarshal(quoted, &s) != nil {
			return ""
		}
		name = []byte(s)
	}
	for _, f := range [...]string{fieldDeviceID, fieldMetricID, fieldValue} {
		if string(name) == f {
			return f
		}
	}
	return ""
}

// maxJSONDepth is the nesting that encoding/json accepts at most.
const maxJSONDepth = 10000

// jsonScanner checks JSON text by the grammar encoding/json accepts.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *jsonScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// end reports whether only white space is left.
func (s *jsonScanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// value skips one value inside depth containers.
func (s *jsonScanner) value(depth int) bool {
	switch c := s.peek(); {
	case c == '{' || c == '[':
		return depth < maxJSONDepth && s.container(depth+1)
	case c == '"':
		_, ok := s.string()
		return ok
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

// container skips an object or array, itself at depth.
func (s *jsonScanner) container(depth int) bool {
	closing := byte(']')
	object := s.b[s.i] == '{'
	if object {
		closing = '}'
	}
	s.i++
	s.space()
	if s.peek() == closing {
		s.i++
		return true
	}
	for {
		s.space()
		if object {
			if _, ok := s.string(); !ok {
				return false
			}
			s.space()
			if s.peek() != ':' {
				return false
			}
			s.i++
			s.space()
		}
		if !s.value(depth) {
			return false
		}
		s.space()
		c := s.peek()
		s.i++
		if c == closing {
			return true
		} else if c != ',' {
			return false
		}
	}
}

// string skips a string, reporting whether it has escapes. Any byte but
// controls is allowed raw, as encoding/json allows it.
func (s *jsonScanner) string() (escaped, ok bool) {
	if s.peek() != '"' {
		return false, false
	}
	for s.i++; s.i < len(s.b); s.i++ {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return escaped, true
		case c < 0x20:
			return false, false
		case c == '\\':
			escaped = true
			s.i++
			switch s.peek() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				for range 4 {
					s.i++
					if !isHex(s.peek()) {
						return false, false
					}
				}
			default:
				return false, false
			}
		}
	}
	return false, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func (s *jsonScanner) digits() bool {
	start := s.i
	for c := s.peek(); c >= '0' && c <= '9'; c = s.peek() {
		s.i++
	}
	return s.i > start
}

// number skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *jsonScanner) number() bool {
	if s.peek() == '-' {
		s.i++
	}
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.peek() == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

func (s *jsonScanner) literal(word string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return false
	}
	s.i += len(word)
	return true
}

// decodeJSONString decodes the JSON string raw as encoding/json does; a plain
// string (no escapes, valid UTF-8) is its bytes.
func decodeJSONString(raw []byte) (string, bool) {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

func decodeDeviceID(raw []byte) (uuid.UUID, error) {
	if raw[0] != '"' {
		return uuid.Nil, invalid("The field device_id must be a UUID string.")
	}
	var id uuid.UUID
	var err error
	if inner := raw[1 : len(raw)-1]; len(inner) == 36 && bytes.IndexByte(inner, '\\') < 0 {
		id, err = uuid.ParseBytes(inner) // no escapes: the text is the bytes
	} else {
		s, ok := decodeJSONString(raw)
		if !ok {
			return uuid.Nil, invalid("The field device_id must be a UUID string.")
		}
		id, err = furrow.ParseUUID(s)
	}
	if err != nil {
		return uuid.Nil, invalid("The field device_id must be a UUID in the form %s.", furrow.UUIDForm)
	}
	return id, nil
}

// decodeMetricID reads raw, a JSON value, as an integer literal.
func decodeMetricID(raw []byte) (int32, error) {
	if bytes.ContainsAny(raw, ".eE") || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, invalid("The field metric_id must be an integer.")
	}
	// raw is now -?(0|[1-9][0-9]*): negative, zero or more than ten
	// digits is out of range.
	var n int64
	if raw[0] != '-' && len(raw) <= 10 {
		for _, c := range raw {
			n = n*10 + int64(c-'0')
		}
	}
	if n < 1 || n > math.MaxInt32 {
		return 0, invalid("The field metric_id must be an integer from 1 to 2147483647.")
	}
	return int32(n), nil
}

func decodeValue(raw []byte) (string, error) {
	switch c := raw[0]; {
	case c == '"':
		// A decoder would store U+FFFD for what it cannot read; the value
		// is stored as sent or not at all.
		if !furrow.ExactJSON(raw) {
			return "", invalid("The field value must be valid UTF-8 text, with no lone UTF-16 surrogate escape.")
		}
		if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 {
			return string(inner), nil // its UTF-8 checked just above
		}
		if v, ok := decodeJSONString(raw); ok {
			return v, nil
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return string(raw), nil // the exact JSON text of the number
	}
	return "", invalid("The field value must be a number or a string.")
}

func invalid(format string, args ...any) error {
	return furrow.Errorf(furrow.EINVALID, format, args...)
}
