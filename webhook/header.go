package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxHeaderLen bounds the header parsed; real headers are about 80 bytes,
// a few more with several v1 values during secret rotation.
const maxHeaderLen = 4096

// maxTimestampDigits keeps epoch milliseconds within int64.
const maxTimestampDigits = 18

// signature is a parsed X-Service-Signature header. ts is the timestamp
// text exactly as received, because that text is what was signed.
type signature struct {
	ts string
	at time.Time
	v1 [][]byte
}

// parseHeader reads "t=<epoch_ms>,v1=<hex>" with parts in any order,
// several v1 values allowed, unknown parts (such as other schemes) ignored
// and blanks around parts tolerated. Errors wrap ErrMissing or ErrMalformed
// and never echo the header.
func parseHeader(h string) (signature, error) {
	var s signature
	if strings.TrimSpace(h) == "" {
		return s, ErrMissing
	}
	if len(h) > maxHeaderLen {
		return s, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxHeaderLen)
	}
	for i, part := range strings.Split(h, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, ok := strings.Cut(part, "=")
		if !ok {
			return s, fmt.Errorf("%w: part %d is not key=value", ErrMalformed, i+1)
		}
		if err := s.add(key, val); err != nil {
			return s, err
		}
	}
	if s.ts == "" {
		return s, fmt.Errorf("%w: no t part", ErrMalformed)
	}
	if len(s.v1) == 0 {
		return s, fmt.Errorf("%w: no v1 part", ErrMalformed)
	}
	return s, nil
}

func (s *signature) add(key, val string) error {
	switch key {
	case "t":
		if s.ts != "" {
			return fmt.Errorf("%w: more than one t part", ErrMalformed)
		}
		ms, err := parseMillis(val)
		if err != nil {
			return err
		}
		s.ts, s.at = val, time.UnixMilli(ms)
	case "v1":
		b, err := hex.DecodeString(val)
		if err != nil || len(b) != sha256.Size {
			return fmt.Errorf("%w: v1 must be %d hex digits", ErrMalformed, 2*sha256.Size)
		}
		s.v1 = append(s.v1, b)
	}
	return nil
}

// parseMillis accepts only plain decimal digits: no sign, no spaces.
func parseMillis(v string) (int64, error) {
	if v == "" || len(v) > maxTimestampDigits || strings.Trim(v, "0123456789") != "" {
		return 0, fmt.Errorf("%w: t must be epoch milliseconds", ErrMalformed)
	}
	return strconv.ParseInt(v, 10, 64)
}
