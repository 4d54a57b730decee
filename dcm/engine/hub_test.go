package engine

import (
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func TestHubSince(t *testing.T) {
	h := NewHub(4)
	for range 6 {
		h.Publish(dcm.Event{Type: dcm.EventApplied})
	}
	tests := []struct {
		since  uint64
		ok     bool
		first  uint64
		length int
	}{
		{since: 6, ok: true, length: 0},
		{since: 5, ok: true, first: 6, length: 1},
		{since: 2, ok: true, first: 3, length: 4},
		{since: 1, ok: false},
		{since: 0, ok: false},
		{since: 7, ok: false},
	}
	for _, tt := range tests {
		got, ok := h.Since(tt.since)
		if ok != tt.ok || len(got) != tt.length {
			t.Errorf("Since(%d) = %d events, %v; want %d, %v", tt.since, len(got), ok, tt.length, tt.ok)
			continue
		}
		for i, ev := range got {
			if ev.Seq != tt.first+uint64(i) {
				t.Errorf("Since(%d)[%d].Seq = %d, want %d", tt.since, i, ev.Seq, tt.first+uint64(i))
			}
		}
	}
}

func TestHubDropsSlowSubscriberWithoutBlocking(t *testing.T) {
	h := NewHub(100)
	_, _, slow := h.Subscribe(0, 2)
	_, _, fast := h.Subscribe(0, 100)
	for range 10 {
		h.Publish(dcm.Event{Type: dcm.EventApplied})
	}
	select {
	case <-slow.Done():
	default:
		t.Fatal("a subscriber with a full queue was not dropped")
	}
	if slow.Reason() == "" {
		t.Error("a dropped subscriber gets no reason")
	}
	if len(fast.C) != 10 {
		t.Errorf("fast subscriber got %d events, want 10", len(fast.C))
	}
	backlog, ok, sub := h.Subscribe(7, 10)
	h.Publish(dcm.Event{Type: dcm.EventApplied})
	if !ok || len(backlog) != 3 || backlog[0].Seq != 8 {
		t.Fatalf("resume from 7: %v %+v", ok, backlog)
	}
	if ev := <-sub.C; ev.Seq != 11 {
		t.Fatalf("first live event after resume has seq %d, want 11", ev.Seq)
	}
}
