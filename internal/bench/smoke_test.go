package bench_test

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/internal/bench"
	"github.com/furrowhq/furrow/internal/loopback"
	"github.com/furrowhq/furrow/internal/testenv"
)

// The smoke tests run each `furrow bench` tool for a few seconds against
// real PostgreSQL, Redis and furrow processes, and check that it produced
// figures and that no guarantee broke. They assert no timings.

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// furrowBinary builds cmd/furrow once per test run.
func furrowBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "furrow-bench-test-")
		if err != nil {
			buildErr = err
			return
		}
		bench.AfterTests(func() { os.RemoveAll(dir) })
		binary, buildErr = loopback.BuildFurrow(dir)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// runBench runs `furrow bench args... --json` and decodes its output into v.
func runBench(t *testing.T, v any, args ...string) {
	t.Helper()
	cmd := exec.Command(furrowBinary(t), append(append([]string{"bench"}, args...), "--json")...)
	cmd.Env = append(os.Environ(),
		"FURROW_DATABASE_URL="+testenv.PostgresURL(t), "FURROW_REDIS_URL="+testenv.RedisURL(t))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("furrow bench %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), v); err != nil {
		t.Fatalf("furrow bench %v printed %q: %v", args, stdout.String(), err)
	}
}

type summary struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

func (s summary) check(t *testing.T, what string, n int64) {
	t.Helper()
	if int64(s.Count) != n || s.P50 <= 0 || s.P99 < s.P50 || s.Max < s.P99 {
		t.Errorf("%s latency %+v for %d requests", what, s, n)
	}
}

func TestSmokeBaseline(t *testing.T) {
	testenv.SkipShort(t, "the furrow binary's bench baseline under load")
	var r struct {
		Transactions int64   `json:"transactions"`
		Failures     int64   `json:"failures"`
		TPS          float64 `json:"tps"`
		Latency      summary `json:"latency"`
	}
	runBench(t, &r, "baseline", "--duration", "2s", "--warmup", "500ms", "--concurrency", "4")
	if r.Transactions == 0 || r.TPS <= 0 || r.Failures != 0 {
		t.Fatalf("baseline %+v", r)
	}
	r.Latency.check(t, "baseline", r.Transactions)
}

