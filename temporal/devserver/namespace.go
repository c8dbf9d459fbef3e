package devserver

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"

	"go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/config"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"google.golang.org/protobuf/types/known/durationpb"
)

// prepareDatabase creates the schema in a new SQLite file and registers the
// namespace with its retention and search attributes if it does not exist.
// Namespaces cannot be created through the API before the server runs its
// system workflows, so they are written straight into the database.
func prepareDatabase(r *resolved) error {
	for file, cfg := range map[string]*config.SQL{r.dbFile: r.sql, r.visFile: r.visSQL} {
		if file == "" {
			continue
		}
		fresh, err := isNewFile(file)
		if err != nil {
			return err
		}
		if fresh {
			if err := sqliteschema.SetupSchema(cfg); err != nil {
				return fmt.Errorf("devserver: set up SQLite schema in %s: %w", file, err)
			}
		}
	}
	if r.visFile != "" {
		if err := trimVisibilityIndexes(r.visFile); err != nil {
			return err
		}
	}
	ns, err := sqliteschema.NewNamespaceConfig(clusterName, r.namespace, false, r.searchAttributes)
	if err != nil {
		return fmt.Errorf("devserver: namespace %q: %w", r.namespace, err)
	}
	ns.Detail.Config.Retention = durationpb.New(r.retention)
	if err := sqliteschema.CreateNamespaces(r.sql, ns); err != nil {
		return fmt.Errorf("devserver: register namespace %q: %w", r.namespace, err)
	}
	return nil
}

// isNewFile reports whether path is missing or empty, i.e. has no schema yet.
func isNewFile(path string) (bool, error) {
	info, err := os.Stat(path)
	if os.IsNotExist(err) {
		return true, nil
	} else if err != nil {
		return false, fmt.Errorf("devserver: inspect %s: %w", path, err)
	}
	return info.Size() == 0, nil
}

// reconcileNamespace brings a namespace that already existed in the file up
// to date: the pre-registration above leaves an existing namespace alone.
func reconcileNamespace(ctx context.Context, r *resolved) error {
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  r.frontendAddr,
		Namespace: r.namespace,
		Logger:    sdklog.NewStructuredLogger(r.logger),
	})
	if err != nil {
		return fmt.Errorf("devserver: dial frontend %s: %w", r.frontendAddr, err)
	}
	defer c.Close()
	if err := ensureRetention(ctx, c.WorkflowService(), r); err != nil {
		return err
	}
	if err := ensureSearchAttributes(ctx, c.OperatorService(), r); err != nil {
		return err
	}
	if r.visFile == "" {
		return nil
	}
	used, err := usedSlots(ctx, c.WorkflowService())
	if err != nil {
		return err
	}
	return fitSlotIndexes(r.visFile, used)
}

// usedSlots returns the custom search attribute slots (Keyword01, Int01…)
// that some namespace maps an attribute to.
func usedSlots(ctx context.Context, svc workflowservice.WorkflowServiceClient) (map[string]bool, error) {
	used := map[string]bool{}
	req := &workflowservice.ListNamespacesRequest{PageSize: 100}
	for {
		resp, err := svc.ListNamespaces(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("devserver: list namespaces: %w", err)
		}
		for _, ns := range resp.GetNamespaces() {
			for field := range ns.GetConfig().GetCustomSearchAttributeAliases() {
				used[field] = true
			}
		}
		if len(resp.GetNextPageToken()) == 0 {
			return used, nil
		}
		req.NextPageToken = resp.GetNextPageToken()
	}
}

func ensureRetention(ctx context.Context, svc workflowservice.WorkflowServiceClient, r *resolved) error {
	desc, err := svc.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: r.namespace})
	if err != nil {
		return fmt.Errorf("devserver: describe namespace %q: %w", r.namespace, err)
	}
	if desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() == r.retention {
		return nil
	}
	_, err = svc.UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{
		Namespace: r.namespace,
		Config:    &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(r.retention)},
	})
	if err != nil {
		return fmt.Errorf("devserver: set retention of namespace %q: %w", r.namespace, err)
	}
	return nil
}

// ensureSearchAttributes adds the missing search attributes. One that exists
// with another type is an error: Temporal cannot change a type in place.
func ensureSearchAttributes(ctx context.Context, svc operatorservice.OperatorServiceClient, r *resolved) error {
	list, err := svc.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: r.namespace})
	if err != nil {
		return fmt.Errorf("devserver: list search attributes: %w", err)
	}
	existing := list.GetCustomAttributes()
	missing := map[string]enums.IndexedValueType{}
	for _, name := range slices.Sorted(maps.Keys(r.searchAttributes)) {
		want := r.searchAttributes[name]
		got, ok := existing[name]
		switch {
		case !ok:
			missing[name] = want
		case got != want:
			return fmt.Errorf("devserver: search attribute %s exists with type %s, want %s", name, got, want)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = svc.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        r.namespace,
		SearchAttributes: missing,
	})
	if err != nil {
		return fmt.Errorf("devserver: add search attributes: %w", err)
	}
	refreshSearchAttributesFor(r.dynamic, searchAttributeCacheTTL)
	return nil
}
