package check

import (
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// evictable is how many of replicas pods the budget lets an eviction
// (a node drain) take at once, as the disruption controller counts it.
func evictable(t *testing.T, b *policyv1.PodDisruptionBudget, replicas int) int {
	t.Helper()
	if (b.Spec.MinAvailable == nil) == (b.Spec.MaxUnavailable == nil) {
		t.Fatalf("PodDisruptionBudget %s sets %v minAvailable and %v maxUnavailable; Kubernetes wants exactly one", b.Name, b.Spec.MinAvailable, b.Spec.MaxUnavailable)
	}
	if v := b.Spec.MaxUnavailable; v != nil {
		n, err := intstr.GetScaledValueFromIntOrPercent(v, replicas, true)
		if err != nil {
			t.Fatal(err)
		}
		return min(n, replicas)
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(b.Spec.MinAvailable, replicas, true)
	if err != nil {
		t.Fatal(err)
	}
	return max(replicas-n, 0)
}

// TestHelmDisruptionBudgets: the budgets of serve and worker always let a
// drain evict one pod, a Deployment of one replica included (minAvailable
// 1 would block every drain of its node), and a minAvailable given in
// values takes the default's place rather than joining it.
func TestHelmDisruptionBudgets(t *testing.T) {
	one := map[string]any{
		"serve":  map[string]any{"replicas": 1, "autoscaling": map[string]any{"enabled": false}},
		"worker": map[string]any{"replicas": 1},
	}
	oneHPA := map[string]any{
		"serve":  map[string]any{"autoscaling": map[string]any{"enabled": true, "minReplicas": 1}},
		"worker": map[string]any{"replicas": 1},
	}
	for name, given := range map[string]map[string]any{"defaults": {}, "one replica": one, "autoscaled from one": oneHPA} {
		c := collect(t, renderValues(t, name, given))
		if len(c.pdbs) != 2 {
			t.Fatalf("%s: %d PodDisruptionBudgets, want serve's and worker's", name, len(c.pdbs))
		}
		for _, b := range c.pdbs {
			sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err != nil {
				t.Fatal(err)
			}
			var matched int
			for component, d := range c.deployments {
				if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
					continue
				}
				matched++
				// The fewest pods it runs: its replicas, or the autoscaler's minimum.
				replicas := 1
				if d.Spec.Replicas != nil {
					replicas = int(*d.Spec.Replicas)
				}
				for _, h := range c.hpas {
					if h.Spec.ScaleTargetRef.Name == d.Name && h.Spec.MinReplicas != nil {
						replicas = int(*h.Spec.MinReplicas)
					}
				}
				if n := evictable(t, b, replicas); n < 1 {
					t.Errorf("%s: PodDisruptionBudget %s lets a drain evict %d of %s's %d pods: every drain of their nodes waits forever", name, b.Name, n, component, replicas)
				}
			}
			if matched != 1 {
				t.Errorf("%s: PodDisruptionBudget %s selects %d Deployments, want one", name, b.Name, matched)
			}
		}
	}
	c := collect(t, renderValues(t, "minAvailable", map[string]any{
		"worker": map[string]any{"replicas": 3, "podDisruptionBudget": map[string]any{"minAvailable": 2}},
	}))
	for _, b := range c.pdbs {
		if b.Name != "furrow-worker" {
			continue
		}
		if b.Spec.MaxUnavailable != nil || b.Spec.MinAvailable == nil || b.Spec.MinAvailable.IntValue() != 2 {
			t.Errorf("worker.podDisruptionBudget.minAvailable 2 gives minAvailable %v, maxUnavailable %v; want minAvailable 2 alone", b.Spec.MinAvailable, b.Spec.MaxUnavailable)
		}
		return
	}
	t.Error("no PodDisruptionBudget furrow-worker")
}
