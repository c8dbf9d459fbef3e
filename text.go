package furrow

import (
	"strings"
	"unicode/utf8"
)

// StorableText makes s storable as PostgreSQL text within n bytes: invalid
// UTF-8 and NUL, which text refuses, become U+FFFD, and the result is cut to
// at most n bytes without splitting a character. The attempt log keeps an
// endpoint's answer and an attempt's error this way.
func StorableText(s string, n int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= n {
		return s
	}
	s = s[:max(n, 0)]
	// A cut character leaves at most UTFMax-1 stray bytes at the end.
	for i := 1; i < utf8.UTFMax && len(s) > 0; i++ {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}
