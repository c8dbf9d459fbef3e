package check

import (
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// The tests of deploy/local/cluster.sh run its functions, sourced into real
// bash, in a run directory of their own. Only what is too heavy to run here
// is a fake: furrow, the Temporal SQL tool, temporalsetup and psql are tiny
// shell scripts. Redis, curl, ss and coreutils are the real ones.

const clusterScriptPath = "../local/cluster.sh"

// clusterRun is a run directory of cluster.sh (CLUSTER_DIR) with logs/ and
// bin/, and the environment its bash runs in.
type clusterRun struct {
	t   *testing.T
	dir string
	env []string
}

// newClusterRun makes a run directory whose bin/furrow is the shell script
// furrow; env is added to the environment. Every process the run's pid
// files name is killed when the test ends.
func newClusterRun(t *testing.T, furrow string, env ...string) *clusterRun {
	t.Helper()
	requireTool(t, "bash", "bash")
	dir := t.TempDir()
	for _, sub := range []string{"logs", "bin"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeScript(t, filepath.Join(dir, "bin", "furrow"), furrow)
	t.Cleanup(func() {
		pids, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
		for _, f := range pids {
			b, _ := os.ReadFile(f)
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return &clusterRun{t: t, dir: dir, env: append(os.Environ(), append([]string{"CLUSTER_DIR=" + dir}, env...)...)}
}

func writeScript(t *testing.T, file, body string) {
	t.Helper()
	if err := os.WriteFile(file, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// bash runs script after sourcing cluster.sh, which then only defines its
// functions (set -euo pipefail on, as when it runs), and returns its output
// and whether it exited 0. Past limit its whole process group is killed and
// hung reports it.
func (c *clusterRun) bash(limit time.Duration, script string) (out string, ok, hung bool) {
	c.t.Helper()
	abs, err := filepath.Abs(clusterScriptPath)
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "source "+strconv.Quote(abs)+"\n"+script)
	cmd.Env = c.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	b, err := cmd.CombinedOutput()
	if _, exit := err.(*exec.ExitError); err != nil && !exit && ctx.Err() == nil {
		c.t.Fatalf("bash: %v\n%s", err, b)
	}
	return string(b), err == nil, ctx.Err() != nil
}

func (c *clusterRun) read(name string) string {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, name))
	if err != nil {
		c.t.Fatal(err)
	}
	return string(b)
}

// recordingFurrow is a furrow that writes its FURROW_DATABASE_URL to
// CLUSTER_DIR/database-url and then runs as a worker that has started.
const recordingFurrow = `printf '%s' "$FURROW_DATABASE_URL" >"$CLUSTER_DIR/database-url"
echo 'level=INFO msg="worker started"'
exec sleep 60`

// TestClusterScriptWorkerReadyOnlyOnItsOwnLine stops worker-1 and starts it
// again, the second time as a process that never starts: its start must
// fail. (The log goes on across runs, and the first run's "worker started"
// counted for the second, which was taken as ready at once.)
func TestClusterScriptWorkerReadyOnlyOnItsOwnLine(t *testing.T) {
	c := newClusterRun(t, `if [ -e "$CLUSTER_DIR/silent" ]; then exec sleep 3; fi
sleep 0.5
echo 'level=INFO msg="worker started"'
exec sleep 60`, "CLUSTER_SERVES=1", "CLUSTER_WORKERS=1")
	out, ok, hung := c.bash(time.Minute, `TBIN=/nonexistent
write_state t
start_process worker-1
echo "first start ready"
stop_process worker-1 KILL
touch "$RUN/silent"
start_process worker-1
echo "second start ready"`)
	if hung {
		t.Fatalf("start worker-1 did not return within a minute:\n%s", out)
	}
	if !strings.Contains(out, "first start ready") {
		t.Fatalf("a worker that logged its start was not taken as ready:\n%s", out)
	}
	if ok || strings.Contains(out, "second start ready") || !strings.Contains(out, "worker-1 did not become ready") {
		t.Errorf("a worker that never started was taken as ready, on the earlier run's log line:\n%s", out)
	}
}

// TestClusterScriptCarriesAnyPassword gives cluster.sh a user name and a
// password made of the characters that end a URL's parts, a shell quote or
// a YAML one: the Furrow process, the state file (as the end-to-end tests
// read it) and temporal.yaml must each carry them unchanged.
func TestClusterScriptCarriesAnyPassword(t *testing.T) {
	const user, password = `o'neil@x`, `p/+@#'"%:? $(id)` + "`x`\\é"
	c := newClusterRun(t, recordingFurrow, "CLUSTER_SERVES=1", "CLUSTER_WORKERS=1",
		"CLUSTER_PGUSER="+user, "CLUSTER_PGPASSWORD="+password)
	if out, ok, _ := c.bash(time.Minute, `TBIN=/nonexistent
write_state t
write_temporal_config
start_process worker-1`); !ok {
		t.Fatalf("starting worker-1 failed:\n%s", out)
	}
	check := func(what, raw, db string) {
		t.Helper()
		u, err := url.Parse(raw)
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		if p, _ := u.User.Password(); u.User.Username() != user || p != password || u.Host != "127.0.0.1:5432" || u.Path != "/"+db {
			t.Errorf("%s %q is user %q password %q host %q database %q, want %q %q 127.0.0.1:5432 %q",
				what, raw, u.User.Username(), p, u.Host, u.Path, user, password, db)
		}
	}
	dbURL := c.read("database-url")
	check("FURROW_DATABASE_URL", dbURL, "cluster_t_furrow")
	if !strings.HasSuffix(dbURL, "?sslmode=disable&pool_max_conns=16") {
		t.Errorf("FURROW_DATABASE_URL %q lost its parameters", dbURL)
	}
	visibility := ""
	for _, line := range strings.Split(c.read("state"), "\n") {
		if v, ok := strings.CutPrefix(line, "VISIBILITY_URL="); ok {
			visibility = strings.Trim(v, "'") // as e2e's checkOperatorSettings reads it
		}
	}
	check("the state's VISIBILITY_URL", visibility, "cluster_t_visibility")

	var config struct {
		Persistence struct {
			Datastores map[string]struct {
				SQL struct{ User, Password, ConnectAddr string }
			}
		}
	}
	if err := yaml.Unmarshal([]byte(c.read("temporal.yaml")), &config); err != nil {
		t.Fatalf("temporal.yaml: %v", err)
	}
	for _, store := range []string{"default", "visibility"} {
		got := config.Persistence.Datastores[store].SQL
		if got.User != user || got.Password != password || got.ConnectAddr != "127.0.0.1:5432" {
			t.Errorf("temporal.yaml's %s store has user %q password %q at %q, want %q %q at 127.0.0.1:5432",
				store, got.User, got.Password, got.ConnectAddr, user, password)
		}
	}
}

// TestClusterScriptPrintsNoPassword: up's address lines are read in
// terminals and kept in logs, so the database line names the user and the
// database but not the password, which a client gives as PGPASSWORD.
func TestClusterScriptPrintsNoPassword(t *testing.T) {
	const password = "s3cret-Pw"
	c := newClusterRun(t, recordingFurrow, "CLUSTER_SERVES=1", "CLUSTER_WORKERS=1", "CLUSTER_PGPASSWORD="+password)
	out, ok, _ := c.bash(time.Minute, `TBIN=/nonexistent
write_state t
print_addresses`)
	if !ok {
		t.Fatalf("print_addresses failed:\n%s", out)
	}
	if strings.Contains(out, password) {
		t.Errorf("the address lines show the password:\n%s", out)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "database: "); ok {
			line = v
		}
	}
	u, err := url.Parse(line)
	if err != nil || u.User.Username() != "postgres" || u.Path != "/cluster_t_furrow" {
		t.Fatalf("database line %q (%v), want the user postgres and the database cluster_t_furrow", line, err)
	}
	if !strings.Contains(out, "PGPASSWORD") {
		t.Errorf("nothing says where the password goes:\n%s", out)
	}
}

// TestClusterScriptKeepsThePasswordOffCommandLines runs the Temporal SQL
// tool and temporalsetup (fakes that record what they get): the password
// must reach them in the environment (SQL_PASSWORD, PGPASSWORD), never in
// their arguments, which every user of the machine can read.
func TestClusterScriptKeepsThePasswordOffCommandLines(t *testing.T) {
	const password = "s3cret-Pw"
	c := newClusterRun(t, recordingFurrow, "CLUSTER_SERVES=1", "CLUSTER_WORKERS=1", "CLUSTER_PGPASSWORD="+password)
	tbin := filepath.Join(c.dir, "tbin")
	if err := os.Mkdir(tbin, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Join(tbin, "temporal-sql-tool"),
		`printf '%s\n' "$@" >"$CLUSTER_DIR/sql-args"; printf '%s' "${SQL_PASSWORD:-}" >"$CLUSTER_DIR/sql-env"`)
	writeScript(t, filepath.Join(c.dir, "bin", "temporalsetup"),
		`printf '%s\n' "$@" >"$CLUSTER_DIR/setup-args"; printf '%s' "${PGPASSWORD:-}" >"$CLUSTER_DIR/setup-env"`)
	if out, ok, _ := c.bash(time.Minute, `TBIN=`+tbin+`
write_state t
source "$STATE"
sql_tool --db cluster_t_furrow create-database
temporal_setup`); !ok {
		t.Fatalf("%s", out)
	}
	for _, tool := range []struct{ name, args, env, envVar string }{
		{"temporal-sql-tool", "sql-args", "sql-env", "SQL_PASSWORD"},
		{"temporalsetup", "setup-args", "setup-env", "PGPASSWORD"},
	} {
		if args := c.read(tool.args); strings.Contains(args, password) {
			t.Errorf("%s's command line holds the password:\n%s", tool.name, args)
		}
		if env := c.read(tool.env); env != password {
			t.Errorf("%s got %s=%q, want the password", tool.name, tool.envVar, env)
		}
	}
	if args := c.read("setup-args"); !strings.Contains(args, "postgres://postgres@127.0.0.1:5432/cluster_t_visibility?sslmode=disable\n") {
		t.Errorf("temporalsetup did not get the visibility database's URL:\n%s", args)
	}
}

// TestClusterScriptFilesWithThePasswordAreTheUsers: the state file,
// furrow.env and temporal.yaml hold the database password (and furrow.env
// every FURROW_* setting); under a umask of 022, and over files of an
// earlier run left readable by all, they must come out readable by the
// user alone.
func TestClusterScriptFilesWithThePasswordAreTheUsers(t *testing.T) {
	c := newClusterRun(t, recordingFurrow, "CLUSTER_SERVES=1", "CLUSTER_WORKERS=1",
		"CLUSTER_PGPASSWORD=s3cret", "FURROW_SECRET_KEYS=k1")
	for _, f := range []string{"temporal.yaml", "furrow.env"} {
		if err := os.WriteFile(filepath.Join(c.dir, f), []byte("earlier run\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, ok, _ := c.bash(time.Minute, `umask 022
TBIN=/nonexistent
write_state t
write_temporal_config
umask`); !ok || strings.TrimSpace(out) != "0022" {
		t.Fatalf("writing the state (umask after it: want 0022 unchanged):\n%s", out)
	}
	for _, f := range []string{"state", "furrow.env", "temporal.yaml"} {
		fi, err := os.Stat(filepath.Join(c.dir, f))
		if err != nil {
			t.Error(err)
		} else if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want -rw------- (it holds the database password)", f, fi.Mode().Perm())
		}
	}
}

// TestClusterScriptForwardsOnlyFurrowSettings exports FURROW_URL and
// FURROW_DB, names the script once used for its own database URL and name,
// before starting a worker: the worker must still get the cluster's
// database. (The script forwards every exported FURROW_* variable, and the
// user's FURROW_URL replaced the cluster's.)
func TestClusterScriptForwardsOnlyFurrowSettings(t *testing.T) {
	c := newClusterRun(t, recordingFurrow, "CLUSTER_SERVES=1", "CLUSTER_WORKERS=1",
		"FURROW_URL=postgres://someone@elsewhere:5432/theirs", "FURROW_DB=theirs", "FURROW_POOL=99")
	if out, ok, _ := c.bash(time.Minute, `TBIN=/nonexistent
write_state t
start_process worker-1`); !ok {
		t.Fatalf("starting worker-1 failed:\n%s", out)
	}
	want := "postgres://postgres@127.0.0.1:5432/cluster_t_furrow?sslmode=disable&pool_max_conns=16"
	if got := c.read("database-url"); got != want {
		t.Errorf("worker-1 got FURROW_DATABASE_URL=%s, want the cluster's %s", got, want)
	}
}

// TestClusterScriptBudgetCountsTheStoresFloor asks for pools of 1
// connection: store.Open keeps 5 whatever the pool, so the budget of 2
// serves and 2 workers is 4 x (20+10) + 4 x 5 + 10 = 150, not the 134 a
// pool of 1 suggests. psql is a fake answering max_connections, reserved
// and in use.
func TestClusterScriptBudgetCountsTheStoresFloor(t *testing.T) {
	for _, tc := range []struct {
		free int
		ok   bool
	}{{145, false}, {150, true}} {
		path := t.TempDir()
		writeScript(t, filepath.Join(path, "psql"), "echo '"+strconv.Itoa(tc.free)+" 0 0'")
		c := newClusterRun(t, recordingFurrow, "CLUSTER_FURROW_POOL=1", "PATH="+path+":"+os.Getenv("PATH"))
		out, ok, _ := c.bash(time.Minute, "check_budget 2 2")
		if ok != tc.ok {
			t.Errorf("with %d connections free, check_budget 2 2 of pools of 1 succeeded: %v, want %v:\n%s", tc.free, ok, tc.ok, out)
		}
		if !ok && !strings.Contains(out, "needs 150 connections") {
			t.Errorf("refusal does not count 150 connections:\n%s", out)
		}
	}
}

// TestClusterScriptReadinessProbesGiveUpOnASilentPort puts a listener that
// accepts and never answers on the port of serve-1 and of Redis, whose
// process lives 4 seconds: each probe must give up on it, and the wait end
// with the process (curl and redis-cli, without a time limit, waited for the
// answer forever).
func TestClusterScriptReadinessProbesGiveUpOnASilentPort(t *testing.T) {
	for _, p := range []struct{ name, portVar, tool, pkg string }{
		{"serve-1", "serve_1_PORT", "curl", "curl"},
		{"redis", "REDIS_PORT", "redis-cli", "redis-tools"},
	} {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			requireTool(t, p.tool, p.pkg)
			ln, err := net.Listen("tcp", "127.0.0.1:0") // the kernel accepts; nobody answers
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			c := newClusterRun(t, recordingFurrow)
			start := time.Now()
			out, ok, hung := c.bash(30*time.Second, p.portVar+"="+strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)+`
sleep 4 >/dev/null 2>&1 &
echo $! >"$RUN/`+p.name+`.pid"
wait_ready `+p.name)
			if hung {
				t.Fatalf("wait_ready %s still waited after 30s on a port that never answers:\n%s", p.name, out)
			}
			if ok || !strings.Contains(out, p.name+" did not become ready") {
				t.Errorf("wait_ready %s on a port that never answers: ok %v:\n%s", p.name, ok, out)
			}
			t.Logf("gave up after %s", time.Since(start).Round(time.Second/10))
		})
	}
}

// TestClusterScriptDownStopsAnOlderRun reads a state file as an older
// cluster.sh wrote it (Furrow's database named FURROW_DB): down stops the
// run and names its databases to drop, where it failed on an unbound
// variable.
func TestClusterScriptDownStopsAnOlderRun(t *testing.T) {
	c := newClusterRun(t, recordingFurrow)
	tool := filepath.Join(c.dir, "tbin")
	if err := os.Mkdir(tool, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Join(tool, "temporal-sql-tool"), `echo "$@" >>"$CLUSTER_DIR/dropped"`)
	state := "TBIN=" + tool + "\n" +
		"TEMPORAL_DB=cluster_o_temporal VISIBILITY_DB=cluster_o_visibility FURROW_DB=cluster_o_furrow\n" +
		"FURROW_URL='postgres://postgres@127.0.0.1:5432/cluster_o_furrow?sslmode=disable'\n" +
		"VISIBILITY_URL='postgres://postgres@127.0.0.1:5432/cluster_o_visibility?sslmode=disable'\n" +
		"SERVES=1 WORKERS=1\n"
	if err := os.WriteFile(filepath.Join(c.dir, "state"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	out, ok, _ := c.bash(time.Minute, "down")
	if !ok || !strings.Contains(out, "stopped") || strings.Contains(out, "unbound") {
		t.Fatalf("down of an older run failed:\n%s", out)
	}
	if dropped := c.read("dropped"); !strings.Contains(dropped, "cluster_o_furrow") || !strings.Contains(dropped, "cluster_o_temporal") {
		t.Errorf("dropped %q, want the run's databases", dropped)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "state")); !os.IsNotExist(err) {
		t.Errorf("the state file is still there: %v", err)
	}
}
