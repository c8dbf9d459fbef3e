package memstore

import (
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/furrowhq/furrow"
)

// Recorder keeps the calls a Store made, in the order they returned. Make
// one with Store.Record. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	calls []Call
}

func (r *Recorder) observe(c Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// Calls returns the recorded calls of the named methods, or of every
// method when none is named. It panics on a name that is not a Store
// method.
func (r *Recorder) Calls(methods ...string) []Call {
	mustBeMethods(methods)
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Call
	for _, c := range r.calls {
		if len(methods) == 0 || slices.Contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// Count returns how many calls of the named methods were recorded.
func (r *Recorder) Count(methods ...string) int { return len(r.Calls(methods...)) }

// Last returns the last recorded call of the named methods; false if there
// was none.
func (r *Recorder) Last(methods ...string) (Call, bool) {
	cs := r.Calls(methods...)
	if len(cs) == 0 {
		return Call{}, false
	}
	return cs[len(cs)-1], true
}

// Attempts returns the attempts stored by AddAttempt calls that
// succeeded, in order, as they were passed.
func (r *Recorder) Attempts() []furrow.Attempt {
	var out []furrow.Attempt
	for _, c := range r.Calls("AddAttempt") {
		if c.Err == nil {
			out = append(out, c.Args[0].(furrow.Attempt))
		}
	}
	return out
}

// mustBeMethods panics unless every name is a method of Store, so that a
// misspelt name fails the test instead of matching nothing.
func mustBeMethods(names []string) {
	t := reflect.TypeFor[*Store]()
	for _, n := range names {
		if _, ok := t.MethodByName(n); !ok {
			panic(fmt.Sprintf("memstore: %q is not a method of Store", n))
		}
	}
}
