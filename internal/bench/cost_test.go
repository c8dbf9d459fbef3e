package bench

import (
	"strings"
	"testing"
)

// procStat is a /proc/stat of a guest whose hypervisor took time (steal)
// and which ran a guest of its own (guest, guest_nice: already in user
// and nice).
const procStat = `cpu  1000 200 300 5000 400 10 20 70 150 30
cpu0 500 100 150 2500 200 5 10 35 75 15
cpu1 500 100 150 2500 200 5 10 35 75 15
intr 12345 0 0
ctxt 67890
`

func TestParseProcStatLeavesOutStealAndGuest(t *testing.T) {
	busy, steal := parseProcStat(procStat)
	// user + nice + system + irq + softirq; not idle, iowait, steal, or
	// guest and guest_nice, which user and nice hold already.
	if want := (1000 + 200 + 300 + 10 + 20) * clockTick; busy != want {
		t.Errorf("busy %s; want %s", busy, want)
	}
	if want := 70 * clockTick; steal != want {
		t.Errorf("steal %s; want %s", steal, want)
	}
	// A kernel old enough to have no steal or guest fields.
	if busy, steal := parseProcStat("cpu  1 2 3 4 5 6 7\n"); busy != (1+2+3+6+7)*clockTick || steal != 0 {
		t.Errorf("short line: busy %s, steal %s", busy, steal)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5", "intr 1 2 3 4 5 6"} {
		if busy, steal := parseProcStat(bad); busy != 0 || steal != 0 {
			t.Errorf("%q: busy %s, steal %s; want nothing", bad, busy, steal)
		}
	}
}

func TestCostCountsStealApart(t *testing.T) {
	a := Cost{CPU: map[string]float64{"machine": 10}, Steal: 2, Wall: 10, Cores: 2}
	b := Cost{CPU: map[string]float64{"machine": 10}, Steal: 3, Wall: 10, Cores: 2}
	sum := a.plus(b)
	if sum.Steal != 5 {
		t.Errorf("steal %v; want both runs' added", sum.Steal)
	}
	var out strings.Builder
	sum.Print(&out, 100)
	if !strings.Contains(out.String(), "steal: the hypervisor took 5.0 s") {
		t.Errorf("printed %q; want the steal named", out.String())
	}
	// 18 s busy of 20 core-seconds is 90%, CPU-bound; 18 s of the 15 left
	// after 5 s of steal is more still.
	if why := sum.why(100, 10); !strings.Contains(why, "the machine's CPU") || !strings.Contains(why, "less 0.25 the hypervisor took") {
		t.Errorf("why %q; want the CPU named as the limit, over the cores less the steal", why)
	}
}
