package e2e

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/furrowhq/furrow/workflows"
)

// temporalServer is an in-process Temporal for one test, with Furrow's
// search attributes registered in its namespace.
type temporalServer struct {
	Address   string
	Namespace string
	Client    client.Client
}

func newTemporal(t *testing.T) temporalServer {
	t.Helper()
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		SearchAttributes: workflows.SearchAttributes(), Namespace: ts.GetDefaultNamespace(),
	})
	if err != nil {
		t.Fatalf("register search attributes: %v", err)
	}
	return temporalServer{Address: ts.GetFrontendHostPort(), Namespace: ts.GetDefaultNamespace(), Client: c}
}

// env returns the settings that point furrow at this server.
func (s temporalServer) env() map[string]string {
	return map[string]string{"FURROW_TEMPORAL_ADDRESS": s.Address, "FURROW_TEMPORAL_NAMESPACE": s.Namespace}
}
