package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's CPU times; 100 on
// every Linux architecture Go runs on.
const clockTick = 100

// procStat is what the benchmark reads from /proc/<pid>/stat.
type procStat struct {
	pid, ppid int
	// start is the start time in clock ticks since boot: the newest child of
	// the master is its current worker.
	start uint64
	// cpu is utime+stime, ccpu cutime+cstime (children waited for: the
	// master's exited old workers) in clock ticks.
	cpu, ccpu uint64
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, fmt.Errorf("read stat of %d: %w", pid, err)
	}
	return parseStat(string(b))
}

// parseStat reads a /proc/<pid>/stat line. The command name (field 2) may
// hold spaces and parentheses, so fields are counted after its last ')'.
func parseStat(line string) (procStat, error) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 1 || end < open {
		return procStat{}, fmt.Errorf("stat %q: no command name", line)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return procStat{}, fmt.Errorf("stat pid: %w", err)
	}
	f := strings.Fields(line[end+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("stat of %d: %d fields", pid, len(f))
	}
	num := func(field int) (uint64, error) { return strconv.ParseUint(f[field-3], 10, 64) }
	var vals [6]uint64
	for i, field := range []int{4, 14, 15, 16, 17, 22} { // ppid utime stime cutime cstime starttime
		if vals[i], err = num(field); err != nil {
			return procStat{}, fmt.Errorf("stat of %d field %d: %w", pid, field, err)
		}
	}
	return procStat{pid: pid, ppid: int(vals[0]), cpu: vals[1] + vals[2], ccpu: vals[3] + vals[4], start: vals[5]}, nil
}

// children lists the pids whose parent is ppid, by scanning /proc (which
// needs no CONFIG_PROC_CHILDREN).
func children(ppid int) []procStat {
	ents, _ := os.ReadDir("/proc")
	var out []procStat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.ppid != ppid { // a process gone meanwhile is no child
			continue
		}
		out = append(out, st)
	}
	return out
}

// memKB reads the proportional (Pss) and resident (Rss) set sizes of a
// process. Pss splits pages shared by the master and its forked workers
// among them, so the sum over all of them is what HAProxy really holds.
func memKB(pid int) (pss, rss int64, err error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
	if err != nil {
		return 0, 0, fmt.Errorf("smaps_rollup of %d: %w", pid, err)
	}
	return parseRollup(string(b))
}

func parseRollup(text string) (pss, rss int64, err error) {
	for line := range strings.SplitSeq(text, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok || (key != "Pss" && key != "Rss") {
			continue
		}
		kb, perr := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		if perr != nil {
			return 0, 0, fmt.Errorf("smaps_rollup %s: %w", key, perr)
		}
		if key == "Pss" {
			pss = kb
		} else {
			rss = kb
		}
	}
	if pss == 0 || rss == 0 {
		return 0, 0, fmt.Errorf("smaps_rollup: no Pss or Rss")
	}
	return pss, rss, nil
}

// haproxySample is HAProxy's processes at one moment.
type haproxySample struct {
	pssKB, rssKB int64 // master + every worker, old ones included
	oldWorkers   int
	cpuTicks     uint64 // master + live workers + exited workers the master reaped
}

// sampleHAProxy reads the master and its children. The current worker is
// the newest child; every other child is an old worker still finishing
// connections from before a reload.
func sampleHAProxy(master int) (haproxySample, error) {
	ms, err := readStat(master)
	if err != nil {
		return haproxySample{}, err
	}
	var s haproxySample
	s.cpuTicks = ms.cpu + ms.ccpu
	pss, rss, err := memKB(master)
	if err != nil {
		return haproxySample{}, err
	}
	s.pssKB, s.rssKB = pss, rss
	kids := children(master)
	for _, k := range kids {
		pss, rss, err := memKB(k.pid)
		if err != nil {
			continue // exited between the scan and the read
		}
		s.pssKB += pss
		s.rssKB += rss
		s.cpuTicks += k.cpu
	}
	s.oldWorkers = max(len(kids)-1, 0)
	return s, nil
}
