package check

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// podTemplate is one pod the chart makes, named for messages.
type podTemplate struct {
	where string
	meta  metav1.ObjectMeta
	spec  corev1.PodSpec
}

// pods returns the pod templates of every Deployment and Job rendered.
func pods(c rendered) []podTemplate {
	var out []podTemplate
	for _, d := range c.deployments {
		out = append(out, podTemplate{"Deployment " + d.Name, d.Spec.Template.ObjectMeta, d.Spec.Template.Spec})
	}
	for _, j := range c.jobs {
		out = append(out, podTemplate{"Job " + j.Name, j.Spec.Template.ObjectMeta, j.Spec.Template.Spec})
	}
	return out
}

// checkPodSecurity: every pod passes the Pod Security Standards'
// "restricted" level (Kubernetes's own evaluator, at its latest version),
// runs as a numeric non-root user (the kubelet cannot check runAsNonRoot
// against an image's named USER, and refuses to start it), on a read-only
// root filesystem, without a service account token.
func checkPodSecurity(t *testing.T, c rendered) {
	t.Helper()
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted := psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}
	all := pods(c)
	if len(all) < 4 {
		t.Fatalf("checked %d pod templates, want serve, worker, migrate and search-attributes", len(all))
	}
	for _, p := range all {
		if r := policy.AggregateCheckResults(ev.EvaluatePod(restricted, &p.meta, &p.spec)); !r.Allowed {
			t.Errorf("%s breaks Pod Security %q: %s: %s", p.where, restricted.Level, r.ForbiddenReason(), r.ForbiddenDetail())
		}
		if a := p.spec.AutomountServiceAccountToken; a == nil || *a {
			t.Errorf("%s mounts a service account token it does not use", p.where)
		}
		var podUser *int64
		if p.spec.SecurityContext != nil {
			podUser = p.spec.SecurityContext.RunAsUser
		}
		for _, ct := range p.spec.Containers {
			user := podUser
			sc := ct.SecurityContext
			if sc != nil && sc.RunAsUser != nil {
				user = sc.RunAsUser
			}
			if user == nil || *user == 0 {
				t.Errorf("%s/%s: no numeric non-root runAsUser", p.where, ct.Name)
			}
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s/%s: the root filesystem is writable", p.where, ct.Name)
			}
		}
	}
}

// TestHelmSchedulingReachesEveryPod: nodeSelector, tolerations and
// affinity reach every pod of the chart, hook Jobs included: a Job left
// off a tainted pool never runs, and the upgrade waits for it.
func TestHelmSchedulingReachesEveryPod(t *testing.T) {
	given := map[string]any{
		"nodeSelector": map[string]any{"pool": "furrow"},
		"tolerations":  []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "furrow", "effect": "NoSchedule"}},
		"affinity": map[string]any{"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{
			map[string]any{"weight": 100, "podAffinityTerm": map[string]any{
				"topologyKey":   "kubernetes.io/hostname",
				"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "furrow"}},
			}},
		}}},
	}
	c := collect(t, renderValues(t, "scheduling", given))
	wantTolerations := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "furrow", Effect: corev1.TaintEffectNoSchedule}}
	for _, p := range pods(c) {
		if !reflect.DeepEqual(p.spec.Tolerations, wantTolerations) {
			t.Errorf("%s: tolerations %+v, want %+v", p.where, p.spec.Tolerations, wantTolerations)
		}
		if p.spec.NodeSelector["pool"] != "furrow" {
			t.Errorf("%s: nodeSelector %v", p.where, p.spec.NodeSelector)
		}
		if p.spec.Affinity == nil || p.spec.Affinity.PodAntiAffinity == nil {
			t.Errorf("%s: the affinity given is missing", p.where)
		}
	}
	if len(pods(c)) < 4 {
		t.Errorf("checked %d pod templates", len(pods(c)))
	}
}

// duplicateEnv returns the names ct's env sets more than once.
func duplicateEnv(ct corev1.Container) []string {
	seen := map[string]bool{}
	var dup []string
	for _, e := range ct.Env {
		if seen[e.Name] && !slices.Contains(dup, e.Name) {
			dup = append(dup, e.Name)
		}
		seen[e.Name] = true
	}
	return dup
}

func TestDuplicateEnvIsCaught(t *testing.T) {
	ct := corev1.Container{Env: []corev1.EnvVar{{Name: "A"}, {Name: "FURROW_HTTP_ADDR"}, {Name: "B"}, {Name: "FURROW_HTTP_ADDR"}}}
	if got := duplicateEnv(ct); !slices.Equal(got, []string{"FURROW_HTTP_ADDR"}) {
		t.Errorf("duplicateEnv = %v", got)
	}
}

// TestHelmReservedSettings: a settings key the chart sets itself fails the
// render, naming it, rather than overriding it silently (or putting a
// secret in plain values).
func TestHelmReservedSettings(t *testing.T) {
	for _, k := range reservedSettings {
		renderFails(t, map[string]any{"settings": map[string]any{k: "x"}}, "settings."+k)
	}
}

