package check

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

const composeFile = "../compose/compose.yaml"

// pinnedImage is name:tag with a version in the tag (a digest is also fine).
var pinnedImage = regexp.MustCompile(`^[a-z0-9./_-]+(:[^:@]*[0-9][^:@]*|@sha256:[0-9a-f]{64})$`)

// loadCompose loads compose.yaml as `docker compose` would, with the
// passwords env.example asks for.
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	return loadComposeEnv(t, "POSTGRES_PASSWORD=test", "GRAFANA_ADMIN_PASSWORD=test")
}

// loadComposeEnv loads compose.yaml with env (NAME=value) as its .env.
func loadComposeEnv(t *testing.T, env ...string) *types.Project {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts, err := cli.NewProjectOptions([]string{composeFile},
		cli.WithEnv(env),
		cli.WithDiscardEnvFile, cli.WithConsistency(true))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(ctx)
	if err != nil {
		t.Fatalf("%s does not load: %v", composeFile, err)
	}
	return p
}

func TestComposeLoads(t *testing.T) {
	p := loadCompose(t)
	want := []string{"postgresql", "redis", "temporal-schema", "temporal", "temporal-setup", "temporal-ui",
		"migrate", "serve", "worker", "proxy", "prometheus", "grafana"}
	for _, name := range want {
		if _, ok := p.Services[name]; !ok {
			t.Errorf("no service %q", name)
		}
	}
	for name, s := range p.Services {
		if !pinnedImage.MatchString(s.Image) || strings.HasSuffix(s.Image, ":latest") {
			t.Errorf("service %s: image %q is not pinned to a version", name, s.Image)
		}
	}
}

func TestComposeFurrowServices(t *testing.T) {
	p := loadCompose(t)
	for name, s := range p.Services {
		env := map[string]string{}
		for k, v := range s.Environment {
			if v != nil {
				env[k] = *v
			}
		}
		checkSettings(t, composeFile+" service "+name, env)
		if !strings.Contains(s.Image, "furrow") {
			continue
		}
		if name == "migrate" {
			if s.Restart != "no" || len(s.Command) != 1 || s.Command[0] != "migrate" {
				t.Errorf("migrate must be a one-shot `furrow migrate`: restart %q command %v", s.Restart, s.Command)
			}
			continue
		}
		hc := s.HealthCheck
		if hc == nil || hc.Disable || !slices.ContainsFunc(hc.Test, func(a string) bool { return strings.HasSuffix(a, "/readyz") }) {
			t.Errorf("service %s: no health check on /readyz (%+v)", name, hc)
		}
		if s.Deploy == nil || s.Deploy.Replicas == nil || *s.Deploy.Replicas != 2 {
			t.Errorf("service %s: want 2 replicas", name)
		}
		if d := s.DependsOn["migrate"]; d.Condition != types.ServiceConditionCompletedSuccessfully {
			t.Errorf("service %s starts before the migration completed (%+v)", name, d)
		}
		if d := s.DependsOn["temporal-setup"]; d.Condition != types.ServiceConditionCompletedSuccessfully {
			t.Errorf("service %s starts before the namespace and search attributes exist (%+v)", name, d)
		}
	}
	if d := p.Services["proxy"].DependsOn["serve"]; d.Condition != types.ServiceConditionHealthy {
		t.Errorf("the proxy does not wait for a healthy serve (%+v)", d)
	}
}

// TestComposeTemporalSetup: the setup job creates Furrow's namespace with
// 30-day retention and registers the search attributes in it.
func TestComposeTemporalSetup(t *testing.T) {
	p := loadCompose(t)
	ns := *p.Services["serve"].Environment["FURROW_TEMPORAL_NAMESPACE"]
	script := strings.Join(p.Services["temporal-setup"].Command, "\n")
	if !strings.Contains(script, "namespace create -n "+ns+" --retention 720h") {
		t.Errorf("temporal-setup does not create namespace %s with 30 days' retention:\n%s", ns, script)
	}
	for _, sa := range searchAttributes {
		if !strings.Contains(script, sa) {
			t.Errorf("temporal-setup does not register %s", sa)
		}
	}
}

// TestComposeTrustsOnlyTheProxy: serve believes X-Client-Cert-CN only from
// the proxy's fixed address.
func TestComposeTrustsOnlyTheProxy(t *testing.T) {
	p := loadCompose(t)
	proxy := p.Services["proxy"].Networks["furrow"]
	if proxy == nil || proxy.Ipv4Address == "" {
		t.Fatal("the proxy has no fixed address on the furrow network")
	}
	got := p.Services["serve"].Environment["FURROW_TRUSTED_PROXIES"]
	if got == nil || *got != proxy.Ipv4Address+"/32" {
		t.Fatalf("serve trusts %v, want only the proxy %s/32", got, proxy.Ipv4Address)
	}
	for _, v := range p.Services["proxy"].Volumes {
		if v.Target == "/usr/local/etc/haproxy/haproxy.cfg" {
			if _, err := os.Stat(v.Source); err != nil {
				t.Fatalf("the proxy's configuration %s: %v", v.Source, err)
			}
			return
		}
	}
	t.Fatal("the proxy does not mount deploy/proxy/haproxy.cfg")
}