func TestSmokeIngest(t *testing.T) {
	testenv.SkipShort(t, "furrow bench ingest with furrow serve processes")
	var r struct {
		Baseline struct {
			TPS float64 `json:"tps"`
		} `json:"baseline"`
		Ingest struct {
			Requests   int64            `json:"requests"`
			CreatedRPS float64          `json:"created_rps"`
			Status     map[string]int64 `json:"status"`
			Stored     int64            `json:"stored"`
			Events     int64            `json:"events"`
			Latency    summary          `json:"latency"`
			Memory     struct {
				RSS int64 `json:"rss_bytes"`
			} `json:"memory"`
			Started string             `json:"started_server"`
			CPU     map[string]float64 `json:"cpu_s"`
			Speed   float64            `json:"machine_speed_us"`
			Redis   map[string]struct {
				Calls int64 `json:"calls"`
			} `json:"redis_commands"`
			Warmup struct {
				Requests int64            `json:"requests"`
				Status   map[string]int64 `json:"status"`
			} `json:"warmup"`
		} `json:"ingest"`
		Ceilings struct {
			HTTP struct {
				PerSec float64 `json:"per_second"`
				Speed  float64 `json:"machine_speed_us"`
			} `json:"http"`
			Database struct {
				PerSec float64 `json:"per_second"`
			} `json:"database"`
		} `json:"ceilings"`
		Ratio     float64 `json:"ratio"`
		HTTPRatio float64 `json:"http_ceiling_ratio"`
	}
	const devices = 50
	runBench(t, &r, "ingest", "--duration", "2s", "--warmup", "500ms", "--devices", strconv.Itoa(devices), "--concurrency", "4")
	in, warm := r.Ingest, r.Ingest.Warmup
	if warm.Requests == 0 || warm.Status["201"] == 0 {
		t.Fatalf("warm-up %+v; want 201s reported apart", warm)
	}
	// The warm-up's readings are stored too. A fast machine may reach the
	// devices' limit (furrow.RateLimit a minute). The warm-up and the run
	// each take the devices in turn from the first, so no device posts more
	// than two requests more than another: once one is refused, every
	// device has had at least RateLimit-2 accepted, and none more than
	// RateLimit.
	created, limited := in.Status["201"]+warm.Status["201"], in.Status["429"]+warm.Status["429"]
	if created == 0 || created+limited != in.Requests+warm.Requests ||
		(limited > 0 && (created < (furrow.RateLimit-2)*devices || created > furrow.RateLimit*devices)) {
		t.Fatalf("status counts %v and warm-up %v of %d requests; want 201s, and 429s only once about %d are accepted",
			in.Status, warm.Status, in.Requests, furrow.RateLimit*devices)
	}
	if in.Stored != created || in.Events != created {
		t.Errorf("%d created, %d readings and %d events stored", created, in.Stored, in.Events)
	}
	in.Latency.check(t, "ingest", in.Requests)
	if r.Baseline.TPS <= 0 || r.Ratio <= 0 {
		t.Errorf("baseline %v tx/s, ratio %v", r.Baseline.TPS, r.Ratio)
	}
	if r.Ceilings.HTTP.PerSec <= 0 || r.Ceilings.Database.PerSec <= 0 {
		t.Errorf("ceilings %+v; want the HTTP and database ceilings measured in the run", r.Ceilings)
	}
	if want := in.CreatedRPS / r.Ceilings.HTTP.PerSec; math.Abs(r.HTTPRatio-want) > 1e-9*want {
		t.Errorf("HTTP ceiling ratio %v; want %v, the 201/s over the HTTP ceiling", r.HTTPRatio, want)
	}
	if in.Speed <= 0 || r.Ceilings.HTTP.Speed <= 0 {
		t.Errorf("machine speed %v during the ingest, %v during the HTTP ceiling; want both sampled", in.Speed, r.Ceilings.HTTP.Speed)
	}
	if in.CPU["furrow"] <= 0 || in.CPU["postgres"] <= 0 {
		t.Errorf("CPU by process group %v; want the server's and PostgreSQL's", in.CPU)
	}
	if in.Redis["evalsha"].Calls <= 0 {
		t.Errorf("Redis commands %v; want the rate limiter's script calls counted", in.Redis)
	}
	if in.Started != "furrow serve" || in.Memory.RSS <= 0 {
		t.Errorf("server %q, memory %d", in.Started, in.Memory.RSS)
	}
}

