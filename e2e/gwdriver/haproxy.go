package gwdriver

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Workers follows the HAProxy processes under dcm: its master (a child of
// dcm) and the master's workers. A reload starts a new worker, so every
// worker PID after the first is a reload HAProxy made, whoever asked.
type Workers struct {
	mu      sync.Mutex
	masters []int
	workers []int
	done    chan struct{}
}

// WatchHAProxy samples the process tree under dcmPid every interval until
// ctx ends.
func WatchHAProxy(ctx context.Context, dcmPid int, every time.Duration) *Workers {
	w := &Workers{done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			w.sample(dcmPid)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// Wait returns once the watch has stopped.
func (w *Workers) Wait() { <-w.done }

// Seen are the master and worker PIDs seen so far, in order of appearance.
func (w *Workers) Seen() (masters, workers []int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.masters), slices.Clone(w.workers)
}

func (w *Workers) sample(dcmPid int) {
	procs := haproxyProcs()
	w.mu.Lock()
	defer w.mu.Unlock()
	for pid, ppid := range procs {
		if ppid == dcmPid && !slices.Contains(w.masters, pid) {
			w.masters = append(w.masters, pid)
		}
	}
	for pid, ppid := range procs {
		if slices.Contains(w.masters, ppid) && !slices.Contains(w.workers, pid) {
			w.workers = append(w.workers, pid)
		}
	}
}

// haproxyProcs maps each haproxy process to its parent.
func haproxyProcs() map[int]int {
	out := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces, so split after ')'.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || s[open+1:end] != "haproxy" {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			out[pid] = ppid
		}
	}
	return out
}
