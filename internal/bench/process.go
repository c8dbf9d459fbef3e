package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Process is a furrow process started for a run.
type Process struct {
	URL string
	// MetricsURL is the process's GET /metrics.
	MetricsURL string
	cmd        *exec.Cmd
	exited     chan struct{}
	logs       *tail
}

// StartFurrow runs `binary args...` with env (FURROW_* variables of this
// process are not inherited) plus FURROW_HTTP_ADDR and FURROW_METRICS_ADDR
// on free loopback ports,
// and waits up to wait for /healthz to answer 200. Its standard output is
// discarded, since `furrow dev` prints demo keys there. It fails, quoting the
// end of the process's log, if the process exits or stays unhealthy.
func StartFurrow(ctx context.Context, binary string, args, env []string, wait time.Duration) (*Process, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	p := &Process{URL: "http://" + addr, MetricsURL: "http://" + metrics + "/metrics", exited: make(chan struct{}), logs: &tail{max: 16 << 10}}
	p.cmd = exec.Command(binary, args...)
	for _, kv := range os.Environ() {
		// The server under test gets only the settings the tool chooses,
		// and the profiling listener if one is asked for.
		if !strings.HasPrefix(kv, "FURROW_") || strings.HasPrefix(kv, "FURROW_PPROF_ADDR=") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	// Metrics are on, as in production, on a port of their own; env may
	// override it.
	p.cmd.Env = append(append(append(p.cmd.Env, "FURROW_METRICS_ADDR="+metrics), env...), "FURROW_HTTP_ADDR="+addr)
	p.cmd.Stderr = p.logs
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start furrow %s: %w", strings.Join(args, " "), err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	if err := p.waitHealthy(ctx, wait); err != nil {
		p.Stop()
		return nil, fmt.Errorf("furrow %s: %w; its log ends:\n%s", strings.Join(args, " "), err, p.Logs())
	}
	return p, nil
}

func (p *Process) waitHealthy(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("exited early")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := http.Get(p.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("not healthy after %s", wait)
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Logs returns the end of what the process logged.
func (p *Process) Logs() string { return p.logs.String() }

// Stop interrupts the process and waits for it, killing it after 20 s.
func (p *Process) Stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// FreeAddr returns a loopback address with a port nobody listens on.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

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

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
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
