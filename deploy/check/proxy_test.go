package check

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/furrowhq/furrow"
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

// errorFileLine is an errorfile directive of haproxy.cfg.
var errorFileLine = regexp.MustCompile(`(?m)^\s*errorfile\s+(\d{3})\s+(\S+)\s*$`)

// proxyErrorFiles returns the error files of deploy/proxy/haproxy.cfg by
// status, as written there (relative to the configuration's folder).
func proxyErrorFiles(t *testing.T) map[int]string {
	t.Helper()
	cfg, err := os.ReadFile("../proxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, m := range errorFileLine.FindAllStringSubmatch(string(cfg), -1) {
		code, _ := strconv.Atoi(m[1])
		out[code] = m[2]
	}
	relative := false
	for _, f := range out {
		relative = relative || !filepath.IsAbs(f)
	}
	if relative && !regexp.MustCompile(`(?m)^\s*default-path\s+config\s*$`).Match(cfg) {
		t.Fatal("haproxy.cfg names error files relative to itself without `default-path config`: HAProxy would look for them in its working folder")
	}
	return out
}

// TestProxyErrorFiles: the errors the proxy makes itself are Furrow's
// {error, reason} JSON with one of the API's codes, complete HTTP answers
// whose Content-Length is exact.
func TestProxyErrorFiles(t *testing.T) {
	files := proxyErrorFiles(t)
	codes := []string{furrow.EINVALID, furrow.EUNAUTHORIZED, furrow.EFORBIDDEN, furrow.ENOTFOUND,
		furrow.ECONFLICT, furrow.ETOOLARGE, furrow.ERATELIMITED, furrow.EINTERNAL}
	for _, status := range []int{400, 408, 500, 502, 503, 504} {
		name, ok := files[status]
		if !ok {
			t.Errorf("haproxy.cfg has no errorfile for %d: HAProxy would answer it with an HTML page", status)
			continue
		}
		raw, err := os.ReadFile(filepath.Join("../proxy", name))
		if err != nil {
			t.Errorf("errorfile %d: %v", status, err)
			continue
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
		if err != nil {
			t.Errorf("%s is not an HTTP answer: %v", name, err)
			continue
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		rest := -1 // the length of what follows the headers
		for _, end := range []string{"\r\n\r\n", "\n\n"} {
			if i := bytes.Index(raw, []byte(end)); i >= 0 && rest < 0 {
				rest = len(raw) - i - len(end)
			}
		}
		if rest != len(body) || resp.ContentLength != int64(len(body)) {
			t.Errorf("%s: Content-Length %d, but the body after the headers is not exactly that long", name, resp.ContentLength)
		}
		if resp.StatusCode != status {
			t.Errorf("%s answers %d, want %d", name, resp.StatusCode, status)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q, want application/json", name, ct)
		}
		if status >= 500 && resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s: a %d without Retry-After", name, status)
		}
		var e map[string]any
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("%s: the body is not JSON: %v\n%s", name, err, body)
			continue
		}
		code, _ := e["error"].(string)
		reason, _ := e["reason"].(string)
		if len(e) != 2 || !slices.Contains(codes, code) || reason == "" || !strings.HasSuffix(reason, ".") {
			t.Errorf("%s: body %s, want {\"error\": one of %v, \"reason\": a sentence}", name, body, codes)
		}
		if (status >= 500) != (code == furrow.EINTERNAL) {
			t.Errorf("%s: %d answered as %q", name, status, code)
		}
	}
}
