package check

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// podEnv is ct's environment as the kubelet makes it from secrets (Secret
// name -> key -> value), leaving out what other Secrets give; a pod whose
// required key of them is missing never starts, which fails t.
func podEnv(t *testing.T, ct corev1.Container, secrets map[string]map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range ct.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref == nil || secrets[ref.Name] == nil {
			continue
		}
		v, ok := secrets[ref.Name][ref.Key]
		switch {
		case ok:
			env[e.Name] = v
		case ref.Optional == nil || !*ref.Optional:
			t.Errorf("%s: %s needs key %s of Secret %s, which is missing: the pod would not start", ct.Name, e.Name, ref.Key, ref.Name)
		}
	}
	return env
}

// TestHelmDatabasePassword: the Furrow processes log in with the password
// of the Secret's database-password key exactly as written, whatever its
// characters, while the URL carries none (inside the URL it would need
// percent-encoding: / @ # break it). The key is optional, so that a URL
// with the password in it keeps working.
func TestHelmDatabasePassword(t *testing.T) {
	for _, file := range []string{"", exampleValues} {
		c := collect(t, render(t, file))
		secrets := mergedValues(t, values(t, file))["secrets"].(map[string]any)
		name := secrets["name"].(string)
		containers := map[string]corev1.Container{
			"serve":   container(t, c.deployments["serve"].Spec.Template.Spec, "serve"),
			"worker":  container(t, c.deployments["worker"].Spec.Template.Spec, "worker"),
			"migrate": container(t, c.jobs["migrate"].Spec.Template.Spec, "migrate"),
		}
		for component, ct := range containers {
			t.Run(component+" values "+file, func(t *testing.T) {
				apart := map[string]map[string]string{name: {
					"database-url":      "postgres://furrow@db.example:5432/furrow",
					"database-password": awkwardPassword,
					"redis-url":         "redis://redis.example:6379/0",
				}}
				if user, password := databaseLogin(t, podEnv(t, ct, apart)); user != "furrow" || password != awkwardPassword {
					t.Errorf("with the password under database-password: logs in as %q with %q, want furrow with %q", user, password, awkwardPassword)
				}
				inURL := map[string]map[string]string{name: {
					"database-url": "postgres://furrow:s3cret@db.example:5432/furrow",
					"redis-url":    "redis://redis.example:6379/0",
				}}
				if user, password := databaseLogin(t, podEnv(t, ct, inURL)); user != "furrow" || password != "s3cret" {
					t.Errorf("with the password in the URL: logs in as %q with %q, want furrow with s3cret", user, password)
				}
			})
		}
	}
}
