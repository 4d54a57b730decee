package engine

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// TestFileWriter: states queued while a write runs are coalesced into the
// latest; flush returns once everything queued before it is written; a
// failed write is reported and does not stop the writer; close writes
// what is queued.
func TestFileWriter(t *testing.T) {
	state := func(n int) dcm.State { return dcm.State{Pool: make([]string, n)} }
	release, started := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var written []int
	var failures []error
	w := newFileWriter(func(st dcm.State) error {
		if len(st.Pool) == 1 {
			close(started)
			<-release // the first write is slow
		}
		mu.Lock()
		defer mu.Unlock()
		written = append(written, len(st.Pool))
		if len(st.Pool) == 5 {
			return errors.New("disk full")
		}
		return nil
	}, func(err error) {
		mu.Lock()
		failures = append(failures, err)
		mu.Unlock()
	}, 0, nil)
	w.queue(state(1))
	<-started
	for n := 2; n <= 4; n++ {
		w.queue(state(n)) // while 1 is being written
	}
	close(release)
	w.flush()
	mu.Lock()
	if len(written) != 2 || written[0] != 1 || written[1] != 4 {
		t.Errorf("written %v, want 1, then 4 (2 and 3 coalesced away)", written)
	}
	mu.Unlock()
	w.queue(state(5))
	w.flush()
	w.queue(state(6))
	w.close()
	mu.Lock()
	defer mu.Unlock()
	if written[len(written)-1] != 6 {
		t.Errorf("written %v: close did not write the last state", written)
	}
	if len(failures) != 1 || failures[0].Error() != "disk full" {
		t.Errorf("failures %v, want the one of state 5", failures)
	}
	w.flush() // after close: returns at once
}

// TestFileWriterGap: with a gap between writes, the first write after a
// quiet spell goes at once, the states queued within the gap coalesce, and
// a flush (or close) does not wait for the gap.
func TestFileWriterGap(t *testing.T) {
	state := func(n int) dcm.State { return dcm.State{Pool: make([]string, n)} }
	wrote := make(chan int, 10)
	w := newFileWriter(func(st dcm.State) error {
		wrote <- len(st.Pool)
		return nil
	}, func(err error) { t.Error(err) }, time.Hour, nil)
	w.queue(state(1))
	if n := <-wrote; n != 1 { // an hour's gap would fail the test's timeout
		t.Fatalf("wrote %d first, want 1", n)
	}
	w.queue(state(2))
	w.queue(state(3))
	w.flush()
	if n := <-wrote; n != 3 {
		t.Errorf("wrote %d after the flush, want 3 (2 coalesced away)", n)
	}
	w.queue(state(4))
	w.close()
	if n := <-wrote; n != 4 {
		t.Errorf("wrote %d at close, want 4", n)
	}
	if len(wrote) != 0 {
		t.Errorf("%d writes more", len(wrote))
	}
}

// TestFileWriterSettles: once the gap has passed, a write still waits for
// the states to stop coming (no state queued for gap/4), then writes the
// latest. Scheduling on a busy machine may pause the stream longer than
// that, which allows a write: each write is checked against the queue
// times the test recorded, not against a clock of its own.
func TestFileWriterSettles(t *testing.T) {
	const gap = 400 * time.Millisecond
	quiet := gap / 4
	type write struct {
		n  int
		at time.Time
	}
	wrote := make(chan write, 100)
	w := newFileWriter(func(st dcm.State) error {
		wrote <- write{len(st.Pool), time.Now()}
		return nil
	}, func(err error) { t.Error(err) }, gap, nil)
	defer w.close()
	var queued []time.Time
	queue := func(n int) {
		w.queue(dcm.State{Pool: make([]string, n)})
		queued = append(queued, time.Now())
	}
	queue(1)
	if first := <-wrote; first.n != 1 {
		t.Fatalf("wrote %d first, want 1", first.n)
	}
	// A stream of states for 2.5 gaps, one every millisecond or so.
	n := 1
	for end := time.Now().Add(gap * 5 / 2); time.Now().Before(end); {
		n++
		queue(n)
		time.Sleep(time.Millisecond)
	}
	// Every write, of state k, came a pause of quiet after k was queued:
	// k was the latest state when the writer took it, so the stream did
	// pause (or the writer did not wait); the limit of 4 gaps past the
	// gap is beyond the stream.
	for {
		wr := <-wrote
		if since := wr.at.Sub(queued[wr.n-1]); since < quiet-time.Millisecond {
			t.Errorf("state %d of %d written %v after it was queued, within the stream", wr.n, n, since)
		}
		if wr.n == n {
			break
		}
	}
	w.flush()
	if len(wrote) != 0 {
		t.Errorf("%d writes more", len(wrote))
	}
}

// TestFileWriterWaitsWhileBusy: a write due after the gap waits while the
// engine is busy (a sync runs, the source has changes not taken), however
// long the states have stopped coming, and goes once it is not.
func TestFileWriterWaitsWhileBusy(t *testing.T) {
	const gap = time.Second // the limit, 4 gaps past the gap, is beyond the test
	var busy atomic.Bool
	busy.Store(true)
	wrote := make(chan int, 10)
	w := newFileWriter(func(st dcm.State) error {
		wrote <- len(st.Pool)
		return nil
	}, func(err error) { t.Error(err) }, gap, busy.Load)
	defer w.close()
	w.queue(dcm.State{Pool: make([]string, 1)})
	if n := <-wrote; n != 1 { // the first after a quiet spell: at once, busy or not
		t.Fatalf("wrote %d first, want 1", n)
	}
	w.queue(dcm.State{Pool: make([]string, 2)})
	select {
	case n := <-wrote:
		t.Fatalf("wrote %d while busy", n)
	case <-time.After(gap * 3 / 2): // past the gap and gap/4 of quiet
	}
	busy.Store(false)
	if n := <-wrote; n != 2 {
		t.Errorf("wrote %d once not busy, want 2", n)
	}
}
