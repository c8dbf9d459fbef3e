package store

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzStoredText(f *testing.F) {
	for _, s := range []string{"", "ok", "é", "a\x00b", "\xff\xfe", strings.Repeat("€", 2000), "日本語"} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = n%8192 + 1
		if n < 1 {
			n += 8192
		}
		cut := truncateUTF8(s, n)
		if len(cut) > n || !strings.HasPrefix(s, cut) {
			t.Fatalf("truncateUTF8(%q, %d) = %q", s, n, cut)
		}
		if len(s) <= n && cut != s {
			t.Fatalf("short text changed: %q -> %q", s, cut)
		}
		if utf8.ValidString(s) && (!utf8.ValidString(cut) || len(cut) < n-utf8.UTFMax+1 && len(s) > n) {
			t.Fatalf("valid text cut badly: %q at %d -> %q", s, n, cut)
		}
		st := storableText(cut)
		if !utf8.ValidString(st) || strings.ContainsRune(st, 0) {
			t.Fatalf("storableText(%q) = %q", cut, st)
		}
	})
}
