package testenv

import "testing"

// SkipShort skips t in -short mode (the quick loop), naming what the test
// starts that the quick loop leaves out and the full run that runs it.
func SkipShort(t testing.TB, starts string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("skipped in -short: starts %s; `make test` runs it", starts)
	}
}
