// Package memstore is an in-memory implementation of the service
// interfaces of package furrow, for tests. It is held to the PostgreSQL
// store by the same store/storetest conformance suites, so code tested
// against it meets the behaviour it will meet in production.
//
// Beyond the services, a test may inject a fault (Store.Fault: make chosen
// calls fail, to reach error paths) and watch every call (Store.Observe, or
// the Recorder of Store.Record: which writes were made, with which
// arguments and deadlines), and read the outbox state of an event
// (Store.OutboxState).
//
// A Store is safe for concurrent use and reads "now" from the clock it was
// made with. It pages the lists (readings, events, delivery attempts) as
// the store does (furrow.ListLimit), since callers rely on a page's end,
// and it keeps what only PostgreSQL enforces loosely: it does not reshape
// stored text or JSON.
package memstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/furrowhq/furrow"
)

// Store is the in-memory store. Make one with New.
type Store struct {
	clock furrow.Clock

	hooksMu  sync.Mutex
	fault    func(Call) error
	observer func(Call)

	// rowMu stands for the webhook row lock that orders a failed chain's
	// guarded state write and a delivery's row in the store
	// (SetWebhookState, TransitionWebhook, AddDeliveredAttempt). The state
	// writes hold it, then mu, around their check and write;
	// AddDeliveredAttempt holds it around its call of AddAttempt, which
	// takes mu, so that the row is recorded as AddAttempt's.
	rowMu sync.Mutex

	mu       sync.Mutex
	seq      int64 // the order of rows, like the tables' seq columns
	users    map[uuid.UUID]furrow.User
	tokens   map[furrow.SecretHash]uuid.UUID
	farms    map[uuid.UUID]furrow.Farm
	members  map[member]furrow.Role
	devices  map[uuid.UUID]*device
	keys     map[furrow.SecretHash]uuid.UUID // device key hash -> device
	readings []reading
	once     map[onceKey]onceEntry
	events   []*event // in the order stored
	eventIDs map[string]*event
	webhooks []*webhook // in the order created
	attempts []attempt
	// testEvents are the stored webhook.test events by id.
	testEvents map[string]furrow.Event
}

// New returns an empty Store whose "now" is clock's.
func New(clock furrow.Clock) *Store {
	return &Store{
		clock:    clock,
		users:    map[uuid.UUID]furrow.User{},
		tokens:   map[furrow.SecretHash]uuid.UUID{},
		farms:    map[uuid.UUID]furrow.Farm{},
		members:  map[member]furrow.Role{},
		devices:  map[uuid.UUID]*device{},
		keys:     map[furrow.SecretHash]uuid.UUID{},
		once:     map[onceKey]onceEntry{},
		eventIDs: map[string]*event{},
	}
}

// Call is one call of a Store method as the fault hook and the observer see
// it.
type Call struct {
	Method   string // the method's name, such as "AddAttempt"
	Args     []any  // its arguments after the context, as passed
	Deadline bool   // whether the context had a deadline
	// Result is the first value returned (nil for a method that returns
	// only an error) and Err the error; both are unset in the fault hook.
	Result any
	Err    error
}

// Fault sets the hook run before every call, outside the store's lock.
// When it returns an error the call does nothing and returns that error;
// it may also panic, as a broken driver would. nil removes the hook. See
// Fail for the common case.
func (s *Store) Fault(hook func(Call) error) {
	s.hooksMu.Lock()
	defer s.hooksMu.Unlock()
	s.fault = hook
}

// Observe sets the function told of every call once it returned, failed
// calls included, outside the store's lock; nil removes it. See Record.
func (s *Store) Observe(observer func(Call)) {
	s.hooksMu.Lock()
	defer s.hooksMu.Unlock()
	s.observer = observer
}

// Record starts a Recorder of every call from now on, replacing any
// observer, and returns it.
func (s *Store) Record() *Recorder {
	r := &Recorder{}
	s.Observe(r.observe)
	return r
}

// Fail returns a fault hook that fails every call of the named methods
// with err. It panics on a name that is not a Store method.
func Fail(err error, methods ...string) func(Call) error {
	mustBeMethods(methods)
	return func(c Call) error {
		for _, m := range methods {
			if c.Method == m {
				return err
			}
		}
		return nil
	}
}

func (s *Store) hooks() (func(Call) error, func(Call)) {
	s.hooksMu.Lock()
	defer s.hooksMu.Unlock()
	return s.fault, s.observer
}

// do runs fn, a method's work, under the store's lock, between the fault
// hook and the observer. A context that has ended fails the call as it
// would fail a database call.
func do[T any](ctx context.Context, s *Store, method string, args []any, fn func() (T, error)) (T, error) {
	return doUnder(ctx, s, &s.mu, method, args, fn)
}

// doUnder is do holding lock instead of the store's.
func doUnder[T any](ctx context.Context, s *Store, lock sync.Locker, method string, args []any, fn func() (T, error)) (T, error) {
	_, hasDeadline := ctx.Deadline()
	c := Call{Method: method, Args: args, Deadline: hasDeadline}
	fault, observer := s.hooks()
	var v T
	var err error
	if fault != nil {
		err = fault(c)
	}
	if err == nil {
		err = ctx.Err()
		if err != nil {
			err = fmt.Errorf("memstore: %s: %w", method, err)
		}
	}
	if err == nil {
		lock.Lock()
		v, err = fn()
		lock.Unlock()
	}
	if observer != nil {
		if err == nil {
			c.Result = first(v)
		}
		c.Err = err
		observer(c)
	}
	return v, err
}

// tuple is the unexported result of a method that returns more than one
// value besides the error; its first value is the Call's Result.
type tuple interface{ first() any }

func first(v any) any {
	if t, ok := v.(tuple); ok {
		return t.first()
	}
	return v
}

// none is the result of a method that returns only an error.
type none = any

func (s *Store) now() time.Time { return s.clock.Now() }

func (s *Store) nowMs() int64 { return furrow.Millis(s.clock.Now()) }

// next returns the next row sequence number.
func (s *Store) next() int64 {
	s.seq++
	return s.seq
}

func notFound(what string) error {
	return furrow.Errorf(furrow.ENOTFOUND, "The %s was not found.", what)
}
