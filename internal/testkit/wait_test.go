package testkit

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	tests := []struct {
		name      string
		passAfter int // calls that fail before one passes; -1: none passes
		timeout   time.Duration
		wantCalls int // at least
		wantErr   string
	}{
		{name: "passes at once", passAfter: 0, timeout: time.Second, wantCalls: 1},
		{name: "passes on the fifth call", passAfter: 4, timeout: 5 * time.Second, wantCalls: 5},
		{name: "zero timeout still checks once", passAfter: 0, timeout: 0, wantCalls: 1},
		{name: "never passes", passAfter: -1, timeout: 50 * time.Millisecond, wantCalls: 3,
			wantErr: "not within 50ms: call "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			start := time.Now()
			err := Poll(tt.timeout, func() error {
				calls++
				if tt.passAfter >= 0 && calls > tt.passAfter {
					return nil
				}
				return fmt.Errorf("call %d", calls)
			})
			took := time.Since(start)
			if calls < tt.wantCalls {
				t.Errorf("%d calls, want at least %d", calls, tt.wantCalls)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Poll: %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Errorf("Poll: %v, want %q…", err, tt.wantErr)
			case tt.wantErr != "" && err.Error() != fmt.Sprintf("not within 50ms: call %d", calls):
				t.Errorf("Poll: %v, want the last call's error (%d calls)", err, calls)
			}
			if tt.wantErr != "" && (took < tt.timeout || took > tt.timeout+time.Second) {
				t.Errorf("gave up after %v, want about %v", took, tt.timeout)
			}
		})
	}
}

func TestPollKeepsTheError(t *testing.T) {
	sentinel := errors.New("sentinel")
	if err := Poll(time.Millisecond, func() error { return sentinel }); !errors.Is(err, sentinel) {
		t.Errorf("Poll: %v, want it to wrap check's error", err)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records instead of stopping.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Helper() {}
func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

func TestEventually(t *testing.T) {
	pass := &fatalRecorder{TB: t}
	n := 0
	Eventually(pass, "the third call", time.Second, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if pass.msg != "" {
		t.Errorf("a check that passes failed the test: %s", pass.msg)
	}

	fail := &fatalRecorder{TB: t}
	Eventually(fail, "the impossible", 10*time.Millisecond, func() error { return errors.New("still 2 servers") })
	if want := "the impossible: not within 10ms: still 2 servers"; fail.msg != want {
		t.Errorf("failed with %q, want %q", fail.msg, want)
	}
}
