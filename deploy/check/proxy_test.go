package check

import (
	"os"
	"regexp"
	"testing"
)

// proxyVariable is how haproxy.cfg reads its settings from the environment.
var proxyVariable = regexp.MustCompile(`\$\{(PROXY_[A-Z_]+)\}`)

// proxySettings returns the variables deploy/proxy/haproxy.cfg needs.
func proxySettings(t *testing.T) []string {
	t.Helper()
	cfg, err := os.ReadFile("../proxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range proxyVariable.FindAllStringSubmatch(string(cfg), -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	if len(out) < 4 {
		t.Fatalf("haproxy.cfg reads only %v from the environment", out)
	}
	return out
}

// TestProxySettingsGiven: compose and the chart set every variable the
// proxy's configuration reads (HAProxy refuses to start without them).
func TestProxySettingsGiven(t *testing.T) {
	need := proxySettings(t)
	compose := loadCompose(t).Services["proxy"].Environment
	for _, v := range need {
		if compose[v] == nil || *compose[v] == "" {
			t.Errorf("compose's proxy does not set %s", v)
		}
	}
	for _, file := range []string{"", exampleValues} {
		c := collect(t, render(t, file))
		env := map[string]string{}
		for _, e := range container(t, c.deployments["serve"].Spec.Template.Spec, "proxy").Env {
			env[e.Name] = e.Value
		}
		for _, v := range need {
			if env[v] == "" {
				t.Errorf("the chart's proxy sidecar (values %q) does not set %s", file, v)
			}
		}
	}
}
