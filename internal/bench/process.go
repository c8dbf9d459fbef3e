package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Memory is the resident memory of a process, in bytes. Anon is the part
// not backed by files: the heap and stacks, without the binary's pages.
type Memory struct {
	RSS  int64 `json:"rss_bytes"`
	Peak int64 `json:"peak_rss_bytes"`
	Anon int64 `json:"anon_rss_bytes"`
}

// ReadMemory reads VmRSS, VmHWM and RssAnon of pid from /proc (Linux only).
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "VmRSS":
			m.RSS = kb << 10
		case "VmHWM":
			m.Peak = kb << 10
		case "RssAnon":
			m.Anon = kb << 10
		}
	}
	return m, sc.Err()
}

// clockTick is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// ReadCPU returns the CPU time (user and system) pid has used so far, from
// /proc (Linux only).
func ReadCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read CPU time of pid %d: %w", pid, err)
	}
	// The command name may hold spaces; fields are counted after its ')'.
	i := strings.LastIndexByte(string(b), ')')
	fields := strings.Fields(string(b[i+1:]))
	if i < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("read CPU time of pid %d: unexpected /proc format", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("read CPU time of pid %d: unexpected /proc format", pid)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// cpuMeter measures the CPU time a process uses between start and stop; it
// does nothing for pid 0.
type cpuMeter struct {
	pid   int
	begin time.Duration
}

func startCPU(pid int) *cpuMeter {
	m := &cpuMeter{pid: pid}
	if pid > 0 {
		m.begin, _ = ReadCPU(pid)
	}
	return m
}

// stop returns the CPU seconds used since start, or 0 if unknown.
func (m *cpuMeter) stop() float64 {
	if m.pid <= 0 {
		return 0
	}
	end, err := ReadCPU(m.pid)
	if err != nil {
		return 0
	}
	return (end - m.begin).Seconds()
}
