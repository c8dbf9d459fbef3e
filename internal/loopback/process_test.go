package loopback

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"testing"
	"time"
)

// fakeMode, when set in the environment, makes the test binary stand in
// for furrow: "serve" answers /healthz until interrupted, "exit" fails at
// once.
const fakeMode = "LOOPBACK_TEST_FAKE_FURROW"

func TestMain(m *testing.M) {
	switch os.Getenv(fakeMode) {
	case "serve":
		fakeServe()
	case "exit":
		fmt.Fprintln(os.Stderr, "fake furrow: cannot start")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

func fakeServe() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	srv := &http.Server{Addr: os.Getenv("FURROW_HTTP_ADDR"), ReadHeaderTimeout: time.Second}
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	go func() { _ = srv.ListenAndServe() }()
	fmt.Println("demo key fdk_x")
	fmt.Fprintln(os.Stderr, "fake furrow started, metrics on "+os.Getenv("FURROW_METRICS_ADDR"))
	<-stop
	fmt.Fprintln(os.Stderr, "fake furrow stopped")
	os.Exit(0)
}

func startFake(t *testing.T, mode string, logLimit int, env ...string) *Process {
	t.Helper()
	p, err := Start(Command{Binary: os.Args[0], Args: []string{"serve"}, Env: append(env, fakeMode+"="+mode), LogLimit: logLimit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// TestProcessOnFreePorts starts a process on free ports, waits for it and
// stops it, with its output kept apart.
func TestProcessOnFreePorts(t *testing.T) {
	p := startFake(t, "serve", 0)
	if err := p.WaitHealthy(context.Background(), 30*time.Second); err != nil {
		t.Fatalf("%v; logs:\n%s", err, p.Logs())
	}
	if !strings.HasPrefix(p.URL, "http://127.0.0.1:") || !strings.HasPrefix(p.MetricsURL, "http://127.0.0.1:") || p.Pid() <= 0 {
		t.Fatalf("URL %q, metrics %q, pid %d", p.URL, p.MetricsURL, p.Pid())
	}
	metrics := strings.TrimSuffix(strings.TrimPrefix(p.MetricsURL, "http://"), "/metrics")
	if !strings.Contains(p.Logs(), "metrics on "+metrics) || strings.Contains(p.Logs(), "fdk_") {
		t.Errorf("logs %q", p.Logs())
	}
	if p.Stdout() != "demo key fdk_x\n" {
		t.Errorf("stdout %q", p.Stdout())
	}
	p.Stop()
	if !strings.Contains(p.Logs(), "fake furrow stopped") {
		t.Errorf("the process was not interrupted: %q", p.Logs())
	}
}

// TestProcessKeepsGivenAddress uses the address the environment names, and
// keeps only the end of the logs when asked to.
func TestProcessKeepsGivenAddress(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	p := startFake(t, "serve", 10, "FURROW_HTTP_ADDR=127.0.0.1:1", "FURROW_HTTP_ADDR="+addr)
	if p.URL != "http://"+addr {
		t.Fatalf("URL %q, want the last FURROW_HTTP_ADDR %s", p.URL, addr)
	}
	if err := p.WaitHealthy(context.Background(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := p.Logs(); len(got) > 10 {
		t.Errorf("logs %q exceed the limit of 10 bytes", got)
	}
}

// TestProcessExitingEarly fails the wait at once, with the log kept.
func TestProcessExitingEarly(t *testing.T) {
	p := startFake(t, "exit", 0)
	begin := time.Now()
	err := p.WaitHealthy(context.Background(), time.Minute)
	if err == nil || time.Since(begin) > 30*time.Second {
		t.Fatalf("WaitHealthy = %v after %s", err, time.Since(begin))
	}
	if !strings.Contains(p.Logs(), "cannot start") {
		t.Errorf("logs %q", p.Logs())
	}
}
