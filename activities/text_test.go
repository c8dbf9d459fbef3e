package activities

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBoundTextKeepsRunesWhole(t *testing.T) {
	long := "connection failed: " + strings.Repeat("é", MaxErrorText)
	got := boundText(long, MaxErrorText)
	if len(got) > MaxErrorText || len(got) < MaxErrorText-1 || !utf8.ValidString(got) || !strings.HasPrefix(got, "connection failed: é") {
		t.Fatalf("bounded to %d bytes: %q", len(got), got)
	}
	if got := boundText("short", MaxErrorText); got != "short" {
		t.Fatalf("short text changed to %q", got)
	}
}
