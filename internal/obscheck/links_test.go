package obscheck

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/workflows"
)

// The dashboard links to the Temporal UI's list of failed deliveries,
// with the UI's address and the namespace as dashboard variables and the
// query on the search attributes that delivery workflows set.
func TestDashboardLinksToFailedDeliveries(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(Dir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Templating struct {
			List []struct{ Name, Type string }
		}
		Links []struct{ Title, URL string }
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["temporal_ui"] != "textbox" || vars["temporal_namespace"] != "textbox" {
		t.Errorf("variables %v: want textboxes temporal_ui and temporal_namespace", vars)
	}
	want := `ExecutionStatus="Failed" AND ` + workflows.SearchOutcome.GetName() + `="` + furrow.OutcomeFailed + `"`
	for _, l := range d.Links {
		path, rawQuery, _ := strings.Cut(l.URL, "?")
		q, err := url.ParseQuery(rawQuery)
		if err == nil && path == "${temporal_ui}/namespaces/${temporal_namespace}/workflows" && q.Get("query") == want {
			return
		}
	}
	t.Errorf("no dashboard link opens the Temporal UI's workflows with the query %s: %+v", want, d.Links)
}
