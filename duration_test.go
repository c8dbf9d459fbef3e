package furrow_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/furrowhq/furrow"
)

func TestDurationJSON(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Second: `"30s"`, 2 * time.Minute: `"2m"`, 90 * time.Minute: `"1h30m"`,
		12 * time.Hour: `"12h"`, 720 * time.Hour: `"720h"`, 0: `"0s"`, 1500 * time.Millisecond: `"1.5s"`,
	} {
		b, err := json.Marshal(furrow.Duration(d))
		if err != nil || string(b) != want {
			t.Errorf("%s: got %s (%v), want %s", d, b, err, want)
		}
		var back furrow.Duration
		if err := json.Unmarshal(b, &back); err != nil || time.Duration(back) != d {
			t.Errorf("%s: read back %s (%v)", d, time.Duration(back), err)
		}
	}
}

func TestDurationReadsRecordedNanoseconds(t *testing.T) {
	var in struct{ Schedule []furrow.Duration }
	if err := json.Unmarshal([]byte(`{"Schedule":[1000000000,"10m"]}`), &in); err != nil {
		t.Fatal(err)
	}
	got := furrow.TimeDurations(in.Schedule)
	if len(got) != 2 || got[0] != time.Second || got[1] != 10*time.Minute {
		t.Fatalf("got %v", got)
	}
	var d furrow.Duration
	if err := json.Unmarshal([]byte(`"soon"`), &d); err == nil {
		t.Fatal("a malformed duration must be an error")
	}
}
