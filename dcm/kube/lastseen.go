package kube

import "sync"

// lastSeen keeps the last state of objects that left an informer's cache
// (a relabel out of the shard: the delete event carries the object at its
// new resourceVersion), by namespace/name, until the status writer takes
// it to clear dcm's entry. Its lock is a leaf.
type lastSeen[T any] struct {
	mu    sync.Mutex
	byKey map[string]T
}

func (l *lastSeen[T]) put(key string, v T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byKey == nil {
		l.byKey = map[string]T{}
	}
	l.byKey[key] = v
}

// take returns and forgets the state kept for key, the zero value if none.
func (l *lastSeen[T]) take(key string) T {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := l.byKey[key]
	delete(l.byKey, key)
	return v
}
