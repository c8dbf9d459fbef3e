package check

import (
	"io"
	"log"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

const (
	chartDir      = "../helm/furrow"
	exampleValues = "../helm/furrow/ci/example-values.yaml"
)

// Helm's loader logs through the standard logger that the chart's proxy
// configuration is a symbolic link (to deploy/proxy/haproxy.cfg, on
// purpose); that note would bury real test output.
func init() { log.SetOutput(io.Discard) }

// searchAttributes are the search attributes of delivery workflows, as
// name:type, the way the setup scripts list them for
// `temporal operator search-attribute create`.
var searchAttributes = []string{"FurrowWebhookId:Keyword", "FurrowEventId:Keyword", "FurrowFarmId:Keyword",
	"FurrowEventType:Keyword", "FurrowOutcome:Keyword", "FurrowLastStatus:Int"}

// strictDecoder decodes YAML or JSON into the registered API types and
// fails on unknown or duplicate fields and unknown kinds.
func strictDecoder(t *testing.T) runtime.Decoder {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme, policyv1.AddToScheme,
		autoscalingv2.AddToScheme, networkingv1.AddToScheme, monitoringv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}

func TestStrictDecodingCatchesMisspeltFields(t *testing.T) {
	bad := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n"
	if _, _, err := strictDecoder(t).Decode([]byte(bad), nil, nil); err == nil {
		t.Fatal("a misspelt field (replica) decoded without error")
	}
}

func values(t *testing.T, file string) map[string]any {
	t.Helper()
	if file == "" {
		return map[string]any{}
	}
	v, err := chartutil.ReadValuesFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestHelmLint(t *testing.T) {
	for _, file := range []string{"", exampleValues} {
		l := lint.All(chartDir, values(t, file), "furrow", false)
		for _, m := range l.Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("helm lint (values %q): %s", file, m)
			}
		}
	}
}

// render renders the chart as `helm install furrow -n furrow` would and
// decodes every object strictly.
func render(t *testing.T, file string) []runtime.Object {
	t.Helper()
	return renderValues(t, file, values(t, file))
}

// renderValues renders the chart with the values given; file names them
// in messages.
func renderValues(t *testing.T, file string, given map[string]any) []runtime.Object {
	t.Helper()
	files, err := renderFiles(t, given)
	if err != nil {
		t.Fatalf("render (values %q): %v", file, err)
	}
	return decodeFiles(t, file, files)
}

// renderFiles renders the chart with the values given, as `helm install
// furrow -n furrow` would, and returns the manifests by template, or the
// render's error (a template's `fail` among them).
func renderFiles(t *testing.T, given map[string]any) (map[string]string, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return renderChart(t, ch, "furrow", given)
}

// renderChart renders ch as `helm install <release> -n furrow` would.
func renderChart(t *testing.T, ch *chart.Chart, release string, given map[string]any) (map[string]string, error) {
	t.Helper()
	vals, err := chartutil.ToRenderValues(ch, given,
		chartutil.ReleaseOptions{Name: release, Namespace: "furrow", Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Render(ch, vals)
}

// decodeFiles decodes every object of the rendered manifests strictly;
// file names the values in messages.
func decodeFiles(t *testing.T, file string, files map[string]string) []runtime.Object {
	t.Helper()
	dec := strictDecoder(t)
	var objs []runtime.Object
	for name, content := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range releaseutil.SplitManifests(content) {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			obj, _, err := dec.Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Fatalf("%s (values %q) does not decode strictly: %v\n%s", name, file, err, doc)
			}
			objs = append(objs, obj)
		}
	}
	return objs
}

// renderFails renders the chart with the values given and fails t unless
// the render fails with an error containing every one of want.
func renderFails(t *testing.T, given map[string]any, want ...string) {
	t.Helper()
	_, err := renderFiles(t, given)
	if err == nil {
		t.Errorf("values %v render; want an error naming %q", given, want)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("values %v: the render's error does not name %q: %v", given, w, err)
		}
	}
}

