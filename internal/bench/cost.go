package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cost is what a run cost the machine, from the start of its load to the
// end of its drain: the CPU seconds of each group of processes (see
// cpuGroups; "machine" is the busy time of every CPU, whatever ran),
// PostgreSQL's split by database, and, when PostgreSQL has
// pg_stat_statements loaded, its statements by database. Comparing the
// costs of the bare engine's run and Furrow's shows where Furrow's own
// work goes.
type Cost struct {
	CPU map[string]float64 `json:"cpu_s"`
	// Postgres is CPU["postgres"] by the database of each connection
	// (otherBackends: the rest), which tells the work of Furrow's own
	// database from that of Temporal's in the same PostgreSQL.
	Postgres map[string]float64 `json:"postgres_cpu_s,omitempty"`
	// FurrowDatabase is the database of the server under test.
	FurrowDatabase string `json:"furrow_database,omitempty"`
	// Steal is the CPU seconds the hypervisor took from the machine's
	// CPUs (steal in /proc/stat), which CPU["machine"] leaves out: a run
	// with much of it ran on a machine slower than its figures show.
	Steal float64 `json:"steal_s"`
	// Wall is the time measured and Cores the machine's CPUs, so that the
	// machine's busy share can be told.
	Wall       float64         `json:"wall_s"`
	Cores      int             `json:"cores"`
	Databases  []DatabaseCost  `json:"databases,omitempty"`
	Statements []StatementCost `json:"statements,omitempty"`
}

// DatabaseCost is the work of PostgreSQL's statements in one database.
type DatabaseCost struct {
	Database string  `json:"database"`
	Calls    int64   `json:"calls"`
	ExecMs   float64 `json:"exec_ms"`
}

// StatementCost is one statement's work, by pg_stat_statements.
type StatementCost struct {
	Database string  `json:"database"`
	Calls    int64   `json:"calls"`
	ExecMs   float64 `json:"exec_ms"`
	Query    string  `json:"query"`
}

// costMeter measures a Cost between start and stop.
type costMeter struct {
	databaseURL string
	statements  bool // pg_stat_statements is loaded and was reset
	backends    map[int]string
	cpu         *groupCPU
	busy, steal time.Duration
	began       time.Time
}

// startCost starts measuring; server is the pid of the Furrow process
// under test (0: none, or its processes are told by name).
func startCost(ctx context.Context, databaseURL string, server int) *costMeter {
	m := &costMeter{databaseURL: databaseURL}
	m.statements = resetStatements(ctx, databaseURL) == nil
	m.backends = pgBackends(ctx, databaseURL)
	m.busy, m.steal = machineBusy()
	m.cpu, m.began = startGroupCPUWith(server), time.Now()
	return m
}

// stop returns the cost since start.
func (m *costMeter) stop(ctx context.Context) Cost {
	procs := m.cpu.stopEach()
	c := Cost{CPU: byGroup(procs), Wall: time.Since(m.began).Seconds(), Cores: runtime.NumCPU()}
	busy, steal := machineBusy()
	c.CPU["machine"], c.Steal = (busy - m.busy).Seconds(), (steal - m.steal).Seconds()
	// A connection may have opened, or ended, since the start.
	if backends := pgBackends(ctx, m.databaseURL); backends != nil || m.backends != nil {
		c.Postgres = postgresByDatabase(procs, mergeBackends(m.backends, backends))
		c.FurrowDatabase = databaseName(m.databaseURL)
	}
	if m.statements {
		c.Databases, c.Statements, _ = readStatements(ctx, m.databaseURL)
	}
	return c
}

// machineBusy is the time every CPU of the machine spent running, and the
// time the hypervisor took from it (steal), from /proc/stat (Linux only;
// 0 elsewhere).
func machineBusy() (busy, steal time.Duration) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	return parseProcStat(string(b))
}

