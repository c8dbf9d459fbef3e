package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cpuGroups names the processes whose CPU a run reports, by command name:
// every PostgreSQL backend, the Redis server and the Temporal server on
// this machine. The bench process itself (load generator, and the
// in-process ceiling server or bare engine's worker) is "bench", and a
// server under test started or named by pid, or any other process whose
// command starts with "furrow" (the replicas of a deployment), is "furrow".
var cpuGroups = map[string]string{"postgres": "postgres", "redis-server": "redis", "temporal-server": "temporal"}

// groupCPU measures the CPU time of process groups between start and stop.
type groupCPU struct {
	server int
	begin  map[string]time.Duration
}

func startGroupCPU() *groupCPU { return startGroupCPUWith(0) }

// startGroupCPUWith also measures server, the Furrow process under test.
func startGroupCPUWith(server int) *groupCPU {
	return &groupCPU{server: server, begin: readGroupCPU(server)}
}

// stop returns the CPU seconds each group used since start.
func (g *groupCPU) stop() map[string]float64 {
	end := readGroupCPU(g.server)
	out := map[string]float64{}
	for k, v := range end {
		out[k] = (v - g.begin[k]).Seconds()
	}
	return out
}

// readGroupCPU adds up, for each group, the CPU time of its live processes
// and of their reaped children (PostgreSQL's exited backends are counted in
// the postmaster's). Linux only; an unreadable process is skipped.
func readGroupCPU(server int) map[string]time.Duration {
	out := map[string]time.Duration{}
	self := os.Getpid()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		name := s[open+1 : end]
		group := cpuGroups[name]
		switch {
		case pid == self:
			group = "bench"
		case pid == server || strings.HasPrefix(name, "furrow"):
			group = "furrow"
		}
		if group == "" {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 15 {
			continue
		}
		var ticks int64
		for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
			n, _ := strconv.ParseInt(f[i], 10, 64)
			ticks += n
		}
		out[group] += time.Duration(ticks) * clockTick
	}
	return out
}