func TestHelmRender(t *testing.T) {
	for _, file := range []string{"", exampleValues} {
		t.Run("values "+file, func(t *testing.T) {
			objs := render(t, file)
			c := collect(t, objs)
			checkWorkloads(t, c)
			checkJobs(t, c)
			checkProxy(t, c)
			checkDeliveryEgress(t, c, egressRules(t, file, "internalEgress"), egressRules(t, file, "dnsEgress"), egressRules(t, file, "externalServices"))
			checkPodSecurity(t, c)
			if len(c.pdbs) != 2 || len(c.hpas) != 1 || c.hpas[0].Spec.ScaleTargetRef.Name != c.deployments["serve"].Name {
				t.Errorf("want PodDisruptionBudgets for serve and worker and an HPA for serve; got %d, %d", len(c.pdbs), len(c.hpas))
			}
			checkServices(t, c)
			checkSecretKeys(t, c, file)
			if want := file != ""; (len(c.monitors) == 1) != want {
				t.Errorf("ServiceMonitors: %d, want one only when enabled", len(c.monitors))
			}
		})
	}
}

// egressRules is how many rules of networkPolicy.<key> the chart's
// values, with those of file over them, give the policy.
func egressRules(t *testing.T, file, key string) int {
	t.Helper()
	rules, _ := mergedValues(t, values(t, file))["networkPolicy"].(map[string]any)[key].([]any)
	return len(rules)
}

// mergedValues is the chart's values with given over them.
func mergedValues(t *testing.T, given map[string]any) map[string]any {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	merged, err := chartutil.CoalesceValues(ch, given)
	if err != nil {
		t.Fatal(err)
	}
	return merged
}

// TestHelmEgressFormerName: values written for the setting's former name,
// workerInternalEgress, still set the policy's internal egress, in place
// of the default.
func TestHelmEgressFormerName(t *testing.T) {
	rule := map[string]any{"to": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.9.0.0/16"}}}}
	objs := renderValues(t, "workerInternalEgress", map[string]any{
		"networkPolicy": map[string]any{"workerInternalEgress": []any{rule}},
	})
	c := collect(t, objs)
	checkDeliveryEgress(t, c, 1, 1, 0)
	last := c.policies[0].Spec.Egress[len(c.policies[0].Spec.Egress)-1]
	if len(last.To) != 1 || last.To[0].IPBlock == nil || last.To[0].IPBlock.CIDR != "10.9.0.0/16" {
		t.Errorf("the last egress rule is %+v, want the one of workerInternalEgress", last)
	}
}

// rendered sorts the chart's objects by kind.
type rendered struct {
	deployments map[string]*appsv1.Deployment // by component
	jobs        map[string]*batchv1.Job
	configMaps  []*corev1.ConfigMap
	services    []*corev1.Service
	pdbs        []*policyv1.PodDisruptionBudget
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	policies    []*networkingv1.NetworkPolicy
	monitors    []*monitoringv1.ServiceMonitor
	secrets     []*corev1.Secret
}

func collect(t *testing.T, objs []runtime.Object) rendered {
	t.Helper()
	c := rendered{deployments: map[string]*appsv1.Deployment{}, jobs: map[string]*batchv1.Job{}}
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			c.deployments[o.Labels["app.kubernetes.io/component"]] = o
		case *batchv1.Job:
			c.jobs[o.Labels["app.kubernetes.io/component"]] = o
		case *corev1.ConfigMap:
			c.configMaps = append(c.configMaps, o)
		case *corev1.Service:
			c.services = append(c.services, o)
		case *policyv1.PodDisruptionBudget:
			c.pdbs = append(c.pdbs, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			c.hpas = append(c.hpas, o)
		case *networkingv1.NetworkPolicy:
			c.policies = append(c.policies, o)
		case *monitoringv1.ServiceMonitor:
			c.monitors = append(c.monitors, o)
		case *corev1.Secret:
			// Only the generated key ring; checkSecretKeys holds it to that.
			c.secrets = append(c.secrets, o)
		default:
			t.Errorf("unexpected object %T", o)
		}
	}
	return c
}

