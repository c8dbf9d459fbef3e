// Command temporalsetup prepares a Temporal cluster for Furrow the way an
// operator would, through the cluster's public API: it registers the
// namespace with its retention and adds those of Furrow's search
// attributes that are missing. It is what `temporal operator namespace
// create` and `temporal operator search-attribute create` do, without
// needing the CLI. A namespace that exists already keeps its other
// settings, but its retention is set to -retention (default 720h) when it
// differs: to keep an existing namespace's retention, pass it as
// -retention. With -trim-visibility it also drops the visibility indexes
// Furrow never uses from a PostgreSQL visibility database (package
// visindex). Running it again with the same flags changes nothing.
//
//	temporalsetup -address 127.0.0.1:7233 -namespace default -retention 720h \
//	    [-trim-visibility postgres://user@host:5432/temporal_visibility]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/furrowhq/furrow"
	"github.com/furrowhq/furrow/temporal/visindex"
	"github.com/furrowhq/furrow/workflows"
)

func main() {
	address := flag.String("address", "127.0.0.1:7233", "Temporal frontend host:port")
	namespace := flag.String("namespace", "default", "namespace to register")
	retention := flag.Duration("retention", furrow.AttemptRetention, "how long closed workflows are kept; an existing namespace's retention is set to it")
	wait := flag.Duration("wait", 2*time.Minute, "how long to wait for the frontend to answer")
	trim := flag.String("trim-visibility", "", "PostgreSQL URL of the visibility database whose unused indexes to drop (and whose indexes Furrow needs to make); empty: leave it alone")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	if err := setup(ctx, *address, *namespace, *retention); err != nil {
		fmt.Fprintln(os.Stderr, "temporalsetup:", err)
		os.Exit(1)
	}
	fmt.Printf("namespace %s ready: retention %s, search attributes %v\n", *namespace, *retention, slices.Sorted(maps.Keys(workflows.SearchAttributes())))
	if *trim == "" {
		return
	}
	done, err := visindex.TrimPostgres(ctx, *trim)
	if err != nil {
		fmt.Fprintln(os.Stderr, "temporalsetup:", err)
		os.Exit(1)
	}
	fmt.Printf("visibility: dropped %d unused indexes, made %d that Furrow's search attributes need\n", done.Dropped, done.Restored)
}

// setup registers the namespace and the search attributes, retrying while
// the frontend is still starting, until ctx ends.
func setup(ctx context.Context, address, namespace string, retention time.Duration) error {
	quiet := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	opts := client.Options{HostPort: address, Namespace: namespace, Logger: quiet}
	steps := []struct {
		what string
		do   func(context.Context, client.Client) error
	}{
		{"register namespace", func(ctx context.Context, c client.Client) error { return register(ctx, c, namespace, retention) }},
		{"add search attributes", func(ctx context.Context, c client.Client) error { return addSearchAttributes(ctx, c, namespace) }},
	}
	var c client.Client
	for _, s := range steps {
		err := retry(ctx, func() error {
			if c == nil {
				var err error
				if c, err = client.DialContext(ctx, opts); err != nil {
					return err
				}
			}
			return s.do(ctx, c)
		})
		if err != nil {
			return fmt.Errorf("%s at %s: %w", s.what, address, err)
		}
	}
	c.Close()
	return nil
}

// register creates the namespace, or sets the retention of an existing one.
func register(ctx context.Context, c client.Client, namespace string, retention time.Duration) error {
	ws := c.WorkflowService()
	_, err := ws.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace:                        namespace,
		WorkflowExecutionRetentionPeriod: durationpb.New(retention),
	})
	var exists *serviceerror.NamespaceAlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return err
	}
	d, err := ws.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: namespace})
	if err != nil {
		return err // the new namespace is not visible yet
	}
	if d.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() == retention {
		return nil
	}
	cfg := d.GetConfig()
	cfg.WorkflowExecutionRetentionTtl = durationpb.New(retention)
	_, err = ws.UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{Namespace: namespace, Config: cfg})
	return err
}

// addSearchAttributes adds the search attributes Furrow's delivery
// workflows carry, leaving those already there alone.
func addSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	ops := c.OperatorService()
	have, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return err
	}
	want := workflows.SearchAttributes()
	for n := range have.GetCustomAttributes() {
		delete(want, n)
	}
	if len(want) == 0 {
		return nil
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{Namespace: namespace, SearchAttributes: want})
	var exists *serviceerror.AlreadyExists
	if errors.As(err, &exists) {
		return nil
	}
	return err
}

// retry calls f every second until it succeeds or ctx ends, and returns
// the last error then.
func retry(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}
