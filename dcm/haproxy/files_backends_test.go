package haproxy

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestWriteFilesBackends: a write after another rewrites the backend files
// that changed only (a file of the same Text slice is not even compared),
// removes those that left, and a write with the directory unknown writes
// every file and removes the ones it does not name.
func TestWriteFilesBackends(t *testing.T) {
	dir := t.TempDir()
	text := func(s string) []byte { return []byte("global\n    default-path parent\n\nbackend " + s + "\n") }
	a, b, c := text("be_a"), text("be_b"), text("be_c")
	first := Files{Config: []byte("cfg\n"), Backends: []BackendFile{{"0a", a}, {"0b", b}, {"0c", c}}}
	mustf(t, os.MkdirAll(filepath.Join(dir, BackendsDir), 0o755), "mkdir")
	mustf(t, os.WriteFile(filepath.Join(dir, BackendFileName("ff")), []byte("old"), 0o644), "a stale file")
	mustf(t, WriteFiles(dir, first, Files{}), "first write")
	inode := func(name string) uint64 {
		fi, err := os.Stat(filepath.Join(dir, BackendFileName(name)))
		if err != nil {
			return 0
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	names := func() []string {
		f, err := ReadFiles(dir)
		mustf(t, err, "read")
		var out []string
		for _, b := range f.Backends {
			out = append(out, b.Name)
		}
		return out
	}
	if got := names(); !slices.Equal(got, []string{"0a", "0b", "0c"}) {
		t.Fatalf("after a first write: %v, want 0a 0b 0c (the stale file gone)", got)
	}
	ia, ic := inode("0a"), inode("0c")

	second := Files{Config: first.Config, Backends: []BackendFile{{"0a", a}, {"0c", text("be_c2")}, {"0d", text("be_d")}}}
	mustf(t, WriteFiles(dir, second, first), "second write")
	if got := names(); !slices.Equal(got, []string{"0a", "0c", "0d"}) {
		t.Fatalf("after the second write: %v, want 0a 0c 0d", got)
	}
	if inode("0a") != ia {
		t.Error("be_a, unchanged, was written again")
	}
	if inode("0c") == ic {
		t.Error("be_c, changed, was not written again")
	}
	f, err := ReadFiles(dir)
	mustf(t, err, "read")
	if got, want := string(f.Text()), "cfg\n"+string(a)+string(text("be_c2"))+string(text("be_d")); got != want {
		t.Errorf("the whole configuration:\n%s\nwant:\n%s", got, want)
	}
}