// TestHelmShutdownGrace: the pods' grace period follows
// FURROW_SHUTDOWN_TIMEOUT with a margin, and a timeout the chart cannot
// read fails the render rather than let Kubernetes cut the shutdown short.
func TestHelmShutdownGrace(t *testing.T) {
	for timeout, want := range map[string]int64{"": 45, "30s": 45, "2m": 135, "1m30s": 105, "500ms": 16, "1h": 3615} {
		given := map[string]any{}
		if timeout != "" {
			given["settings"] = map[string]any{"FURROW_SHUTDOWN_TIMEOUT": timeout}
		}
		c := collect(t, renderValues(t, "FURROW_SHUTDOWN_TIMEOUT="+timeout, given))
		for _, component := range []string{"serve", "worker"} {
			var got int64 = -1
			if g := c.deployments[component].Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
				got = *g
			}
			if got != want {
				t.Errorf("FURROW_SHUTDOWN_TIMEOUT=%q: %s's grace period is %d s, want %d", timeout, component, got, want)
			}
		}
	}
	for _, bad := range []string{"1.5s", "30", "10us", "soon"} {
		renderFails(t, map[string]any{"settings": map[string]any{"FURROW_SHUTDOWN_TIMEOUT": bad}}, "FURROW_SHUTDOWN_TIMEOUT")
	}
}

// TestHelmSecretKeysGenerate: with secretKeys.generate false (GitOps,
// where every `helm template` would make a new key) the chart makes no key
// ring, and refuses to render until existingSecret names one.
func TestHelmSecretKeysGenerate(t *testing.T) {
	renderFails(t, map[string]any{"secretKeys": map[string]any{"generate": false}}, "secretKeys.existingSecret")
	c := collect(t, renderValues(t, "generate false", map[string]any{
		"secretKeys": map[string]any{"generate": false, "existingSecret": "ring", "key": "k"},
	}))
	if len(c.secrets) != 0 {
		t.Errorf("with generate false the chart renders %d Secrets", len(c.secrets))
	}
	for _, component := range []string{"serve", "worker"} {
		var ok bool
		for _, e := range container(t, c.deployments[component].Spec.Template.Spec, component).Env {
			if e.Name == "FURROW_SECRET_KEYS" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				ok = e.ValueFrom.SecretKeyRef.Name == "ring" && e.ValueFrom.SecretKeyRef.Key == "k"
			}
		}
		if !ok {
			t.Errorf("%s does not read FURROW_SECRET_KEYS from Secret ring, key k", component)
		}
	}
}

// TestHelmDNSEgress: networkPolicy.dnsEgress replaces the default DNS rule
// (kube-dns pods), so that NodeLocal DNSCache's link-local address can be
// opened while the rest of 169.254.0.0/16 stays closed.
func TestHelmDNSEgress(t *testing.T) {
	rule := map[string]any{
		"to":    []any{map[string]any{"ipBlock": map[string]any{"cidr": "169.254.20.10/32"}}},
		"ports": []any{map[string]any{"protocol": "UDP", "port": 53}, map[string]any{"protocol": "TCP", "port": 53}},
	}
	c := collect(t, renderValues(t, "dnsEgress", map[string]any{"networkPolicy": map[string]any{"dnsEgress": []any{rule}}}))
	checkDeliveryEgress(t, c, 1, 1, 0)
	var nodeLocal bool
	for _, r := range c.policies[0].Spec.Egress {
		for _, peer := range r.To {
			if peer.PodSelector != nil && peer.PodSelector.MatchLabels["k8s-app"] == "kube-dns" {
				t.Errorf("the default DNS rule is still there: %+v", r)
			}
			nodeLocal = nodeLocal || (peer.IPBlock != nil && peer.IPBlock.CIDR == "169.254.20.10/32")
		}
	}
	if !nodeLocal {
		t.Error("the dnsEgress rule given is not in the policy")
	}
}

// TestHelmConnectionBudget: the connection budget values.yaml and
// docs/operating/production.md state is the one the chart's defaults and
// temporal-values.yaml make, the extra pod of each rollout included.
func TestHelmConnectionBudget(t *testing.T) {
	c := collect(t, render(t, ""))
	vals := mergedValues(t, map[string]any{})
	num := func(m map[string]any, path ...string) int {
		t.Helper()
		var v any = m
		for _, k := range path {
			v = v.(map[string]any)[k]
		}
		return toInt(t, v)
	}
	serve := num(vals, "serve", "replicas")
	if vals["serve"].(map[string]any)["autoscaling"].(map[string]any)["enabled"] == true {
		serve = num(vals, "serve", "autoscaling", "maxReplicas")
	}
	workers := num(vals, "worker", "replicas")
	// What a rollout adds: maxSurge, Kubernetes's 25% when unset.
	surge := func(component string, replicas int) int {
		t.Helper()
		s := intstr.FromString("25%")
		if ru := c.deployments[component].Spec.Strategy.RollingUpdate; ru != nil && ru.MaxSurge != nil {
			s = *ru.MaxSurge
		}
		n, err := intstr.GetScaledValueFromIntOrPercent(&s, replicas, true)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	temporal, err := chartutil.ReadValuesFile("../helm/temporal-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stores := temporal["server"].(map[string]any)["config"].(map[string]any)["persistence"].(map[string]any)["datastores"].(map[string]any)
	perPod := num(stores, "default", "sql", "maxConns") + num(stores, "visibility", "sql", "maxConns")
	need := (serve+surge("serve", serve)+workers+surge("worker", workers))*defaultFurrowPool +
		4*num(temporal, "server", "replicaCount")*perPod + budgetHeadroom
	words := regexp.MustCompile(`[\s#]+`)
	for file, want := range map[string]string{
		"../helm/furrow/values.yaml":         fmt.Sprintf("= %d, so max_connections of at least %d plus superuser_reserved_connections", need, need),
		"../../docs/operating/production.md": fmt.Sprintf("= %d", need),
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(words.ReplaceAllString(string(b), " "), want) {
			t.Errorf("%s does not state the chart's connection budget, %d (%q)", file, need, want)
		}
	}
}
