package dispatch_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow/dispatch"
	"github.com/furrowhq/furrow/store"
	"github.com/furrowhq/furrow/temporal"
)

// childEnv makes the test binary run as a dispatcher process that claims
// events and then hangs in its first webhook lookup until killed, or
// stopped with SIGTERM as furrow serve is.
const childEnv = "FURROW_TEST_DISPATCH_CHILD"

// runChild is the child process: FURROW_TEST_DISPATCH_CHILD holds
// "<database url> <temporal address>". It prints "claimed" once it holds
// claims, and its lease owner id.
func runChild() int {
	dbURL, tmpAddr, _ := strings.Cut(os.Getenv(childEnv), " ")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	db, err := store.Open(ctx, dbURL, store.Options{MaxConns: 4, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tc, err := temporal.DialLazy(temporal.Options{Address: tmpAddr, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var (
		once sync.Once
		d    *dispatch.Dispatcher
	)
	hang := lookups{Webhooks: db, before: func(ctx context.Context, _ uuid.UUID) error {
		once.Do(func() { fmt.Println("claimed", d.Owner()) })
		<-ctx.Done() // killed, or stopped
		return ctx.Err()
	}}
	// Calls may hang for a minute: only the signal ends the lookup.
	d = dispatch.New(dispatch.Config{CallTimeout: time.Minute}, dispatch.Deps{Outbox: db, Webhooks: hang, Starter: tc, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	_ = d.Run(ctx)
	db.Close()
	return 0
}

type childProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	owner uuid.UUID // the child dispatcher's lease owner id
}

// startChild runs a child dispatcher and waits until it holds claims.
func startChild(t *testing.T, dbURL, tmpAddr string) *childProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+dbURL+" "+tmpAddr)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &childProc{t: t, cmd: cmd}
	t.Cleanup(c.kill)
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if owner, ok := strings.CutPrefix(sc.Text(), "claimed "); ok {
				ready <- owner
				return
			}
		}
		ready <- ""
	}()
	select {
	case owner := <-ready:
		if c.owner, err = uuid.Parse(owner); err != nil {
			t.Fatalf("the child dispatcher exited before claiming (%q)", owner)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the child dispatcher did not claim within 60 s")
	}
	return c
}

// kill ends the child with SIGKILL: it cannot give anything back.
func (c *childProc) kill() {
	if c.cmd.ProcessState != nil {
		return
	}
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}

// term stops the child with SIGTERM and waits for it to exit.
func (c *childProc) term() error {
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("the child did not exit within 30 s of SIGTERM")
	}
}
