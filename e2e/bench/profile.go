package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
)

// profiled runs a phase of the scale run under the CPU profiler when
// DCM_BENCH_PROFILE names a directory: <dir>/<routes>-<phase>.pprof, so a
// figure that misses its goal can be explained from the same run.
func profiled(t *testing.T, routes int, phase string, run func()) {
	dir := os.Getenv("DCM_BENCH_PROFILE")
	if dir == "" {
		run()
		return
	}
	path := filepath.Join(dir, fmt.Sprintf("%d-%s.pprof", routes, phase))
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("cpu profile: %v", err)
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatalf("cpu profile %s: %v", path, err)
	}
	defer pprof.StopCPUProfile()
	run()
}
