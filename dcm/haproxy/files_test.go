package haproxy

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWriteFilesOnFullDisk: on a file system with room for the new map but
// not the new cfg, WriteFiles fails with ENOSPC and leaves the old set
// whole — not the new map beside the old cfg — and no temporary file; with
// room again it writes the new set.
func TestWriteFilesOnFullDisk(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill up (needs root, as CI has): %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	old := Files{Config: []byte("global\n"), Maps: map[string][]byte{"maps/host.map": []byte("a.example be_a\n")}}
	if err := WriteFiles(dir, old, Files{}); err != nil {
		t.Fatal(err)
	}
	next := Files{Config: bytes.Repeat([]byte("# a large cfg\n"), 8<<10), // 112 KiB
		Maps: map[string][]byte{"maps/host.map": []byte("a.example be_a\nb.example be_b\n")}}

	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	// Room for the map, not for the cfg.
	fi, _ := f.Stat()
	if err := f.Truncate(fi.Size() - 16<<10); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	err = WriteFiles(dir, next, old)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WriteFiles on a full disk: %v, want ENOSPC", err)
	}
	got, err := ReadFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Config, old.Config) || !bytes.Equal(got.Maps["maps/host.map"], old.Maps["maps/host.map"]) {
		t.Errorf("after a failed write the directory holds cfg %d bytes and map %q, want the old set", len(got.Config), got.Maps["maps/host.map"])
	}
	for _, sub := range []string{".", MapsDir} {
		ents, _ := os.ReadDir(filepath.Join(dir, sub))
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp") {
				t.Errorf("temporary file %s/%s left behind", sub, e.Name())
			}
		}
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(dir, next, Files{}); err != nil {
		t.Fatalf("with room again: %v", err)
	}
	if got, _ := ReadFiles(dir); !bytes.Equal(got.Config, next.Config) || !bytes.Equal(got.Maps["maps/host.map"], next.Maps["maps/host.map"]) {
		t.Error("with room again the new set is not on disk")
	}
}
