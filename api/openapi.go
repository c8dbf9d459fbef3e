package api

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3.1 document of every route and of the outgoing
// webhook deliveries, served at GET /api/openapi.json. It is written by hand
// and held to the handlers by tests: a route missing from it or named by it
// and not served fails, and every request and answer of the API and
// end-to-end tests is validated against it.
//
//go:embed openapi.json
var OpenAPI []byte

// openAPI serves the document. It needs no credential and is not rate
// limited, like the probes.
func (s *server) openAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(OpenAPI)
}
