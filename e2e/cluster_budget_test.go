package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestClusterRefusesAConnectionBudgetPostgreSQLCannotHold asks cluster.sh
// for pools far past any max_connections: it must refuse before starting
// anything, naming the setting and the numbers.
func TestClusterRefusesAConnectionBudgetPostgreSQLCannotHold(t *testing.T) {
	c := &cluster{t: t, dir: t.TempDir()}
	c.env = append(os.Environ(), "CLUSTER_DIR="+c.dir, "CLUSTER_FURROW_POOL=100000", "CLUSTER_SERVES=1", "CLUSTER_WORKERS=1")
	out, err := c.script(time.Minute, "up")
	if err == nil {
		c.script(5*time.Minute, "down")
		t.Fatalf("cluster.sh up started with pools of 100,000 connections:\n%s", out)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`max_connections is \d+`),
		regexp.MustCompile(`needs 200130 connections`), // 4 x (20+10) + 2 x 100000 + 10
		regexp.MustCompile(`Raise max_connections to at least \d+`),
	} {
		if !want.MatchString(out) {
			t.Errorf("refusal does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(c.dir, "state")); err == nil {
		t.Errorf("refused up left a state file behind")
	}
	if strings.Contains(out, "starting") {
		t.Errorf("refused up started processes:\n%s", out)
	}
}
