package check

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// observabilityDir is where deploy/observability/ (dashboard, alert rules)
// is mounted in a compose service, "" if it is not.
func observabilityDir(t *testing.T, service string) string {
	t.Helper()
	want, _ := filepath.Abs("../observability")
	for _, v := range loadCompose(t).Services[service].Volumes {
		if v.Source == want {
			return v.Target
		}
	}
	return ""
}

func readYAML(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// TestComposePrometheus: Prometheus scrapes every replica of every
// long-running Furrow service on the metrics port and loads the alert
// rules from deploy/observability/.
func TestComposePrometheus(t *testing.T) {
	var cfg struct {
		Global        map[string]string `json:"global"`
		RuleFiles     []string          `json:"rule_files"`
		ScrapeConfigs []struct {
			JobName      string `json:"job_name"`
			DNSSDConfigs []struct {
				Names []string `json:"names"`
				Type  string   `json:"type"`
				Port  int      `json:"port"`
			} `json:"dns_sd_configs"`
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	readYAML(t, "../compose/prometheus.yml", &cfg)
	scraped := map[string]bool{}
	for _, sc := range cfg.ScrapeConfigs {
		for _, d := range sc.DNSSDConfigs {
			if d.Type == "A" && d.Port == 9464 {
				for _, n := range d.Names {
					scraped[n] = true
				}
			}
		}
	}
	for name, s := range loadCompose(t).Services {
		if strings.Contains(s.Image, "furrow") && name != "migrate" && !scraped[name] {
			t.Errorf("Prometheus does not scrape every replica of %s on :9464", name)
		}
	}
	dir := observabilityDir(t, "prometheus")
	if dir == "" || len(cfg.RuleFiles) == 0 {
		t.Fatalf("Prometheus does not load rules from deploy/observability/ (mounted at %q, rule files %v)", dir, cfg.RuleFiles)
	}
	for _, f := range cfg.RuleFiles {
		if !strings.HasPrefix(f, dir+"/") {
			t.Errorf("rule file %s is outside deploy/observability/ (mounted at %s)", f, dir)
		}
	}
}

// dashboardProvider is one entry of Grafana's dashboard provisioning.
type dashboardProvider struct {
	Name            string            `json:"name"`
	Folder          string            `json:"folder"`
	Type            string            `json:"type"`
	DisableDeletion bool              `json:"disableDeletion"`
	Options         map[string]string `json:"options"`
}

// TestComposeGrafana: Grafana's dashboard provider reads the directory
// where deploy/observability/ is mounted, and its datasource is Prometheus.
func TestComposeGrafana(t *testing.T) {
	var dashboards struct {
		APIVersion int                 `json:"apiVersion"`
		Providers  []dashboardProvider `json:"providers"`
	}
	readYAML(t, "../compose/grafana/provisioning/dashboards/furrow.yaml", &dashboards)
	dir := observabilityDir(t, "grafana")
	if dir == "" || !slices.ContainsFunc(dashboards.Providers, func(p dashboardProvider) bool {
		return p.Type == "file" && p.Options["path"] == dir
	}) {
		t.Fatalf("no dashboard provider reads %q, where deploy/observability/ is mounted", dir)
	}
	var sources struct {
		APIVersion  int `json:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, Access, URL string
			IsDefault                    bool `json:"isDefault"`
		} `json:"datasources"`
	}
	readYAML(t, "../compose/grafana/provisioning/datasources/prometheus.yaml", &sources)
	if len(sources.Datasources) != 1 || sources.Datasources[0].Type != "prometheus" || sources.Datasources[0].URL != "http://prometheus:9090" {
		t.Fatalf("Grafana's datasource is not the compose Prometheus: %+v", sources.Datasources)
	}
}
