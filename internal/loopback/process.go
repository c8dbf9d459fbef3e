package loopback

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Command is a furrow process to start.
type Command struct {
	// Binary is the furrow executable and Args its arguments, the
	// subcommand first.
	Binary string
	Args   []string
	// Env is the whole environment of the process. FURROW_HTTP_ADDR and
	// FURROW_METRICS_ADDR are added on free loopback ports unless Env sets
	// them, so that processes never collide on the default ones.
	Env []string
	// LogLimit keeps only the last LogLimit bytes of each output stream,
	// for processes that run long; 0 keeps everything.
	LogLimit int
}

// Process is a running furrow process.
type Process struct {
	// URL is the API's base URL, from FURROW_HTTP_ADDR.
	URL string
	// MetricsURL is the process's GET /metrics.
	MetricsURL string

	cmd            *exec.Cmd
	exited         chan struct{}
	stdout, stderr *output
}

// stopGrace is how long Stop waits after the interrupt before it kills.
const stopGrace = 20 * time.Second

// Start starts c without waiting for it to be ready; see WaitHealthy.
func Start(c Command) (*Process, error) {
	env := c.Env
	httpAddr, err := addrSetting(&env, "FURROW_HTTP_ADDR")
	if err != nil {
		return nil, err
	}
	metrics, err := addrSetting(&env, "FURROW_METRICS_ADDR")
	if err != nil {
		return nil, err
	}
	p := &Process{
		URL: "http://" + httpAddr, MetricsURL: "http://" + metrics + "/metrics",
		exited: make(chan struct{}), stdout: &output{max: c.LogLimit}, stderr: &output{max: c.LogLimit},
	}
	p.cmd = exec.Command(c.Binary, c.Args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	// A child that inherited the output pipes must not hold Wait forever.
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start furrow %s: %w", strings.Join(c.Args, " "), err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

// addrSetting returns the value of the last name=value in env, first
// appending one on a free loopback port when there is none.
func addrSetting(env *[]string, name string) (string, error) {
	addr := ""
	for _, kv := range *env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			addr = v
		}
	}
	if addr != "" {
		return addr, nil
	}
	addr, err := FreeAddr()
	if err != nil {
		return "", err
	}
	*env = append(append([]string(nil), *env...), name+"="+addr)
	return addr, nil
}

// WaitHealthy waits up to limit for GET /healthz to answer 200. It fails
// at once if the process exits.
func (p *Process) WaitHealthy(ctx context.Context, limit time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		resp, err := client.Get(p.URL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return errors.New("exited early")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("not healthy after %s", limit)
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stdout returns what the process printed so far.
func (p *Process) Stdout() string { return p.stdout.String() }

// Logs returns what the process logged (its standard error) so far.
func (p *Process) Logs() string { return p.stderr.String() }

// Stop interrupts the process and waits for it to end, killing it if it
// has not within 20 s.
func (p *Process) Stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}
