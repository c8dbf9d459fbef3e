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
// in-process ceiling server or bare engine's worker) is "bench". The
// server under test is "furrow": the process started or named by pid or,
// when there is none (a running deployment given by URL), every process
// whose command starts with "furrow", its replicas.
var cpuGroups = map[string]string{"postgres": "postgres", "redis-server": "redis", "temporal-server": "temporal"}

// groupCPU measures the CPU time of process groups between start and stop.
type groupCPU struct {
	server int
	begin  map[int]procCPU
}

// procCPU is one process's group and CPU time so far.
type procCPU struct {
	group string
	cpu   time.Duration
}

func startGroupCPU() *groupCPU { return startGroupCPUWith(0) }

// startGroupCPUWith also measures server, the Furrow process under test.
func startGroupCPUWith(server int) *groupCPU {
	return &groupCPU{server: server, begin: readGroupCPU(server)}
}

// stop returns the CPU seconds each group used since start: for each
// process alive at the end, what it used since start (all of it if it
// started since). A process that exits in between is lost, unless its
// parent reaps it: PostgreSQL's backends then count in the postmaster's
// figure with all the CPU they ever used.
func (g *groupCPU) stop() map[string]float64 {
	return byGroup(g.stopEach())
}

// stopEach is stop for each process alive at the end, by pid.
func (g *groupCPU) stopEach() map[int]procCPU {
	out := readGroupCPU(g.server)
	for pid, p := range out {
		if b, ok := g.begin[pid]; ok && b.group == p.group {
			p.cpu -= b.cpu
			out[pid] = p
		}
	}
	return out
}

// byGroup sums each group's CPU seconds.
func byGroup(procs map[int]procCPU) map[string]float64 {
	out := map[string]float64{}
	for _, p := range procs {
		out[p.group] += p.cpu.Seconds()
	}
	return out
}

// readGroupCPU reads the CPU time of each process of a group, its reaped
// children's included. Linux only; an unreadable process is skipped.
func readGroupCPU(server int) map[int]procCPU {
	out := map[int]procCPU{}
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
		case pid == server || (server == 0 && strings.HasPrefix(name, "furrow")):
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
		out[pid] = procCPU{group: group, cpu: time.Duration(ticks) * clockTick}
	}
	return out
}
