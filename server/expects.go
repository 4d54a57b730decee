package server

import (
	"sync"
	"time"
)

// expectTTL is how long another replica may still cancel an expectation
// it asked for (POST /api/v1/expect): its scale follows at once, or fails
// at once.
const expectTTL = time.Minute

// maxExpects bounds the expectations kept for cancelling.
const maxExpects = 1000

// expects keeps the cancel functions of the expectations other replicas
// asked for, so that one whose scale failed can take its back: the engine
// would otherwise wait for commands that never come and report a mismatch.
type expects struct {
	mu     sync.Mutex
	byID   map[string]expectEntry
	now    func() time.Time
	cancel func(func()) // runs a cancel (tests count them)
}

type expectEntry struct {
	cancel  func()
	expires time.Time
}

func newExpects() *expects {
	return &expects{byID: map[string]expectEntry{}, now: time.Now, cancel: func(f func()) { f() }}
}

// add keeps cancel and returns its id.
func (x *expects) add(cancel func()) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	now := x.now()
	for id, e := range x.byID {
		if now.After(e.expires) {
			delete(x.byID, id)
		}
	}
	if len(x.byID) >= maxExpects {
		return "" // not cancellable; it still settles at its deadline
	}
	id := randomToken()
	x.byID[id] = expectEntry{cancel: cancel, expires: now.Add(expectTTL)}
	return id
}

// take cancels the expectation id; false if unknown or expired.
func (x *expects) take(id string) bool {
	x.mu.Lock()
	e, ok := x.byID[id]
	delete(x.byID, id)
	x.mu.Unlock()
	if !ok || x.now().After(e.expires) {
		return false
	}
	x.cancel(e.cancel)
	return true
}
