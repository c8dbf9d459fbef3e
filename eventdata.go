package furrow

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// CheckEventData returns EINVALID unless data, valid JSON, can be stored
// and sent as it reads. PostgreSQL's jsonb refuses the NUL character and a
// lone UTF-16 surrogate, and writes every number out in full, so that
// 1e100000 becomes a hundred thousand digits in every delivery and every
// read: data whose numbers written out in full would more than double its
// size is refused, which keeps what is stored in proportion to what was
// sent. So is a number past PostgreSQL's numeric limits
// (MaxNumericWholeDigits, MaxNumericFractionDigits), whatever the size.
func CheckEventData(data []byte) error {
	growth := 0
	for i := 0; i < len(data); {
		switch c := data[i]; {
		case c == '"':
			end, err := checkJSONString(data, i+1)
			if err != nil {
				return err
			}
			i = end
		case c == '-' || c >= '0' && c <= '9':
			end := numberEnd(data, i)
			whole, frac := writtenDigits(data[i:end])
			if whole > MaxNumericWholeDigits || frac > MaxNumericFractionDigits {
				return Errorf(EINVALID, "The field data holds a number that written out in full has more than %d digits before the decimal point or %d after it, which PostgreSQL cannot store; send such numbers as strings.", MaxNumericWholeDigits, MaxNumericFractionDigits)
			}
			growth += max(0, whole+frac-(end-i))
			i = end
		default:
			i++
		}
	}
	if growth > len(data) {
		return Errorf(EINVALID, "The field data holds numbers that written out in full (as events are stored and sent) more than double its size; send such numbers as strings.")
	}
	return nil
}

// checkJSONString checks the escapes of the string whose contents start at
// data[i] and returns the index after its closing quote.
func checkJSONString(data []byte, i int) (int, error) {
	for i < len(data) {
		switch data[i] {
		case '"':
			return i + 1, nil
		case '\\':
			if i+1 < len(data) && data[i+1] != 'u' {
				i += 2
				continue
			}
			r, ok := escapedRune(data, i)
			switch {
			case !ok:
				return 0, errEventDataSyntax
			case r == 0:
				return 0, Errorf(EINVALID, "The field data must not contain the NUL character (\\u0000).")
			case utf16.IsSurrogate(r):
				if loneSurrogate(data, i, r) {
					return 0, Errorf(EINVALID, "The field data must not contain a lone UTF-16 surrogate (\\u%04x).", r)
				}
				i += 12
			default:
				i += 6
			}
		default:
			i++
		}
	}
	return 0, errEventDataSyntax
}

// loneSurrogate says whether r, a surrogate escaped at data[i], is not the
// first half of a pair completed by the next escape.
func loneSurrogate(data []byte, i int, r rune) bool {
	low, ok := escapedRune(data, i+6)
	return r >= 0xDC00 || !ok || utf16.DecodeRune(r, low) == '\uFFFD'
}

// ExactJSON says whether valid JSON text, a string with its quotes or a
// whole document, decodes to exactly the text it spells: valid UTF-8 with
// no lone UTF-16 surrogate escape, both of which a JSON decoder would
// replace with U+FFFD and so store something other than what was sent.
// (Outside strings JSON has no backslash, so a document's escapes are its
// strings'.)
func ExactJSON(quoted []byte) bool {
	if !utf8.Valid(quoted) {
		return false
	}
	end := len(quoted) - 1
	for i := 1; i < end; {
		j := bytes.IndexByte(quoted[i:end], '\\')
		if j < 0 {
			return true
		}
		i += j
		r, ok := escapedRune(quoted, i)
		switch {
		case !ok:
			i += 2 // a one-letter escape
		case utf16.IsSurrogate(r) && loneSurrogate(quoted, i, r):
			return false
		case utf16.IsSurrogate(r):
			i += 12
		default:
			i += 6
		}
	}
	return true
}

var errEventDataSyntax = Errorf(EINVALID, "The field data must be a JSON object.")

// escapedRune reads the \uXXXX escape at data[i].
func escapedRune(data []byte, i int) (rune, bool) {
	if i+6 > len(data) || data[i] != '\\' || data[i+1] != 'u' {
		return 0, false
	}
	n, err := strconv.ParseUint(string(data[i+2:i+6]), 16, 16)
	return rune(n), err == nil
}

// numberEnd returns the index after the JSON number starting at data[i].
func numberEnd(data []byte, i int) int {
	for i < len(data) {
		switch c := data[i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			i++
		default:
			return i
		}
	}
	return i
}

// PostgreSQL's numeric limits, which jsonb's numbers have: a number that
// written out in full has more digits than these before or after the
// decimal point fails the cast to jsonb (SQLSTATE 22003).
const (
	// MaxNumericWholeDigits bounds the digits before the decimal point,
	// leading zeros aside.
	MaxNumericWholeDigits = 131_072
	// MaxNumericFractionDigits bounds the digits after the decimal point,
	// trailing zeros included (PostgreSQL keeps them).
	MaxNumericFractionDigits = 16_383
)

// writtenDigits is how many digits the JSON number num has before and
// after the decimal point written out in full, without an exponent, as
// PostgreSQL writes it: 1.5e3 has 4 and 0 (1500), 1e-3 has 1 and 3
// (0.001), 0.05e3 has 2 and 0 (50).
func writtenDigits(num []byte) (whole, frac int) {
	mantissa, exp := num, 0
	for j, c := range num {
		if c == 'e' || c == 'E' {
			mantissa = num[:j]
			// A valid JSON exponent; one past int's range is clamped.
			e, err := strconv.Atoi(string(num[j+1:]))
			if err != nil {
				e = 1 << 30
				if num[j+1] == '-' {
					e = -e
				}
			}
			exp = e
			break
		}
	}
	seenPoint, significant, leadingZeros := false, false, 0
	for _, c := range mantissa {
		switch {
		case c == '.':
			seenPoint = true
			continue
		case c < '0' || c > '9':
			continue
		case seenPoint:
			frac++
		default:
			whole++
		}
		// PostgreSQL drops the zeros before the first significant digit.
		significant = significant || c != '0'
		if !significant {
			leadingZeros++
		}
	}
	// Clamped so that a huge exponent cannot overflow the sums.
	exp = max(-1<<30, min(exp, 1<<30))
	frac = max(frac-exp, 0)
	if !significant {
		return 1, frac // zero: 0e-3 is 0.000
	}
	return max(whole-leadingZeros+exp, 1), frac
}
