package telemetry

import (
	"strconv"
	"strings"
	"testing"
)

// value returns the sample of an unlabelled series in an exposition.
func value(t *testing.T, body, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("%s missing:\n%s", name, body)
	return 0
}

// grep returns the lines of body that contain s.
func grep(body, s string) string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
