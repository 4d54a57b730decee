package server

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// maxTokenFailures is how many wrong tokens one address may send a minute.
const maxTokenFailures = 10

// failureLimit slows down token guessing: after maxFailures wrong tokens
// from one address within window, that address is refused until the window
// ends. Right tokens are never slowed down.
type failureLimit struct {
	mu          sync.Mutex
	byAddr      map[string]*failures
	maxFailures int
	window      time.Duration
	now         func() time.Time
}

type failures struct {
	count int
	since time.Time
}

func newFailureLimit(max int, window time.Duration) *failureLimit {
	return &failureLimit{byAddr: map[string]*failures{}, maxFailures: max, window: window, now: time.Now}
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// blocked reports whether the address has used up its failures.
func (l *failureLimit) blocked(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, ok := l.byAddr[addr]
	if !ok {
		return false
	}
	if l.now().Sub(f.since) > l.window {
		delete(l.byAddr, addr)
		return false
	}
	return f.count >= l.maxFailures
}

// fail counts one wrong token from the address.
func (l *failureLimit) fail(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.byAddr) > 10000 { // forget old windows rather than grow without bound
		for a, f := range l.byAddr {
			if now.Sub(f.since) > l.window {
				delete(l.byAddr, a)
			}
		}
	}
	f, ok := l.byAddr[addr]
	if !ok || now.Sub(f.since) > l.window {
		f = &failures{since: now}
		l.byAddr[addr] = f
	}
	f.count++
}