// parseProcStat reads the busy and steal time of the "cpu" line of a
// /proc/stat text. Its fields are user nice system idle iowait irq softirq
// steal guest guest_nice, in clock ticks. Busy is user, nice, system, irq
// and softirq: not idle or iowait, which are idling; not steal, time the
// hypervisor ran something else while this machine's CPU waited; and not
// guest and guest_nice, which the kernel already counts in user and nice
// (a guest's time is added to both).
func parseProcStat(text string) (busy, steal time.Duration) {
	line, _, _ := strings.Cut(text, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0
	}
	tick := func(i int) time.Duration {
		if i >= len(f) {
			return 0
		}
		n, _ := strconv.ParseInt(f[i], 10, 64)
		return time.Duration(n) * clockTick
	}
	const user, nice, system, irq, softirq, stolen = 1, 2, 3, 6, 7, 8
	return tick(user) + tick(nice) + tick(system) + tick(irq) + tick(softirq), tick(stolen)
}

// resetStatements clears pg_stat_statements, creating the extension's view
// in databaseURL's database if needed; an error means the module is not
// loaded (shared_preload_libraries) or the role may not use it.
func resetStatements(ctx context.Context, databaseURL string) error {
	return withPostgres(ctx, databaseURL, func(ctx context.Context, conn *pgx.Conn) error {
		var loaded bool
		if err := conn.QueryRow(ctx, `SELECT 'pg_stat_statements' = ANY(string_to_array(replace(current_setting('shared_preload_libraries'), ' ', ''), ','))`).Scan(&loaded); err != nil || !loaded {
			return fmt.Errorf("pg_stat_statements is not loaded")
		}
		if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, "SELECT pg_stat_statements_reset()")
		return err
	})
}

// topStatements is how many statements a Cost lists.
const topStatements = 10

// readStatements reads the statements' work since the reset, by database
// and the costliest statements.
func readStatements(ctx context.Context, databaseURL string) ([]DatabaseCost, []StatementCost, error) {
	var all []StatementCost
	err := withPostgres(ctx, databaseURL, func(ctx context.Context, conn *pgx.Conn) (err error) {
		rows, _ := conn.Query(ctx, `SELECT d.datname, s.calls, s.total_exec_time,
				left(regexp_replace(s.query, '\s+', ' ', 'g'), 110)
			FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
			WHERE s.query NOT LIKE '%pg_stat_statements%'`)
		all, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (StatementCost, error) {
			var s StatementCost
			return s, r.Scan(&s.Database, &s.Calls, &s.ExecMs, &s.Query)
		})
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	byDB := map[string]*DatabaseCost{}
	for _, s := range all {
		d := byDB[s.Database]
		if d == nil {
			d = &DatabaseCost{Database: s.Database}
			byDB[s.Database] = d
		}
		d.Calls += s.Calls
		d.ExecMs += s.ExecMs
	}
	var dbs []DatabaseCost
	for _, k := range slices.Sorted(maps.Keys(byDB)) {
		dbs = append(dbs, *byDB[k])
	}
	slices.SortFunc(all, func(a, b StatementCost) int { return cmp.Compare(b.ExecMs, a.ExecMs) })
	return dbs, all[:min(len(all), topStatements)], nil
}

// Print writes c per delivery, for people.
func (c Cost) Print(w io.Writer, deliveries int64) {
	if deliveries <= 0 || len(c.CPU) == 0 {
		return
	}
	per := func(s float64) float64 { return 1000 * s / float64(deliveries) }
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c.CPU)) {
		if k != "machine" {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, per(c.CPU[k])))
		}
	}
	fmt.Fprintf(w, "  CPU per delivery: machine %.2f ms (%s)\n", per(c.CPU["machine"]), strings.Join(parts, ", "))
	if c.Steal > 0 {
		fmt.Fprintf(w, "  steal: the hypervisor took %.1f s of the CPUs (%.0f%% of them over the run), not counted as busy above\n",
			c.Steal, 100*ratio(c.Steal, c.Wall*float64(c.Cores)))
	}
	c.printPostgres(w, deliveries)
	for _, d := range c.Databases {
		fmt.Fprintf(w, "  statements in %s: %.1f calls, %.2f ms of execution per delivery\n",
			d.Database, float64(d.Calls)/float64(deliveries), d.ExecMs/float64(deliveries))
	}
	for _, s := range c.Statements {
		fmt.Fprintf(w, "    %8.1f ms %7d calls  %s: %s\n", s.ExecMs, s.Calls, s.Database, s.Query)
	}
}

