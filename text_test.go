package furrow_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/furrowhq/furrow"
)

func FuzzStorableText(f *testing.F) {
	for _, s := range []string{"", "ok", "é", "a\x00b", "\xff\xfe", strings.Repeat("€", 2000), "日本語"} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = n%8192 + 1
		if n < 1 {
			n += 8192
		}
		got := furrow.StorableText(s, n)
		if len(got) > n || !utf8.ValidString(got) || strings.ContainsRune(got, 0) {
			t.Fatalf("StorableText(%q, %d) = %q", s, n, got)
		}
		clean := strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
		if !strings.HasPrefix(clean, got) {
			t.Fatalf("StorableText(%q, %d) = %q, not a prefix of the cleaned text", s, n, got)
		}
		if len(clean) <= n && got != clean {
			t.Fatalf("short text changed: %q -> %q", s, got)
		}
		if len(clean) > n && len(got) < n-utf8.UTFMax+1 {
			t.Fatalf("cut %q at %d to %d bytes", s, n, len(got))
		}
	})
}

func TestStorableTextKeepsRunesWhole(t *testing.T) {
	long := "connection failed: " + strings.Repeat("é", 200)
	got := furrow.StorableText(long, 200)
	if len(got) > 200 || len(got) < 199 || !utf8.ValidString(got) || !strings.HasPrefix(got, "connection failed: é") {
		t.Fatalf("bounded to %d bytes: %q", len(got), got)
	}
	if got := furrow.StorableText("bad\x00\xff", 100); got != "bad\uFFFD\uFFFD" {
		t.Fatalf("got %q", got)
	}
}
