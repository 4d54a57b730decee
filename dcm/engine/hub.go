package engine

import (
	"sync"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// Hub numbers every event, keeps the most recent ones for clients that
// resume, and fans events out to subscribers without ever blocking the
// engine: a subscriber that falls behind is dropped with a reason.
type Hub struct {
	mu   sync.Mutex
	seq  uint64
	ring []dcm.Event // the last len(ring) events, oldest first once full
	next int         // where the next event goes in ring
	full bool
	subs map[*Subscription]struct{}
	now  func() time.Time
}

// Subscription receives events in seq order until it is closed. Events are
// shared by every subscriber, so they are read, never modified; a pointer
// keeps each subscriber's queue small (a thousand feed clients with deep
// queues would otherwise hold hundreds of megabytes of event copies).
type Subscription struct {
	C      chan *dcm.Event
	hub    *Hub
	reason string
	done   chan struct{}
}

// Events delivers the events in seq order.
func (s *Subscription) Events() <-chan *dcm.Event { return s.C }

// Done is closed when the hub drops the subscription or Close is called.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Reason says why the hub dropped the subscription ("" if closed by the client).
func (s *Subscription) Reason() string {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.reason
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	s.hub.drop(s, "")
}

// NewHub keeps the last capacity events for resumption.
func NewHub(capacity int) *Hub {
	return &Hub{ring: make([]dcm.Event, max(capacity, 1)), subs: map[*Subscription]struct{}{}, now: time.Now}
}

// Publish numbers the event, stores it and hands it to every subscriber.
func (h *Hub) Publish(ev dcm.Event) dcm.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	ev.Seq = h.seq
	if ev.Time.IsZero() {
		ev.Time = h.now()
	}
	h.ring[h.next] = ev
	h.next = (h.next + 1) % len(h.ring)
	if h.next == 0 {
		h.full = true
	}
	shared := &ev
	for s := range h.subs {
		select {
		case s.C <- shared:
		default:
			h.drop(s, "client too slow: queue full")
		}
	}
	return ev
}

// Seq is the seq of the last event published.
func (h *Hub) Seq() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// Since returns the events after seq. ok is false when some of them are no
// longer kept (the caller must start from a snapshot instead).
func (h *Hub) Since(seq uint64) (events []dcm.Event, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sinceLocked(seq)
}

func (h *Hub) sinceLocked(seq uint64) ([]dcm.Event, bool) {
	if seq > h.seq {
		return nil, false
	}
	kept := h.next
	if h.full {
		kept = len(h.ring)
	}
	oldest := h.seq - uint64(kept) + 1
	if seq+1 < oldest {
		return nil, false
	}
	out := make([]dcm.Event, 0, h.seq-seq)
	for s := seq + 1; s <= h.seq; s++ {
		idx := (h.next - int(h.seq-s) - 1 + len(h.ring)) % len(h.ring)
		out = append(out, h.ring[idx])
	}
	return out, true
}

// Subscribe returns the events after seq (as Since) and a subscription that
// receives every later event, with no gap and no duplicate between the two.
func (h *Hub) Subscribe(seq uint64, queue int) (backlog []dcm.Event, ok bool, sub *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	backlog, ok = h.sinceLocked(seq)
	sub = &Subscription{C: make(chan *dcm.Event, max(queue, 1)), hub: h, done: make(chan struct{})}
	h.subs[sub] = struct{}{}
	return backlog, ok, sub
}

// drop removes a subscription; h.mu must be held.
func (h *Hub) drop(s *Subscription, reason string) {
	if _, ok := h.subs[s]; !ok {
		return
	}
	delete(h.subs, s)
	s.reason = reason
	close(s.done)
}

// Subscribers counts current subscriptions.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}
