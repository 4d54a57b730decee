package engine

import (
	"testing"
	"time"
)

func TestNextRetryDelay(t *testing.T) {
	tests := []struct {
		name        string
		prev, first time.Duration
		want        time.Duration
	}{
		{"first failure waits the first delay", 0, 20 * time.Millisecond, 20 * time.Millisecond},
		{"second failure doubles", 20 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond},
		{"third failure doubles again", 40 * time.Millisecond, 20 * time.Millisecond, 80 * time.Millisecond},
		{"doubling stops at a minute", 40 * time.Second, time.Second, time.Minute},
		{"capped stays capped", time.Minute, time.Second, time.Minute},
		{"a first delay over a minute is capped too", 0, 5 * time.Minute, time.Minute},
		{"a first delay raised since is honoured", 10 * time.Millisecond, time.Second, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nextRetryDelay(tt.prev, tt.first); got != tt.want {
				t.Errorf("nextRetryDelay(%v, %v) = %v, want %v", tt.prev, tt.first, got, tt.want)
			}
		})
	}
}
