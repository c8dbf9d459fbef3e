package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// `furrow <command> --help` succeeds and prints that command's usage once.
func TestCommandHelp(t *testing.T) {
	lines := [][]string{{"admin", "create-user"}, {"admin", "seal-secrets"}, {"admin", "reseal"}, {"bench", "ingest"}, {"bench", "baseline"}, {"bench", "delivery"}}
	for name := range commandUsage {
		lines = append(lines, []string{name})
	}
	for _, line := range lines {
		for _, flag := range []string{"--help", "-h"} {
			var out, errs bytes.Buffer
			args := append(append([]string{}, line...), flag)
			err := run(context.Background(), args, func(string) string { return "" }, &out, &errs)
			usage := strings.ToLower(out.String())
			if err != nil || strings.Count(usage, "usage") != 1 || !strings.Contains(usage, strings.Join(line, " ")) {
				t.Errorf("furrow %s: err %v, stdout %q, stderr %q", strings.Join(args, " "), err, out.String(), errs.String())
			}
		}
	}
}

// The commands with flags read them before any setting: their help prints,
// and a usage error exits 2 with what was wrong, whatever the settings.
func TestFlagsAreReadBeforeSettings(t *testing.T) {
	bad := map[string]map[string]string{
		"malformed key ring": {"FURROW_SECRET_KEYS": "k1:short"},
		"malformed setting":  {"FURROW_RETRY_SCHEDULE": "bogus"},
		"missing key ring":   {"FURROW_SECRET_KEYS_FILE": t.TempDir() + "/none"},
	}
	help := [][]string{{"admin", "create-user"}, {"admin", "seal-secrets"}, {"admin", "reseal"}, {"bench", "ingest"}, {"bench", "baseline"}, {"bench", "delivery"}}
	usageErrors := []struct {
		args []string
		want string
	}{
		{[]string{"admin", "create-user"}, "--email is required"},
		{[]string{"admin", "create-user", "--email", "not an email"}, `--email "not an email"`},
		{[]string{"admin", "reseal", "--batch", "0"}, "--batch must be positive"},
		{[]string{"bench", "ingest", "--devices", "0"}, "must be positive"},
		{[]string{"bench", "baseline", "--concurrency", "0"}, "must be positive"},
		{[]string{"bench", "delivery", "--url", "http://127.0.0.1:1"}, "--url needs --cert-dir"},
	}
	for name, e := range bad {
		if _, err := loadConfig(env(e)); err == nil {
			t.Fatalf("%s: the settings load", name)
		}
		for _, line := range help {
			for _, flag := range []string{"--help", "-h"} {
				args := append(append([]string{}, line...), flag)
				var out, stderr bytes.Buffer
				code := report(run(context.Background(), args, env(e), &out, &bytes.Buffer{}), &stderr)
				usage := strings.ToLower(out.String())
				if code != 0 || !strings.Contains(usage, "usage") || !strings.Contains(usage, "furrow "+strings.Join(line, " ")) {
					t.Errorf("%s: furrow %s: exit %d, stderr %q, stdout %q; want 0 and the usage", name, strings.Join(args, " "), code, stderr.String(), out.String())
				}
			}
		}
		for _, c := range usageErrors {
			var stderr bytes.Buffer
			code := report(run(context.Background(), c.args, env(e), &bytes.Buffer{}, &bytes.Buffer{}), &stderr)
			if first, _, _ := strings.Cut(stderr.String(), "\n"); code != 2 || !strings.Contains(first, c.want) {
				t.Errorf("%s: furrow %s: exit %d, first line of stderr %q; want 2 and %q", name, strings.Join(c.args, " "), code, first, c.want)
			}
		}
	}
}