func TestSmokeDelivery(t *testing.T) {
	testenv.SkipShort(t, "furrow bench delivery with furrow dev and a receiver")
	var r struct {
		Accepted  int64            `json:"accepted"`
		Status    map[string]int64 `json:"status"`
		Latency   summary          `json:"delivery_latency"`
		Delivered int64            `json:"delivered"`
		Missing   int64            `json:"missing"`
		Rejected  int64            `json:"rejected"`
		PerSecond float64          `json:"deliveries_per_second"`
		Backlog   struct {
			Samples []json.RawMessage `json:"samples"`
		} `json:"backlog"`
		Engine struct {
			Started   int64   `json:"started"`
			Delivered int64   `json:"delivered"`
			Missing   int64   `json:"missing"`
			Rejected  int64   `json:"rejected"`
			Latency   summary `json:"delivery_latency"`
		} `json:"engine"`
		VsEngine struct {
			Rate   float64   `json:"rate"`
			P50    float64   `json:"latency_p50"`
			CPU    float64   `json:"machine_cpu"`
			ByTurn []float64 `json:"machine_cpu_by_turn"`
			Turn   struct {
				Furrow, Engine []float64
			} `json:"machine_cpu_ms_by_turn"`
			Extra map[string]float64 `json:"extra_ms_per_delivery"`
		} `json:"vs_engine"`
		Turns int `json:"turns"`
		Cost  struct {
			CPU      map[string]float64 `json:"cpu_s"`
			Postgres map[string]float64 `json:"postgres_cpu_s"`
			Database string             `json:"furrow_database"`
		} `json:"cost"`
		Load     [3]float64        `json:"load_average"`
		Settings map[string]string `json:"postgres_settings"`
		Speed    struct {
			EngineStart  float64 `json:"engine_start"`
			Start        float64 `json:"start"`
			End          float64 `json:"end"`
			EngineDuring float64 `json:"engine_during"`
			During       float64 `json:"during"`
		} `json:"machine_speed_us"`
	}
	runBench(t, &r, "delivery", "--rate", "10", "--duration", "4s", "--drain", "60s", "--turns", "2")
	if r.Accepted == 0 || r.Status["201"] != r.Accepted {
		t.Fatalf("accepted %d, status %v", r.Accepted, r.Status)
	}
	if r.Missing != 0 || r.Rejected != 0 || r.Delivered != r.Accepted {
		t.Errorf("accepted %d, delivered %d, missing %d, rejected %d", r.Accepted, r.Delivered, r.Missing, r.Rejected)
	}
	r.Latency.check(t, "delivery", r.Accepted)
	if len(r.Backlog.Samples) == 0 {
		t.Error("no backlog samples")
	}
	// The bare engine ran in turns with Furrow on the same embedded Temporal
	// and receiver, which verified its signatures, and the run compared the
	// two, turn by turn too.
	e := r.Engine
	if e.Started == 0 || e.Delivered != e.Started || e.Missing != 0 || e.Rejected != 0 {
		t.Errorf("bare engine %+v; want every started workflow delivered and verified", e)
	}
	e.Latency.check(t, "bare engine", e.Started)
	if r.VsEngine.Rate <= 0 || r.VsEngine.P50 <= 0 || r.VsEngine.CPU <= 0 {
		t.Errorf("vs engine %+v; want the rate, latency and CPU ratios", r.VsEngine)
	}
	if r.Turns != 2 || len(r.VsEngine.ByTurn) != 2 || slices.Contains(r.VsEngine.ByTurn, 0) {
		t.Errorf("turns %d, CPU by turn %v; want two turns a side, each compared", r.Turns, r.VsEngine.ByTurn)
	}
	if tc := r.VsEngine.Turn; len(tc.Furrow) != 2 || len(tc.Engine) != 2 || slices.Contains(tc.Furrow, 0) || slices.Contains(tc.Engine, 0) ||
		math.Abs(tc.Furrow[0]/tc.Engine[0]-r.VsEngine.ByTurn[0]) > 0.01 {
		t.Errorf("CPU ms by turn %+v; want two figures a side whose first ratio is the first turn's %v", tc, r.VsEngine.ByTurn)
	}
	// The machine's speed was probed before each part of the run and after,
	// and sampled during each.
	if sp := r.Speed; sp.EngineStart <= 0 || sp.Start <= 0 || sp.End <= 0 || sp.EngineDuring <= 0 || sp.During <= 0 {
		t.Errorf("machine speed %+v; want a probe before the engine's first turn, before Furrow's and after the last, and samples during both sides' turns", sp)
	}
	// Where Furrow's extra CPU went: the engine's turns store nothing in
	// Furrow's database, Furrow's store every reading there.
	if x := r.VsEngine.Extra; len(x) == 0 || x["postgres_furrow"] <= 0 {
		t.Errorf("extra CPU per delivery %v; want Furrow's own database work in it", x)
	}
	// The run's cost: the machine's CPU, and the server's (furrow dev, with
	// its embedded Temporal) within it, and PostgreSQL's. (PostgreSQL's
	// may exceed the machine's: backends that exit during the run, other
	// tests' among them, count with all the CPU they ever used.)
	if c := r.Cost.CPU; c["machine"] <= 0 || c["furrow"] <= 0 || c["postgres"] <= 0 || c["furrow"] > c["machine"]*1.05 {
		t.Errorf("cost %v; want the machine's busy CPU, furrow's within it, and postgres's", c)
	}
	// PostgreSQL's CPU split by database names the server's own, whose
	// connections stored and dispatched every reading.
	if db := r.Cost.Database; db == "" || r.Cost.Postgres[db] <= 0 {
		t.Errorf("PostgreSQL CPU by database %v, Furrow's database %q; want Furrow's own work counted", r.Cost.Postgres, db)
	}
	if r.Settings["max_connections"] == "" || r.Load == [3]float64{} {
		t.Errorf("load %v, settings %v; want the machine's load and PostgreSQL's settings", r.Load, r.Settings)
	}
}