func checkWorkloads(t *testing.T, c rendered) {
	for _, component := range []string{"serve", "worker"} {
		d := c.deployments[component]
		if d == nil {
			t.Fatalf("no %s Deployment", component)
		}
		ct := container(t, d.Spec.Template.Spec, component)
		if p := ct.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
			t.Errorf("%s: readiness is not GET /readyz", component)
		}
		if p := ct.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
			t.Errorf("%s: liveness is not GET /healthz", component)
		}
		if ct.Resources.Requests.Cpu().IsZero() || ct.Resources.Requests.Memory().IsZero() || ct.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: resources not set: %+v", component, ct.Resources)
		}
		checkPodEnv(t, d.Name, d.Spec.Template.Spec)
		if sc := d.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
			t.Errorf("%s: pods may run as root", component)
		}
	}
}

// checkPodEnv: every FURROW_* is a real setting and set once, images are
// pinned, and the database URL comes from a Secret.
func checkPodEnv(t *testing.T, where string, spec corev1.PodSpec) {
	t.Helper()
	for _, ct := range spec.Containers {
		if !pinnedImage.MatchString(ct.Image) {
			t.Errorf("%s/%s: image %q is not pinned", where, ct.Name, ct.Image)
		}
		if dup := duplicateEnv(ct); len(dup) > 0 {
			t.Errorf("%s/%s: %v set more than once; the last one wins, silently", where, ct.Name, dup)
		}
		env := map[string]string{}
		for _, e := range ct.Env {
			env[e.Name] = e.Value
			if e.Name == "FURROW_DATABASE_URL" && (e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.Value != "") {
				t.Errorf("%s/%s: FURROW_DATABASE_URL is not taken from a Secret", where, ct.Name)
			}
		}
		checkSettings(t, where+"/"+ct.Name, env)
	}
}

func container(t *testing.T, spec corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return corev1.Container{}
}

func checkJobs(t *testing.T, c rendered) {
	t.Helper()
	m := c.jobs["migrate"]
	if m == nil {
		t.Fatal("no migration Job")
	}
	hooks := strings.Split(m.Annotations["helm.sh/hook"], ",")
	if !slices.Contains(hooks, "pre-install") || !slices.Contains(hooks, "pre-upgrade") {
		t.Errorf("the migration is not a pre-install/pre-upgrade hook: %v", hooks)
	}
	if args := container(t, m.Spec.Template.Spec, "migrate").Args; !slices.Equal(args, []string{"migrate"}) {
		t.Errorf("the migration Job runs %v", args)
	}
	checkPodEnv(t, m.Name, m.Spec.Template.Spec)
	sa := c.jobs["search-attributes"]
	if sa == nil {
		t.Fatal("no search-attribute registration Job")
	}
	checkPodEnv(t, sa.Name, sa.Spec.Template.Spec)
	script := strings.Join(container(t, sa.Spec.Template.Spec, "search-attributes").Args, "\n")
	for _, name := range searchAttributes {
		if !strings.Contains(script, name) {
			t.Errorf("the search-attribute Job does not register %s", name)
		}
	}
	for _, j := range []*batchv1.Job{m, sa} {
		checkHookJob(t, j)
	}
	if w, _ := sa.Annotations["helm.sh/hook-weight"]; w <= m.Annotations["helm.sh/hook-weight"] {
		t.Errorf("search attributes (weight %q) should follow the migration (%q)", w, m.Annotations["helm.sh/hook-weight"])
	}
}