// cpuBound is the share of the machine's CPU above which a run is taken
// to be held back by it: measured busy, or needed by the offered rate at
// the measured cost per delivery. Processes fall behind before every core
// is full, so a run whose offered rate needs 90% of the cores is at the
// limit even when it measured less busy.
const cpuBound = 0.9

// why says, for a run whose backlog grew or lagged at the offered rate,
// whether the machine's CPU was the limit and, if so, about how many
// deliveries a second the machine holds at this cost and what share of it
// the offered rate needs; "" when the CPU was not measured.
func (c Cost) why(deliveries int64, offered float64) string {
	machine := c.CPU["machine"]
	if deliveries <= 0 || machine <= 0 || c.Wall <= 0 || c.Cores <= 0 {
		return ""
	}
	// The cores' time the hypervisor took was not the run's to use.
	cores := float64(c.Cores) - c.Steal/c.Wall
	if cores <= 0 {
		return ""
	}
	busy := machine / (c.Wall * cores)
	per := machine / float64(deliveries)
	need := per * offered / cores
	over := fmt.Sprintf("%d cores", c.Cores)
	if c.Steal > 0 {
		over += fmt.Sprintf(" less %.2f the hypervisor took", c.Steal/c.Wall)
	}
	// Compared as printed, so that a run never reads "90% needed" beside
	// "not the machine's CPU".
	if math.Round(100*busy) < 100*cpuBound && math.Round(100*need) < 100*cpuBound {
		return fmt.Sprintf("not the machine's CPU (%.0f%% busy over %s, %.0f%% needed by the offered rate): look at the outbox rows above (the dispatchers' starts), "+
			"Temporal's and PostgreSQL's logs, and the connection budget (docs/operating/production.md)", 100*busy, over, 100*need)
	}
	return fmt.Sprintf("the machine's CPU: %.0f%% busy over %s at %.2f ms of it per delivery, every process counted, "+
		"so this machine holds about %.0f deliveries/s at most, and the %.0f/s offered needs %.0f%% of it",
		100*busy, over, 1000*per, cores/per, offered, 100*need)
}

// loadAverage reads the machine's load average (Linux only; zeros
// elsewhere).
func loadAverage() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	for i := range min(len(f), 3) {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

// settingNames are PostgreSQL's settings that bear on a run's figures.
var settingNames = []string{"max_connections", "shared_buffers", "synchronous_commit", "shared_preload_libraries", "autovacuum"}

// postgresSettings reads settingNames; nil when PostgreSQL cannot tell.
func postgresSettings(ctx context.Context, databaseURL string) map[string]string {
	out := map[string]string{}
	if withPostgres(ctx, databaseURL, func(ctx context.Context, conn *pgx.Conn) error {
		for _, n := range settingNames {
			var v string
			if conn.QueryRow(ctx, "SELECT current_setting($1)", n).Scan(&v) == nil {
				out[n] = v
			}
		}
		return nil
	}) != nil {
		return nil
	}
	return out
}

// printMachine writes the load and settings a run began with.
func printMachine(w io.Writer, load [3]float64, settings map[string]string) {
	var parts []string
	for _, n := range settingNames {
		if v, ok := settings[n]; ok {
			parts = append(parts, fmt.Sprintf("%s=%q", n, v))
		}
	}
	fmt.Fprintf(w, "machine: load average %.2f %.2f %.2f at the start; PostgreSQL %s\n", load[0], load[1], load[2], strings.Join(parts, " "))
}

// meterTimeout bounds each of the meters' own calls to PostgreSQL or
// Redis, opening the connection included: a silent one leaves its figures
// out instead of holding the run.
const meterTimeout = 5 * time.Second

// withPostgres runs fn on a connection of its own to databaseURL, within
// meterTimeout.
func withPostgres(ctx context.Context, databaseURL string, fn func(context.Context, *pgx.Conn) error) error {
	if databaseURL == "" {
		return fmt.Errorf("no database")
	}
	ctx, cancel := context.WithTimeout(ctx, meterTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return fn(ctx, conn)
}
