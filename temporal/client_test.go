package temporal

import (
	"testing"

	"go.temporal.io/sdk/client"
)

func TestClientCompressionFollowsGzip(t *testing.T) {
	if _, ok := clientOptions(Options{}).ConnectionOptions.GrpcCompression.(*client.GrpcCompressionNone); !ok {
		t.Errorf("default compression %T, want none (the SDK's default would be gzip)", clientOptions(Options{}).ConnectionOptions.GrpcCompression)
	}
	if _, ok := clientOptions(Options{Gzip: true}).ConnectionOptions.GrpcCompression.(*client.GrpcCompressionGzip); !ok {
		t.Errorf("Gzip: true gave %T, want gzip", clientOptions(Options{Gzip: true}).ConnectionOptions.GrpcCompression)
	}
}