// checkProxy: the proxy sidecar uses deploy/proxy/haproxy.cfg and its error
// files byte for byte, at the paths the configuration names them by, reads
// every file its settings name from a mount, and serve trusts it alone: its
// own loopback source address, which kubectl port-forward (127.0.0.1) does
// not use.
func checkProxy(t *testing.T, c rendered) {
	t.Helper()
	want := map[string]string{} // ConfigMap key -> content
	cfg, err := os.ReadFile("../proxy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	want["haproxy.cfg"] = string(cfg)
	paths := map[string]string{"haproxy.cfg": "haproxy.cfg"} // ConfigMap key -> path beside haproxy.cfg
	for _, name := range proxyErrorFiles(t) {
		b, err := os.ReadFile(filepath.Join("../proxy", name))
		if err != nil {
			t.Fatal(err)
		}
		want[filepath.Base(name)] = string(b)
		paths[filepath.Base(name)] = filepath.ToSlash(filepath.Clean(name))
	}
	var cm *corev1.ConfigMap
	for _, m := range c.configMaps {
		if _, ok := m.Data["haproxy.cfg"]; ok {
			cm = m
		}
	}
	if cm == nil {
		t.Fatal("no ConfigMap carries haproxy.cfg")
	}
	for key, content := range want {
		if got, ok := cm.Data[key]; !ok {
			t.Errorf("ConfigMap %s does not carry %s", cm.Name, key)
		} else if got != content {
			t.Errorf("ConfigMap %s: %s differs from deploy/proxy's", cm.Name, key)
		}
	}
	spec := c.deployments["serve"].Spec.Template.Spec
	proxy := container(t, spec, "proxy")
	files := mountedFiles(t, c, spec, proxy)
	for key, path := range paths {
		if got := files["/usr/local/etc/haproxy/"+path]; got != "configmap "+cm.Name+" "+key {
			t.Errorf("/usr/local/etc/haproxy/%s in the proxy is %q, want key %s of ConfigMap %s", path, got, key, cm.Name)
		}
	}
	env := map[string]string{}
	for _, e := range proxy.Env {
		env[e.Name] = e.Value
	}
	for _, setting := range []string{"PROXY_CERT", "PROXY_DEVICE_CA", "PROXY_DEVICE_CRL"} {
		if _, ok := files[env[setting]]; !ok {
			t.Errorf("the proxy's %s=%q is no file mounted into it (%v)", setting, env[setting], files)
		}
	}
	// The sidecar keeps accepting while its endpoint is removed, within
	// the pod's grace period.
	if l := proxy.Lifecycle; l == nil || l.PreStop == nil || l.PreStop.Exec == nil || !slices.Equal(l.PreStop.Exec.Command, []string{"sleep", "5"}) {
		t.Errorf("the proxy does not pause 5 s before it stops: %+v", proxy.Lifecycle)
	} else if g := spec.TerminationGracePeriodSeconds; g == nil || *g <= 5 {
		t.Errorf("serve's grace period %v does not cover the proxy's 5 s pause", g)
	}
	if env["PROXY_UPSTREAM"] != "127.0.0.1:8080" {
		t.Errorf("the proxy does not forward to serve over loopback: PROXY_UPSTREAM=%q", env["PROXY_UPSTREAM"])
	}
	source, err := netip.ParseAddr(env["PROXY_SOURCE"])
	if err != nil || !source.IsLoopback() || source == netip.MustParseAddr("127.0.0.1") {
		t.Errorf("the proxy connects from %q; want a loopback address of its own, not 127.0.0.1 (kubectl port-forward's)", env["PROXY_SOURCE"])
	}
	var trusted *string
	for _, e := range container(t, spec, "serve").Env {
		if e.Name == "FURROW_TRUSTED_PROXIES" {
			trusted = &e.Value
		}
	}
	if trusted == nil {
		t.Error("serve does not set FURROW_TRUSTED_PROXIES: it would believe X-Client-Cert-CN from all of 127.0.0.0/8, port-forwards included")
	} else if *trusted != env["PROXY_SOURCE"]+"/32" {
		t.Errorf("serve trusts %q, want the sidecar alone (%s/32)", *trusted, env["PROXY_SOURCE"])
	}
}

// mountedFiles returns the files ct sees from the ConfigMap and Secret
// volumes of spec: path -> "configmap|secret NAME KEY". A volume without
// items shows every key, known only for the chart's own ConfigMaps.
func mountedFiles(t *testing.T, c rendered, spec corev1.PodSpec, ct corev1.Container) map[string]string {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	out := map[string]string{}
	for _, m := range ct.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			t.Errorf("%s mounts volume %s, which the pod does not have", ct.Name, m.Name)
			continue
		}
		var kind, name string
		var items []corev1.KeyToPath
		switch {
		case v.ConfigMap != nil:
			kind, name, items = "configmap", v.ConfigMap.Name, v.ConfigMap.Items
			for _, cm := range c.configMaps {
				if cm.Name != name || len(items) > 0 {
					continue
				}
				for key := range cm.Data {
					items = append(items, corev1.KeyToPath{Key: key, Path: key})
				}
			}
		case v.Secret != nil:
			kind, name, items = "secret", v.Secret.SecretName, v.Secret.Items
		default:
			continue
		}
		for _, it := range items {
			out[path.Join(m.MountPath, it.Path)] = kind + " " + name + " " + it.Key
		}
	}
	return out
}

