// Package check holds the checks of Furrow's deploy kit: the compose file
// (with the Compose specification's loader), the Helm chart (with Helm's
// own packages, every rendered object decoded strictly into the Kubernetes
// API types and every pod held to Pod Security's "restricted" level with
// Kubernetes's own evaluator) and the device-certificate proxy's files (its configuration,
// its error answers, and device-certs.sh run with openssl). It is a module of its own so that these heavy dependencies
// stay out of the service's, and it sits below deploy/ rather than at it so
// that deploy/observability/ stays in the root module; the root module's
// internal/deploycheck runs `go test ./...` here, so the root module's test
// command covers it. It requires the root module at ../.. (a replace
// directive), so that it reads cmd/furrow's settings with the same code as
// the documentation's checks (internal/doccheck).
package check
