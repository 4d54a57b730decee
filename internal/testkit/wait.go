package testkit

import (
	"fmt"
	"testing"
	"time"
)

// maxPollInterval caps the pause between two checks: long enough that a
// check sending requests through HAProxy stays a light load, short enough
// that a wait ends soon after its condition holds.
const maxPollInterval = 20 * time.Millisecond

// Eventually calls check until it returns nil, and fails the test with
// check's last error when timeout passes first. A test waits so for the
// condition a sleep would stand for, never for a clock.
//
// check runs on the test's goroutine: it may fail the test itself when what
// it sees can never turn right.
func Eventually(tb testing.TB, what string, timeout time.Duration, check func() error) {
	tb.Helper()
	if err := Poll(timeout, check); err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

// Poll is Eventually for code that cannot fail a test there and then: a
// goroutine other than the test's, or a caller that adds to the message. It
// returns nil once check does, or check's last error once timeout has
// passed. check runs at least once, and once more at the deadline.
func Poll(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	// The first checks come quickly, since most conditions hold within
	// milliseconds; the later ones back off.
	pause := time.Millisecond
	for {
		err := check()
		if err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("not within %s: %w", timeout, err)
		}
		time.Sleep(min(pause, left))
		pause = min(2*pause, maxPollInterval)
	}
}
