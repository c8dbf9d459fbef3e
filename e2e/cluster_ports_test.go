package e2e

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestClusterGivesEveryListenerItsOwnPort chooses the ports of many
// topologies the way `cluster.sh up` does, and writes each one's Temporal
// config: no port may serve two listeners of one topology. (When free_port
// ran in $(...), each call forgot the ports the others had handed out, and
// about one `up` in sixty started two Temporal services on one port.)
func TestClusterGivesEveryListenerItsOwnPort(t *testing.T) {
	const topologies = 200
	script := `set -euo pipefail
source ../deploy/local/cluster.sh
RUN=$(mktemp -d)
trap 'rm -rf "$RUN"' EXIT
for i in $(seq 1 ` + strconv.Itoa(topologies) + `); do
  TAKEN=" "
  alloc_ports 2 2 >"$RUN/state"
  TEMPORAL_DB=t VISIBILITY_DB=v write_temporal_config
  echo "--- topology $i"
  cat "$RUN/state" "$RUN/temporal.yaml"
done`
	out, err := exec.Command("bash", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("choosing ports: %v\n%s", err, out)
	}
	parts := strings.Split(string(out), "--- topology ")[1:]
	if len(parts) != topologies {
		t.Fatalf("got %d topologies, want %d:\n%s", len(parts), topologies, out)
	}
	assign := regexp.MustCompile(`\b[A-Za-z_0-9]*(?:PORT|MEMBERSHIP|HTTP|GRPC)=(\d+)`)
	yamlPort := regexp.MustCompile(`(?i)\b(?:grpcPort|membershipPort|httpPort|port): (\d+)`)
	for _, part := range parts {
		state, config, _ := strings.Cut(part, "log:")
		seen := map[string]string{}
		for _, m := range assign.FindAllStringSubmatch(state, -1) {
			// Above the ports of the tests' own servers (loopback.FreeAddr),
			// below Temporal's smallint membership column.
			if p, _ := strconv.Atoi(m[1]); p < 20000 || p >= 32768 {
				t.Fatalf("%s is outside [20000, 32768)", m[0])
			}
			if other, dup := seen[m[1]]; dup {
				t.Fatalf("port %s is both %s and %s:\n%s", m[1], other, m[0], part)
			}
			seen[m[1]] = m[0]
		}
		// 3 + 8 Temporal and Redis ports, 3 for each of 2 serves and 2 workers.
		if len(seen) != 23 {
			t.Fatalf("state assigns %d ports, want 23:\n%s", len(seen), state)
		}
		// Every port of the config is one the state assigned, to the same use.
		for _, m := range yamlPort.FindAllStringSubmatch(config, -1) {
			if _, ok := seen[m[1]]; !ok {
				t.Fatalf("temporal.yaml listens on %s, which the state does not assign:\n%s", m[0], part)
			}
		}
		if n := len(yamlPort.FindAllString(config, -1)); n != 10 {
			t.Fatalf("temporal.yaml names %d ports, want 10 (pprof, frontend gRPC, HTTP and membership, 2 for each of 3 services):\n%s", n, config)
		}
	}
}

// TestClusterTellsItsOwnListenerFromAnother asks cluster.sh's readiness
// check who holds a port this test listens on: a process of the topology
// that lost its port to another program must not count as ready.
func TestClusterTellsItsOwnListenerFromAnother(t *testing.T) {
	if _, err := exec.LookPath("ss"); err != nil {
		t.Fatalf("ss (iproute2) is missing, which cluster.sh's readiness check needs to tell its listeners from others': %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	run := t.TempDir()
	for name, pid := range map[string]int{"mine": os.Getpid(), "other": os.Getppid()} {
		if err := os.WriteFile(filepath.Join(run, name+".pid"), []byte(strconv.Itoa(pid)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := `source ../deploy/local/cluster.sh; set +e; RUN=` + run + `
owns mine ` + port + `; echo "mine $?"
owns other ` + port + `; echo "other $?"
owns missing ` + port + `; echo "missing $?"`
	out, err := exec.Command("bash", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, want := strings.Fields(string(out)), []string{"mine", "0", "other", "1", "missing", "1"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("owns answered %q, want %q", got, want)
	}
}