// TestComposeProxyAddressIsItsOwn: the proxy's fixed address is one Docker
// never hands another container. Docker assigns addresses from a network's
// ip_range (the whole subnet when it has none), in order of start, so a
// container started before the proxy could otherwise take the address serve
// trusts.
func TestComposeProxyAddressIsItsOwn(t *testing.T) {
	p := loadCompose(t)
	proxy := p.Services["proxy"].Networks["furrow"]
	if proxy == nil || proxy.Ipv4Address == "" {
		t.Fatal("the proxy has no fixed address on the furrow network")
	}
	addr, err := netip.ParseAddr(proxy.Ipv4Address)
	if err != nil {
		t.Fatal(err)
	}
	network, ok := p.Networks["furrow"]
	if !ok {
		t.Fatal("no furrow network")
	}
	var inSubnet bool
	for _, pool := range network.Ipam.Config {
		subnet, err := netip.ParsePrefix(pool.Subnet)
		if err != nil {
			t.Fatalf("subnet %q: %v", pool.Subnet, err)
		}
		if !subnet.Contains(addr) {
			continue
		}
		inSubnet = true
		if pool.IPRange == "" {
			t.Fatalf("subnet %s has no ip_range: Docker may give the proxy's %s to another container", subnet, addr)
		}
		dynamic, err := netip.ParsePrefix(pool.IPRange)
		if err != nil {
			t.Fatalf("ip_range %q: %v", pool.IPRange, err)
		}
		if dynamic.Contains(addr) {
			t.Errorf("the proxy's %s is inside ip_range %s, which Docker gives other containers", addr, dynamic)
		}
		if !subnet.Contains(dynamic.Addr()) || dynamic.Bits() < subnet.Bits() {
			t.Errorf("ip_range %s is not inside subnet %s", dynamic, subnet)
		}
		if pool.Gateway == "" {
			t.Errorf("subnet %s names no gateway: Docker would take one from ip_range", subnet)
		} else if pool.Gateway == addr.String() {
			t.Errorf("the proxy's %s is the network's gateway", addr)
		}
	}
	if !inSubnet {
		t.Errorf("the proxy's %s is in no subnet of the furrow network", addr)
	}
}

// TestComposeProxyMountsOnlyWhatItNeeds: the internet-facing proxy gets
// the files its settings name and nothing else of certs/, where the device
// CA's key and database live, and every file it needs is mounted.
func TestComposeProxyMountsOnlyWhatItNeeds(t *testing.T) {
	p := loadCompose(t)
	proxy := p.Services["proxy"]
	certs, err := filepath.Abs("../compose/certs")
	if err != nil {
		t.Fatal(err)
	}
	mounted := map[string]string{} // target -> source
	for _, v := range proxy.Volumes {
		mounted[v.Target] = v.Source
		rel, err := filepath.Rel(certs, v.Source)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue // outside certs/
		}
		switch rel {
		case "server.pem", "ca.pem", "crl.pem":
			if v.Bind == nil || v.Bind.CreateHostPath {
				t.Errorf("certs/%s: a missing file would become an empty folder (bind.create_host_path: false)", rel)
			}
			if !v.ReadOnly {
				t.Errorf("certs/%s is mounted writable", rel)
			}
		case ".":
			t.Errorf("the proxy mounts all of certs/ (at %s), the CA's key included; it needs only server.pem, ca.pem and crl.pem", v.Target)
		default:
			t.Errorf("the proxy mounts certs/%s (at %s); it needs only server.pem, ca.pem and crl.pem", rel, v.Target)
		}
	}
	for _, setting := range []string{"PROXY_CERT", "PROXY_DEVICE_CA", "PROXY_DEVICE_CRL"} {
		file := proxy.Environment[setting]
		if file == nil {
			t.Errorf("the proxy does not set %s", setting)
			continue
		}
		if src, ok := mounted[*file]; !ok {
			t.Errorf("%s=%s is not a file mounted into the proxy", setting, *file)
		} else if filepath.Dir(src) != certs {
			t.Errorf("%s comes from %s, not from certs/", setting, src)
		}
	}
	errors := mounted["/usr/local/etc/haproxy/errors"]
	want, _ := filepath.Abs("../proxy/errors")
	if errors != want {
		t.Errorf("the proxy's error files come from %q, want deploy/proxy/errors beside haproxy.cfg", errors)
	}
}

// TestComposeGrafanaKeepsItsData: Grafana's database (users, the admin
// password once changed, dashboards saved from the UI) is on a volume,
// not in the container, which `docker compose up` may replace.
func TestComposeGrafanaKeepsItsData(t *testing.T) {
	p := loadCompose(t)
	for _, v := range p.Services["grafana"].Volumes {
		if v.Target == "/var/lib/grafana" {
			if v.Type != types.VolumeTypeVolume {
				t.Errorf("Grafana's /var/lib/grafana is a %s, want a named volume", v.Type)
			}
			return
		}
	}
	t.Error("Grafana has no volume at /var/lib/grafana: its data goes with the container")
}
