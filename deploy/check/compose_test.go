package check

import (
	"context"
	"os"
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts, err := cli.NewProjectOptions([]string{composeFile},
		cli.WithEnv([]string{"POSTGRES_PASSWORD=test", "GRAFANA_ADMIN_PASSWORD=test"}),
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
