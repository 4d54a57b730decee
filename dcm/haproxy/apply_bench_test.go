package haproxy

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// BenchmarkApply2000Flips is HAProxy's side of a fifth of a full resync at
// 10,000 routes × 10 servers: 2,000 backends' first server set to maint,
// then back to ready, one batch each, over the driver's admin socket. It
// reports the CPU time HAProxy's worker and this process (the driver and
// the reader of HAProxy's stderr) spent per batch too, which the load of a
// shared machine does not inflate as it does the wall time.
// go test -run '^$' -bench Apply2000Flips ./dcm/haproxy/
func BenchmarkApply2000Flips(b *testing.B) {
	st := bigState(10000, 10)
	d, _ := startDriver(b, st)
	ops := func(s dcm.AdminState) []dcm.Op {
		var ops []dcm.Op
		for n := 0; n < len(st.Backends); n += 5 {
			be := st.Backends[n]
			ops = append(ops, dcm.Op{Kind: dcm.OpSetState, Backend: be.Name, Server: be.Servers[0].Name, State: s})
		}
		return ops
	}
	maint, ready := ops(dcm.StateMaint), ops(dcm.StateReady)
	ctx := context.Background()
	info, err := d.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cpu0, self0 := processCPU(b, info.Pid), processCPU(b, os.Getpid())
	n := 0
	for b.Loop() {
		o := maint
		if n%2 == 1 {
			o = ready
		}
		n++
		if err := d.Apply(ctx, o, st); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU(b, info.Pid)-cpu0)/float64(n), "haproxy-cpu-ms/op")
	b.ReportMetric(float64(processCPU(b, os.Getpid())-self0)/float64(n), "dcm-cpu-ms/op")
}

// processCPU is the user and system time of process pid in ms.
func processCPU(tb testing.TB, pid int) int64 {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// Fields 14 and 15 of proc(5), utime and stime in clock ticks (USER_HZ 100).
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("%s: %q", raw, f[11:13])
	}
	return (ut + st) * 10
}
