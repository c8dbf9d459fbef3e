package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
)

// A command line that cannot be understood exits 2 with what was wrong in
// it above the usage; one without a command prints the usage alone.
func TestUsageErrorSaysWhatWasWrong(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"nope"}, `unknown command "nope"`},
		{[]string{"admin", "create-user"}, "--email is required"},
		{[]string{"admin", "create-user", "--email", "a@example.com", "x"}, `unexpected argument "x"`},
		{[]string{"admin", "create-user", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"admin", "seal-secrets", "--batch", "0"}, "--batch must be positive"},
		{[]string{"admin", "nope"}, "expected create-user, seal-secrets or reseal"},
		{[]string{"probe"}, "probe takes one URL"},
		{[]string{"migrate", "--dry-run"}, `unexpected argument "--dry-run"`},
	}
	for _, c := range cases {
		var out, errs, stderr bytes.Buffer
		err := run(context.Background(), c.args, env(nil), &out, &errs)
		code := report(err, &stderr)
		first, rest, _ := strings.Cut(stderr.String(), "\n")
		if code != 2 || !strings.HasPrefix(first, "furrow: ") || !strings.Contains(first, c.want) || rest != usage {
			t.Errorf("furrow %s: exit %d, first line of stderr %q (then the usage: %v); want 2, furrow: and %q, then the usage",
				strings.Join(c.args, " "), code, first, rest == usage, c.want)
		}
	}
	var stderr bytes.Buffer
	if code := report(run(context.Background(), nil, env(nil), &bytes.Buffer{}, &bytes.Buffer{}), &stderr); code != 2 || stderr.String() != usage {
		t.Errorf("furrow: exit %d, stderr %q; want 2 and the usage alone", code, stderr.String())
	}
	stderr.Reset()
	if code := report(errors.New("boom"), &stderr); code != 1 || stderr.String() != "furrow: boom\n" {
		t.Errorf("another error: exit %d, stderr %q", code, stderr.String())
	}
}

// The long-running commands and migrate refuse arguments, which they would
// otherwise ignore (furrow migrate --dry-run would migrate), before reading
// any setting; -h and --help still print their usage.
func TestServiceCommandsRefuseArguments(t *testing.T) {
	// A malformed setting: the command line must be refused before the
	// settings are read, so that nothing starts.
	bad := env(map[string]string{"FURROW_RETRY_SCHEDULE": "bogus"})
	for _, cmd := range []string{"dev", "serve", "worker", "migrate"} {
		for _, extra := range []string{"--dry-run", "now"} {
			err := run(context.Background(), []string{cmd, extra}, bad, &bytes.Buffer{}, &bytes.Buffer{})
			if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "FURROW_*") || !strings.Contains(err.Error(), extra) {
				t.Errorf("furrow %s %s: %v; want a usage error naming the argument and saying settings are FURROW_* variables", cmd, extra, err)
			}
		}
		for _, help := range []string{"-h", "--help"} {
			var out bytes.Buffer
			if err := run(context.Background(), []string{cmd, help}, bad, &out, &bytes.Buffer{}); err != nil || !strings.Contains(out.String(), "usage: furrow "+cmd) {
				t.Errorf("furrow %s %s: %v, %q", cmd, help, err, out.String())
			}
		}
	}
}

// help and probe work whatever the settings: probe is the containers'
// health check, which a malformed setting or an unreadable key-ring file
// must not fail.
func TestHelpAndProbeIgnoreSettings(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ready")) }))
	defer srv.Close()
	bad := map[string]map[string]string{
		"malformed setting":  {"FURROW_RETRY_SCHEDULE": "bogus"},
		"missing key ring":   {"FURROW_SECRET_KEYS_FILE": t.TempDir() + "/none"},
		"malformed key ring": {"FURROW_SECRET_KEYS": "k1:short"},
	}
	for name, e := range bad {
		if _, err := loadConfig(env(e)); err == nil {
			t.Fatalf("%s: the settings load", name)
		}
		var out bytes.Buffer
		if err := run(context.Background(), []string{"probe", srv.URL}, env(e), &out, &bytes.Buffer{}); err != nil || !strings.HasPrefix(out.String(), "200") {
			t.Errorf("%s: furrow probe: %v, %q", name, err, out.String())
		}
		for _, help := range []string{"help", "-h", "--help"} {
			out.Reset()
			if err := run(context.Background(), []string{help}, env(e), &out, &bytes.Buffer{}); err != nil || out.String() != usage {
				t.Errorf("%s: furrow %s: %v, %q", name, help, err, out.String())
			}
		}
	}
}

