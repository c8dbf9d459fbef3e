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
