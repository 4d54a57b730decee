package feedclient

import (
	"errors"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

func hello(seq uint64, resumed bool) dcm.FeedMessage {
	return dcm.FeedMessage{Type: dcm.FeedTypeHello, Seq: seq, Hello: &dcm.FeedHello{Protocol: dcm.FeedProtocol, Resumed: resumed}}
}

func snapshot(seq uint64) dcm.FeedMessage {
	return dcm.FeedMessage{Type: dcm.FeedTypeSnapshot, Seq: seq, Snapshot: &dcm.Snapshot{Seq: seq}}
}

func event(seq uint64) dcm.FeedMessage {
	return dcm.FeedMessage{Type: dcm.FeedTypeEvent, Seq: seq, Event: &dcm.Event{Seq: seq}}
}

func ping(seq uint64) dcm.FeedMessage { return dcm.FeedMessage{Type: dcm.FeedTypePing, Seq: seq} }

// TestCheckOrder: the client accepts what docs/feed.md promises and refuses
// the rest; the last message of each case is the one that decides.
func TestCheckOrder(t *testing.T) {
	tests := []struct {
		name     string
		since    uint64
		resume   bool
		filtered bool
		msgs     []dcm.FeedMessage
		wantErr  bool
		wantSeq  uint64
	}{
		{name: "fresh start", msgs: []dcm.FeedMessage{hello(5, false), snapshot(5), event(6), ping(6), event(7)}, wantSeq: 7},
		{name: "resume", since: 5, resume: true, msgs: []dcm.FeedMessage{hello(5, true), event(6)}, wantSeq: 6},
		{name: "resume from 0", resume: true, msgs: []dcm.FeedMessage{hello(0, true), event(1)}, wantSeq: 1},
		{name: "server restarted: snapshot behind the seq asked", since: 90, resume: true,
			msgs: []dcm.FeedMessage{hello(3, false), snapshot(3), event(4)}, wantSeq: 4},
		{name: "filtered feeds skip seqs", filtered: true, msgs: []dcm.FeedMessage{hello(5, false), snapshot(5), event(9), ping(12)}, wantSeq: 12},
		{name: "bye then nothing", msgs: []dcm.FeedMessage{hello(1, false), snapshot(1), {Type: dcm.FeedTypeBye, Seq: 1}}, wantSeq: 1},
		{name: "unknown types pass", msgs: []dcm.FeedMessage{hello(1, false), snapshot(1), {Type: "news", Seq: 0}}, wantSeq: 1},
		{name: "no hello", msgs: []dcm.FeedMessage{snapshot(1)}, wantErr: true},
		{name: "other protocol", msgs: []dcm.FeedMessage{{Type: dcm.FeedTypeHello, Hello: &dcm.FeedHello{Protocol: 2}}}, wantErr: true},
		{name: "resumed elsewhere", since: 5, resume: true, msgs: []dcm.FeedMessage{hello(4, true)}, wantErr: true},
		{name: "resumed unasked", msgs: []dcm.FeedMessage{hello(4, true)}, wantErr: true},
		{name: "no snapshot", msgs: []dcm.FeedMessage{hello(1, false), event(2)}, wantErr: true},
		{name: "snapshot seq mismatch", msgs: []dcm.FeedMessage{hello(1, false), {Type: dcm.FeedTypeSnapshot, Seq: 1, Snapshot: &dcm.Snapshot{Seq: 2}}}, wantErr: true},
		{name: "event repeated", msgs: []dcm.FeedMessage{hello(1, false), snapshot(1), event(2), event(2)}, wantErr: true},
		{name: "event backwards", msgs: []dcm.FeedMessage{hello(3, false), snapshot(3), event(2)}, wantErr: true},
		{name: "gap", msgs: []dcm.FeedMessage{hello(1, false), snapshot(1), event(3)}, wantErr: true},
		{name: "ping backwards", msgs: []dcm.FeedMessage{hello(1, false), snapshot(1), event(2), ping(1)}, wantErr: true},
		{name: "event seq differs from its message", msgs: []dcm.FeedMessage{hello(1, false), snapshot(1),
			{Type: dcm.FeedTypeEvent, Seq: 2, Event: &dcm.Event{Seq: 3}}}, wantErr: true},
		{name: "second hello", msgs: []dcm.FeedMessage{hello(1, false), snapshot(1), hello(1, false)}, wantErr: true},
		{name: "after bye", msgs: []dcm.FeedMessage{hello(1, false), snapshot(1), {Type: dcm.FeedTypeBye, Seq: 1}, ping(1)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Conn{asked: tt.since, resume: tt.resume, filtered: tt.filtered}
			var err error
			for i, m := range tt.msgs {
				err = c.check(m)
				if err != nil && i < len(tt.msgs)-1 {
					t.Fatalf("message %d (%s %d): %v", i, m.Type, m.Seq, err)
				}
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("last message: err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrProtocol) {
				t.Errorf("%v does not wrap ErrProtocol", err)
			}
			if !tt.wantErr && c.Seq() != tt.wantSeq {
				t.Errorf("Seq() = %d, want %d", c.Seq(), tt.wantSeq)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, 2 * time.Second
	tests := []struct {
		attempt int
		ceiling time.Duration
	}{
		{attempt: 0, ceiling: lo},
		{attempt: 1, ceiling: 2 * lo},
		{attempt: 4, ceiling: 16 * lo},
		{attempt: 5, ceiling: hi},
		{attempt: 200, ceiling: hi}, // no overflow into tiny or negative waits
	}
	for _, tt := range tests {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := backoff(lo, hi, tt.attempt)
			if d < tt.ceiling/2 || d > tt.ceiling {
				t.Fatalf("backoff(attempt %d) = %v, want within [%v, %v]", tt.attempt, d, tt.ceiling/2, tt.ceiling)
			}
			seen[d] = true
		}
		// Jitter: clients dropped together must not retry in lockstep.
		if len(seen) < 100 {
			t.Errorf("attempt %d: only %d distinct waits in 200", tt.attempt, len(seen))
		}
	}
}
