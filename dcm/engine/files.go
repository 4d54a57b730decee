package engine

import (
	"sync"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// fileWriter writes the files of the states the engine applied, behind its
// syncs: HAProxy took the change at runtime, and a sync must not wait for
// the disk before it answers the next one (at 10,000 routes a change that
// reaches every backend rewrites 25 MB of files). States queued while a
// write runs are coalesced: only the latest is written, since files are
// rendered from a whole state. Every path that lets HAProxy read the files
// (a reload, a maxconn above the worker's, the config view) flushes first,
// so the files still equal the runtime state whenever they are read.
//
// While syncs keep coming, a write follows the one before it by gap at the
// soonest (a flush does not wait for it); the first write after a quiet
// spell goes at once. A full resync at 10,000 routes is a sync every 100
// ms or so, each touching most shards: a write after each cost some 35 ms
// of CPU, taken from the syncs on the same cores, and the files of a
// state the next sync replaces at once are no use to anyone. Once the gap
// has passed, a write still waits while the engine is busy (a sync runs,
// or the source has changes it has not taken: busy) and until no state was
// queued for gap/4, up to 4 gaps more: a write of the thousands of backends
// a resync changed, rendered while the engine worked through the resync's
// last slices, took a share of the CPU from them (at a load of 15, 650 ms
// beside the resync's last 300). A pause in the syncs alone did not do:
// on a loaded machine a resync's syncs paused 50 ms and more.
type fileWriter struct {
	write  func(dcm.State) error
	failed func(error) // called on the writer's goroutine
	gap    time.Duration
	busy   func() bool // nil: never

	mu   sync.Mutex
	cond *sync.Cond
	// pending is the latest state queued and not yet taken; queued counts
	// the states queued, done those written or coalesced away.
	pending      dcm.State
	has, closed  bool
	queued, done uint64
	flushing     int       // flushes waiting: the gap is not kept
	last         time.Time // when the last write ended
	lastQueued   time.Time // when the latest state was queued
	stopped      chan struct{}
}

func newFileWriter(write func(dcm.State) error, failed func(error), gap time.Duration, busy func() bool) *fileWriter {
	w := &fileWriter{write: write, failed: failed, gap: gap, busy: busy, stopped: make(chan struct{})}
	w.cond = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// queue hands st to the writer.
func (w *fileWriter) queue(st dcm.State) {
	w.mu.Lock()
	w.pending, w.has = st, true
	w.queued++
	w.lastQueued = time.Now()
	w.mu.Unlock()
	w.cond.Broadcast()
}

// flush waits until every state queued before it is on disk (or its write
// failed, which the failure callback has reported).
func (w *fileWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushing++
	defer func() { w.flushing-- }()
	w.cond.Broadcast() // a writer keeping the gap goes now
	for target := w.queued; w.done < target && !w.closed; {
		w.cond.Wait()
	}
}

// close writes what is queued and stops the writer.
func (w *fileWriter) close() {
	w.flush()
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cond.Broadcast()
	<-w.stopped
}

func (w *fileWriter) run() {
	defer close(w.stopped)
	w.mu.Lock()
	for {
		for !w.has && !w.closed {
			w.cond.Wait()
		}
		if !w.has {
			w.mu.Unlock()
			return
		}
		w.keepGap()
		st, upto := w.pending, w.queued
		w.pending, w.has = dcm.State{}, false
		w.mu.Unlock()
		err := w.write(st)
		if err != nil {
			w.failed(err)
		}
		w.mu.Lock()
		w.done, w.last = upto, time.Now()
		w.cond.Broadcast()
	}
}

// keepGap waits, mu held, until gap has passed since the last write, a
// flush waits or the writer closes; what is queued meanwhile coalesces.
func (w *fileWriter) keepGap() {
	wait := w.gap - time.Since(w.last)
	if wait <= 0 || w.flushing > 0 || w.closed {
		return
	}
	t := time.AfterFunc(wait, w.cond.Broadcast)
	for time.Since(w.last) < w.gap && w.flushing == 0 && !w.closed {
		w.cond.Wait()
	}
	t.Stop()
	w.settle(w.gap/4, time.Now().Add(4*w.gap))
}

// settle waits, mu held, until the engine is not busy and no state was
// queued for quiet, until limit, a flush waits or the writer closes. Busy
// is asked every quiet/5: it signals nothing when it ends.
func (w *fileWriter) settle(quiet time.Duration, limit time.Time) {
	for w.flushing == 0 && !w.closed {
		wait := quiet - time.Since(w.lastQueued)
		if wait <= 0 {
			if w.busy == nil || !w.busy() {
				return
			}
			wait = quiet / 5
		}
		wait = min(wait, time.Until(limit))
		if wait <= 0 {
			return
		}
		t := time.AfterFunc(wait, w.cond.Broadcast)
		w.cond.Wait()
		t.Stop()
	}
}

// FlushFiles waits until the files of every state applied so far are
// written (or their write failed, which an event reports): what a reader
// of the files needs. A change HAProxy already serves may belong to a sync
// still in flight, so that sync is waited for first. Before Run started
// there is nothing to wait for. Not for use within a sync (reload calls
// flushFiles).
func (e *Engine) FlushFiles() {
	e.syncing.Lock()
	//lint:ignore SA2001 the empty critical section waits for the sync in flight
	e.syncing.Unlock()
	e.flushFiles()
}

func (e *Engine) flushFiles() {
	e.mu.Lock()
	w := e.files
	e.mu.Unlock()
	if w != nil {
		w.flush()
	}
}