// silentPostgres listens on a local port and accepts connections without
// ever answering, as a server behind a dropped network would.
func silentPostgres(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "postgres://furrow@" + ln.Addr().String() + "/furrow?sslmode=disable"
}

// migrate and admin create-user connect with FURROW_CONNECT_TIMEOUT, as
// serve does, rather than without a bound (migrate) or with the default
// (create-user).
func TestCommandsConnectWithTheConfiguredBounds(t *testing.T) {
	e := env(map[string]string{"FURROW_DATABASE_URL": silentPostgres(t), "FURROW_CONNECT_TIMEOUT": "200ms"})
	for _, args := range [][]string{{"migrate"}, {"admin", "create-user", "--email", "a@example.com"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		began := time.Now()
		err := run(ctx, args, e, &bytes.Buffer{}, &bytes.Buffer{})
		took := time.Since(began)
		cancel()
		if err == nil || took > 2*time.Second {
			t.Errorf("furrow %s against a silent server: %v after %s; want a failure within about 200 ms", strings.Join(args, " "), err, took.Round(time.Millisecond))
		}
	}
}

// admin create-user refuses, as a usage error and before connecting, an
// --email that is plainly no address.
func TestCreateUserRefusesWhatIsNoEmail(t *testing.T) {
	// Were the check missing, the command would get as far as this
	// database, which refuses connections, and fail with exit 1.
	e := env(map[string]string{"FURROW_DATABASE_URL": closedPostgres(t), "FURROW_CONNECT_TIMEOUT": "200ms"})
	for _, email := range []string{"   ", "not an email", "ada@example.com\nbob@example.com", "ada\x00@example.com", "@example.com", "ada@"} {
		var stderr bytes.Buffer
		code := report(run(context.Background(), []string{"admin", "create-user", "--email", email}, e, &bytes.Buffer{}, &bytes.Buffer{}), &stderr)
		if first, _, _ := strings.Cut(stderr.String(), "\n"); code != 2 || !strings.Contains(first, "--email") || !strings.Contains(first, "address") {
			t.Errorf("--email %q: exit %d, first line of stderr %q; want 2 and an error saying what an address is", email, code, first)
		}
	}
}

// Every process that sends deliveries (dev, serve, and worker, which sends
// the retries) says once, at start, that webhooks may point anywhere.
func TestAllowPrivateIsLoggedByEveryDeliveringProcess(t *testing.T) {
	e := env(map[string]string{
		"FURROW_WEBHOOK_ALLOW_PRIVATE": "true", "FURROW_METRICS_ADDR": "off",
		// Each command then stops early: worker and serve for want of
		// Temporal, dev when its migration cannot connect.
		"FURROW_DATABASE_URL": closedPostgres(t), "FURROW_CONNECT_TIMEOUT": "200ms",
	})
	for _, cmd := range []string{"worker", "serve", "dev"} {
		var stderr bytes.Buffer
		err := run(context.Background(), []string{cmd}, e, &bytes.Buffer{}, &stderr)
		if err == nil {
			t.Fatalf("furrow %s ran without Temporal or a database", cmd)
		}
		warnings := 0
		for _, line := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(line, "level=WARN") && strings.Contains(line, "FURROW_WEBHOOK_ALLOW_PRIVATE") {
				warnings++
			}
		}
		if warnings != 1 {
			t.Errorf("furrow %s: %d warnings naming FURROW_WEBHOOK_ALLOW_PRIVATE, want 1; stderr:\n%s", cmd, warnings, stderr.String())
		}
	}
}

// probe exits 0 only when the URL itself answers 200: a redirect to a page
// that does is not followed.
func TestProbeDoesNotFollowRedirects(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			http.Redirect(w, r, "/login", http.StatusFound)
			return
		}
		_, _ = w.Write([]byte("login page"))
	}))
	defer srv.Close()
	var out, stderr bytes.Buffer
	code := report(run(context.Background(), []string{"probe", srv.URL + "/readyz"}, env(nil), &out, &bytes.Buffer{}), &stderr)
	if code != 1 || !strings.HasPrefix(out.String(), "302") || !strings.Contains(stderr.String(), "answered 302") {
		t.Errorf("furrow probe of a redirect: exit %d, stdout %q, stderr %q; want 1 and the 302", code, out.String(), stderr.String())
	}
}

// closedPostgres returns the URL of a local port nothing listens on.
func closedPostgres(t *testing.T) string {
	return "postgres://furrow@" + testenv.ClosedAddr(t) + "/furrow?sslmode=disable"
}
