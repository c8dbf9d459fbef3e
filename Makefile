# The test entry points (see CONTRIBUTING.md). `make test` is what CI runs.

export PATH := /usr/local/go/bin:$(PATH):/usr/sbin

.PHONY: test test-short setup vet

# The full run: every test, after making the machine ready for them. The
# e2e package, the production topology among it, runs longer than go
# test's default 10 minutes on a loaded 2-core machine. The second line
# runs cmd/furrow's tests again under the production build (nodev, as in
# deploy/Dockerfile) with the bench tool: its tests of a build without
# `furrow dev` skip in the first.
test: setup vet
	go test -timeout=30m ./...
	go test -tags nodev,bench ./cmd/furrow

# The quick loop: skips the tests that start process topologies, browsers
# or proxies; each says that `make test` runs it.
test-short:
	go test -short ./...

# Starts PostgreSQL and Redis, installs the tools the tests drive.
setup:
	.ci/setup

# The nodev line vets the production build (deploy/Dockerfile), without the
# embedded Temporal.
vet:
	go vet ./...
	CGO_ENABLED=0 go vet -tags nodev ./cmd/furrow
