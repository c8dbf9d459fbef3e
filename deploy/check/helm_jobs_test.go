package check

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// checkHookJob: a hook Job has a deadline, so that it cannot hold an
// upgrade forever, and every container requests CPU and memory and has a
// memory limit, which a namespace's ResourceQuota requires of every pod.
func checkHookJob(t *testing.T, j *batchv1.Job) {
	t.Helper()
	if d := j.Spec.ActiveDeadlineSeconds; d == nil || *d <= 0 {
		t.Errorf("Job %s has no activeDeadlineSeconds: a hung run holds the upgrade until Helm's timeout and runs on after it", j.Name)
	}
	for _, ct := range j.Spec.Template.Spec.Containers {
		r := ct.Resources
		if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() {
			t.Errorf("Job %s/%s: resources not set (%+v): a namespace with a ResourceQuota refuses its pod", j.Name, ct.Name, r)
		}
	}
}

// TestHelmHookJobValues: the hook Jobs' resources and deadlines come from
// values, the search-attribute Job's deadline 300 s by default.
func TestHelmHookJobValues(t *testing.T) {
	c := collect(t, render(t, ""))
	if sa := c.jobs["search-attributes"]; sa == nil {
		t.Fatal("no search-attribute Job")
	} else if d := sa.Spec.ActiveDeadlineSeconds; d == nil || *d != 300 {
		t.Errorf("the search-attribute Job's deadline is %v, want 300 s by default", d)
	}
	res := func(cpu, mem, limit string) map[string]any {
		return map[string]any{"requests": map[string]any{"cpu": cpu, "memory": mem}, "limits": map[string]any{"memory": limit}}
	}
	given := map[string]any{
		"migrate":          map[string]any{"resources": res("200m", "96Mi", "300Mi"), "activeDeadlineSeconds": 1800},
		"searchAttributes": map[string]any{"resources": res("30m", "40Mi", "90Mi"), "activeDeadlineSeconds": 120},
	}
	c = collect(t, renderValues(t, "hook Jobs", given))
	for component, want := range map[string][4]string{
		"migrate":           {"200m", "96Mi", "300Mi", "1800"},
		"search-attributes": {"30m", "40Mi", "90Mi", "120"},
	} {
		j := c.jobs[component]
		if j == nil {
			t.Fatalf("no %s Job", component)
		}
		r := container(t, j.Spec.Template.Spec, component).Resources
		for i, got := range []resource.Quantity{*r.Requests.Cpu(), *r.Requests.Memory(), *r.Limits.Memory()} {
			if got.Cmp(resource.MustParse(want[i])) != 0 {
				t.Errorf("%s: resources %+v, want requests %s/%s, memory limit %s", component, r, want[0], want[1], want[2])
				break
			}
		}
		if d := j.Spec.ActiveDeadlineSeconds; d == nil || fmt.Sprint(*d) != want[3] {
			t.Errorf("%s: activeDeadlineSeconds %v, want %s", component, d, want[3])
		}
	}
}

// helmCommand is a `helm install` or `helm upgrade` of Furrow's chart, as
// the operators' pages write it (continued lines joined).
var helmCommand = regexp.MustCompile("helm (?:install|upgrade) [^`\n]*deploy/helm/furrow[^`\n]*")

// TestHelmDocsTimeoutCoversHooks: every `helm install` and `helm upgrade`
// of the chart the pages show waits longer than the hook Jobs' deadlines.
// Helm waits for each hook Job 5 minutes unless --timeout says otherwise;
// a migration still running then fails the upgrade while the Job runs on,
// and the next upgrade deletes it (before-hook-creation), undoing its
// table conversion.
func TestHelmDocsTimeoutCoversHooks(t *testing.T) {
	vals := mergedValues(t, map[string]any{})
	var deadline time.Duration
	for _, key := range []string{"migrate", "searchAttributes"} {
		d, ok := vals[key].(map[string]any)["activeDeadlineSeconds"]
		if !ok {
			t.Errorf("values.yaml sets no %s.activeDeadlineSeconds", key)
			continue
		}
		deadline = max(deadline, time.Duration(toInt(t, d))*time.Second)
	}
	timeoutFlag := regexp.MustCompile(`--timeout[ =](\S+)`)
	var found int
	for _, page := range []string{"../../docs/operating/deploy.md", "../../docs/operating/production.md"} {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "\\\n", " ")
		for _, cmd := range helmCommand.FindAllString(text, -1) {
			found++
			m := timeoutFlag.FindStringSubmatch(cmd)
			if m == nil {
				t.Errorf("%s: %q has no --timeout: Helm waits 5m for a hook Job, whose deadline is %s", page, cmd, deadline)
				continue
			}
			if d, err := time.ParseDuration(m[1]); err != nil || d <= deadline {
				t.Errorf("%s: %q waits %s for a hook Job, whose deadline is %s", page, cmd, m[1], deadline)
			}
		}
	}
	if found < 3 {
		t.Errorf("found %d helm install/upgrade lines of the chart in the pages, want the install and upgrade of deploy.md and production.md's", found)
	}
}

// toInt is a number read from values.
func toInt(t *testing.T, v any) int {
	t.Helper()
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	t.Fatalf("%v is %T, not a number", v, v)
	return 0
}