// checkDeliveryEgress: the pods that call webhook receivers, serves (first
// attempts) and workers (retries), reach public addresses only, besides the
// rules the values add for DNS (dns), PostgreSQL, Redis and Temporal
// inside the cluster (internal) and outside it (external, one rule each).
func checkDeliveryEgress(t *testing.T, c rendered, internal, dns, external int) {
	t.Helper()
	if len(c.policies) != 1 {
		t.Fatalf("want one NetworkPolicy, got %d", len(c.policies))
	}
	p := c.policies[0]
	if !slices.Contains(p.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		t.Fatalf("the NetworkPolicy does not restrict egress: %+v", p.Spec)
	}
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	for component, d := range c.deployments {
		if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
			t.Errorf("the NetworkPolicy (%s) does not select the %s pods", sel, component)
		}
	}
	if len(c.deployments) != 2 {
		t.Errorf("checked the policy against %d Deployments, want serve and worker", len(c.deployments))
	}
	public := publicRule(t, p) // held to the dial-time guard by TestHelmEgressMatchesDialGuard
	for _, private := range []string{"10.0.0.1", "172.16.0.1", "192.168.0.1", "127.0.0.1", "169.254.169.254", "100.64.0.1", "fc00::1", "fe80::1", "::1"} {
		if allows(t, public, netip.MustParseAddr(private)) {
			t.Errorf("serves and workers may reach %s", private)
		}
	}
	// One rule of public addresses (IPv4 and IPv6), those of DNS, then the values' own.
	if got := len(p.Spec.Egress) - 1 - dns - external; got != internal {
		t.Errorf("the policy has %d rules of the values' internal egress, want %d", got, internal)
	}
}

// checkServices: the in-cluster Service reaches serve's API and metrics,
// the devices' Service reaches the proxy sidecars' TLS port.
func checkServices(t *testing.T, c rendered) {
	t.Helper()
	ports := map[string]string{} // service port name -> component selected
	for _, s := range c.services {
		for _, p := range s.Spec.Ports {
			ports[s.Name+"/"+p.Name+"->"+p.TargetPort.String()] = s.Spec.Selector["app.kubernetes.io/component"]
		}
	}
	for _, want := range []string{"furrow/http->http", "furrow/metrics->metrics", "furrow-devices/https->https", "furrow-worker/metrics->metrics"} {
		if _, ok := ports[want]; !ok {
			t.Errorf("no Service port %s (have %v)", want, ports)
		}
	}
	if ports["furrow-devices/https->https"] != "serve" {
		t.Errorf("the devices' Service does not select the serve pods with their proxy")
	}
}
