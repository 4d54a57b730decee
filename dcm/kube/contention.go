package kube

import (
	"strconv"
	"sync"
	"time"
)

// contention keeps dcm from fighting another writer over one status, as
// OpenShift's router's contention tracker does. Two routers that share a
// router name but disagree (other shards, other versions, a misconfigured
// --router-name), or two Ingress controllers of one class that publish
// other addresses, would otherwise each rewrite the entry as soon as the
// other's write reaches it: a write storm that never converges.
//
// How: for each object it remembers what dcm last wrote and the
// resourceVersion that write produced. When the object comes back newer
// than that write and its entry no longer says what dcm wrote (and still
// wants), someone else changed it. The first such change is taken back
// (a one-off edit, a replica that has not heard of its demotion yet); a
// second one within Window marks the object contended, and dcm leaves it
// alone until Window has passed since, then tries once more. A stale
// cache (older than dcm's own write) is not contention: resourceVersions
// are etcd revisions, which the API server hands out increasing, so
// "newer" is a number comparison (a version that is no number counts as
// newer, which at worst backs off too early).
type contention struct {
	window time.Duration
	mu     sync.Mutex
	byKey  map[string]*contended
}

type contended struct {
	wrote   string    // what dcm last wrote (a fingerprint)
	version string    // the resourceVersion of that write
	changes int       // changes by others since start
	start   time.Time // of the window the changes are counted in
	until   time.Time // contended: no write before
}

// contentionThreshold is how many changes by others within the window
// make an object contended: one is taken back, two are a fight.
const contentionThreshold = 2

func newContention(window time.Duration) *contention {
	if window <= 0 {
		window = time.Minute
	}
	return &contention{window: window, byKey: map[string]*contended{}}
}

// hold says whether dcm must not write want now to the object key, seen at
// version, and for how long (0: write). Call it only when the object's
// entry differs from want.
func (c *contention) hold(key, want, version string, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byKey[key]
	if e == nil {
		return 0
	}
	if now.Before(e.until) {
		return e.until.Sub(now)
	}
	if e.wrote != want || !newerVersion(version, e.version) {
		return 0
	}
	if now.Sub(e.start) > c.window {
		e.start, e.changes = now, 0
	}
	e.changes++
	if e.changes < contentionThreshold {
		return 0
	}
	e.until, e.changes, e.start = now.Add(c.window), 0, now.Add(c.window)
	return c.window
}

// wrote records that dcm wrote want to key, which made version.
func (c *contention) wrote(key, want, version string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byKey[key]
	if e == nil {
		e = &contended{start: now}
		c.byKey[key] = e
	}
	e.wrote, e.version = want, version
}

// forget drops what is known of key (the object is gone).
func (c *contention) forget(key string) {
	c.mu.Lock()
	delete(c.byKey, key)
	c.mu.Unlock()
}

// newerVersion says whether resourceVersion a is newer than b.
func newerVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA != nil || errB != nil {
		return a != b
	}
	return x > y
}
