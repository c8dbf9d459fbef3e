package furrow

import (
	"strconv"
	"unicode/utf16"
)

// CheckEventData returns EINVALID unless data, valid JSON, can be stored
// and sent as it reads. PostgreSQL's jsonb refuses the NUL character and a
// lone UTF-16 surrogate, and writes every number out in full, so that
// 1e100000 becomes a hundred thousand digits in every delivery and every
// read: data whose numbers written out in full would more than double its
// size is refused, which keeps what is stored in proportion to what was
// sent.
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
			growth += max(0, writtenDigits(data[i:end])-(end-i))
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
				low, ok := escapedRune(data, i+6)
				if r >= 0xDC00 || !ok || utf16.DecodeRune(r, low) == '\uFFFD' {
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

// writtenDigits is how many digits the JSON number num has written out in
// full, without an exponent: 1.5e3 has 4 (1500), 1e-3 has 4 (0.001).
func writtenDigits(num []byte) int {
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
	whole, frac := 0, 0
	seenPoint := false
	for _, c := range mantissa {
		switch {
		case c == '.':
			seenPoint = true
		case c < '0' || c > '9':
		case seenPoint:
			frac++
		default:
			whole++
		}
	}
	// Clamped so that a huge exponent cannot overflow the sum.
	exp = max(-1<<30, min(exp, 1<<30))
	return max(whole+exp, 1) + max(frac-exp, 0)
}
