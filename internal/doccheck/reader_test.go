package doccheck

import (
	"reflect"
	"testing"
)

func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Reading a webhook's state: the `state` query":      "reading-a-webhooks-state-the-state-query",
		"Dispatcher failover (two dispatchers, one faulty)": "dispatcher-failover-two-dispatchers-one-faulty",
		"`POST /api/metric-values`":                         "post-apimetric-values",
		"FurrowOutboxStale":                                 "furrowoutboxstale",
		"See [the API](api.md) now":                         "see-the-api-now",
		"Ingest: from 2,965 to 6,000 readings/s":            "ingest-from-2965-to-6000-readingss",
	} {
		if got := Slug(text); got != want {
			t.Errorf("Slug(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestAnchorsNumberRepeats(t *testing.T) {
	got := Anchors([]byte("# Page\n## Notes\ntext\n## Notes ##\n```\n## Not a heading\n```\n"))
	want := map[string]bool{"page": true, "notes": true, "notes-1": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Anchors = %v, want %v", got, want)
	}
}

func TestLinksSkipCode(t *testing.T) {
	md := "See [a](a.md#x) and [`b`](../b.md).\n`[not](c.md)`\n```\n[not](d.md)\n```\n[web](https://example.com)\n"
	got := Links([]byte(md))
	want := []Link{{1, "a.md#x"}, {1, "../b.md"}, {6, "https://example.com"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Links = %v, want %v", got, want)
	}
	if got[2].Relative() || !got[0].Relative() {
		t.Errorf("Relative: %v %v", got[0].Relative(), got[2].Relative())
	}
	if p, a := got[0].Split(); p != "a.md" || a != "x" {
		t.Errorf("Split = %q %q", p, a)
	}
}

func TestTableSettings(t *testing.T) {
	md := "| variable | default |\n|---|---|\n| `FURROW_A` | `FURROW_NOT` |\n| `FURROW_B`, `FURROW_C` | x |\ntext `FURROW_D`\n"
	got := TableSettings([]byte(md))
	want := map[string]int{"FURROW_A": 3, "FURROW_B": 4, "FURROW_C": 4}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TableSettings = %v, want %v", got, want)
	}
}
