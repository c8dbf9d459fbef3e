package e2e

import (
	"bufio"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/furrowhq/furrow/internal/testenv"
)

// dockerfile is the production image's recipe; its build line is run here as is.
const dockerfile = "../deploy/Dockerfile"

// imageBinary is where the Dockerfile's build line writes the binary that
// its runtime stage copies.
const imageBinary = "/out/furrow"

// TestImageBuild runs the exact `go build` line of deploy/Dockerfile (no
// Docker engine runs here) and checks its binary: static, the nodev build,
// and it starts migrate, serve and worker with nothing in its environment
// but its settings, as in the distroless runtime image.
func TestImageBuild(t *testing.T) {
	testenv.SkipShort(t, "a production build of the binary and runs it")
	line := dockerBuildLine(t)
	if !strings.Contains(line, "CGO_ENABLED=0") || !strings.Contains(line, "-tags nodev") {
		t.Fatalf("the Dockerfile's build line is not the static production build: %s", line)
	}
	bin := filepath.Join(t.TempDir(), "furrow")
	build := exec.Command("sh", "-c", strings.Replace(line, imageBinary, bin, 1))
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	checkStatic(t, bin)

	db := testenv.NewDatabase(t, testenv.NoSchema)
	tmp := newTemporal(t)
	settings := func(extra ...string) []string {
		return append([]string{"FURROW_DATABASE_URL=" + db, "FURROW_METRICS_ADDR=" + freeAddr(t)}, extra...)
	}

	migrate := exec.Command(bin, "migrate")
	migrate.Env = settings()
	if out, err := migrate.CombinedOutput(); err != nil {
		t.Fatalf("migrate on an empty database: %v\n%s", err, out)
	}
	addr := freeAddr(t)
	serve := launchBinary(t, bin, "serve", settings("FURROW_HTTP_ADDR="+addr,
		"FURROW_TEMPORAL_ADDRESS="+tmp.Address, "FURROW_TEMPORAL_NAMESPACE="+tmp.Namespace))
	serve.waitHealthy(60 * time.Second)
	waddr := freeAddr(t)
	worker := launchBinary(t, bin, "worker", settings("FURROW_HTTP_ADDR="+waddr,
		"FURROW_TEMPORAL_ADDRESS="+tmp.Address, "FURROW_TEMPORAL_NAMESPACE="+tmp.Namespace))
	waitFor(t, 60*time.Second, func() bool { return strings.Contains(worker.Logs(), "worker started") })
	for _, probe := range []string{worker.URL + "/healthz", worker.URL + "/readyz", serve.URL + "/readyz"} {
		out, err := exec.Command(bin, "probe", probe).CombinedOutput()
		if err != nil {
			t.Fatalf("furrow probe %s: %v\n%s", probe, err, out)
		}
	}
	if out, err := exec.Command(bin, "probe", serve.URL+"/nowhere").CombinedOutput(); err == nil {
		t.Fatalf("furrow probe of a 404 succeeded:\n%s", out)
	}

	dev := exec.Command(bin, "dev")
	dev.Env = settings()
	if out, err := dev.CombinedOutput(); err == nil || !strings.Contains(string(out), "nodev") {
		t.Fatalf("the production build ran `furrow dev` (%v):\n%s", err, out)
	}
}

// dockerBuildLine returns the shell command of the Dockerfile's RUN line
// that builds the binary.
func dockerBuildLine(t *testing.T) string {
	t.Helper()
	f, err := os.Open(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cmd, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "RUN ")
		if ok && strings.Contains(cmd, "go build") && strings.Contains(cmd, "-o "+imageBinary) {
			return cmd
		}
	}
	t.Fatalf("%s has no RUN line building %s", dockerfile, imageBinary)
	return ""
}

// checkStatic fails t unless bin is a statically linked Go binary built
// without cgo and with the nodev tag.
func checkStatic(t *testing.T, bin string) {
	t.Helper()
	ef, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary asks for a dynamic loader (PT_INTERP): not static")
		}
	}
	if libs, _ := ef.ImportedLibraries(); len(libs) > 0 {
		t.Fatalf("the binary needs shared libraries %v: not static", libs)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range info.Settings {
		got[s.Key] = s.Value
	}
	if got["CGO_ENABLED"] != "0" || got["-tags"] != "nodev" {
		t.Fatalf("build settings CGO_ENABLED=%q -tags=%q, want 0 and nodev", got["CGO_ENABLED"], got["-tags"])
	}
}
