package haproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ConfigArgs are the arguments that check the configuration in dir
// (haproxy -c): haproxy.cfg, then the backends' directory.
func ConfigArgs(dir string) []string {
	return []string{"-c", "-f", filepath.Join(dir, ConfigName), "-f", filepath.Join(dir, BackendsDir)}
}

// Text is the whole configuration as HAProxy reads it: haproxy.cfg, then
// every backend's file. Pages and tests read it; the disk holds the parts.
func (f Files) Text() []byte {
	n := len(f.Config)
	for _, b := range f.Backends {
		n += len(b.Text)
	}
	out := make([]byte, 0, n)
	out = append(out, f.Config...)
	for _, b := range f.Backends {
		out = append(out, b.Text...)
	}
	return out
}

// stageBackends stages the shard files that differ from prev's (a file
// whose Text is prev's very slice is skipped without a look at its bytes),
// and returns the names of prev's files that f no longer has: they are
// removed before the new files are renamed into place, so that no moment
// has two files defining one HAProxy backend (a backend that moved to
// another shard's file). With prev unknown (no backends), every file is
// written and whatever else the directory holds is stale.
func stageBackends(st *staged, dir string, f, prev Files) (gone []string, err error) {
	if err := os.MkdirAll(filepath.Join(dir, BackendsDir), 0o755); err != nil {
		return nil, fmt.Errorf("write backends: %w", err)
	}
	write := func(b BackendFile) error {
		if !validShardName(b.Name) {
			return fmt.Errorf("write backends: shard name %q: want two hex digits", b.Name)
		}
		if err := st.add(filepath.Join(dir, filepath.FromSlash(BackendFileName(b.Name))), b.Text, 0o644); err != nil {
			return fmt.Errorf("write backend %s: %w", b.Name, err)
		}
		return nil
	}
	if prev.Backends == nil {
		for _, b := range f.Backends {
			if err := write(b); err != nil {
				return nil, err
			}
		}
		return staleBackends(dir, f.Backends)
	}
	i := 0
	for _, b := range f.Backends {
		for i < len(prev.Backends) && prev.Backends[i].Name < b.Name {
			gone = append(gone, prev.Backends[i].Name)
			i++
		}
		if i < len(prev.Backends) && prev.Backends[i].Name == b.Name {
			old := prev.Backends[i].Text
			i++
			if len(old) == len(b.Text) && (len(old) == 0 || &old[0] == &b.Text[0] || bytes.Equal(old, b.Text)) {
				continue
			}
		}
		if err := write(b); err != nil {
			return nil, err
		}
	}
	for ; i < len(prev.Backends); i++ {
		gone = append(gone, prev.Backends[i].Name)
	}
	return gone, nil
}

// staleBackends lists the backend files dir holds that keep does not.
func staleBackends(dir string, keep []BackendFile) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, BackendsDir))
	if err != nil {
		return nil, fmt.Errorf("list backends: %w", err)
	}
	var out []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".cfg")
		if !ok || e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if _, found := slices.BinarySearchFunc(keep, name, func(b BackendFile, n string) int { return strings.Compare(b.Name, n) }); !found {
			out = append(out, name)
		}
	}
	return out, nil
}

// removeBackends removes the named backend files.
func removeBackends(dir string, names []string) error {
	for _, name := range names {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(BackendFileName(name)))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove backend %s: %w", name, err)
		}
	}
	return nil
}

// readBackends reads the backend files of dir, sorted by name.
func readBackends(dir string) ([]BackendFile, error) {
	entries, err := os.ReadDir(filepath.Join(dir, BackendsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return []BackendFile{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list backends: %w", err)
	}
	out := make([]BackendFile, 0, len(entries))
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".cfg")
		if !ok || e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, BackendsDir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read backend %s: %w", name, err)
		}
		out = append(out, BackendFile{Name: name, Text: b})
	}
	slices.SortFunc(out, func(a, b BackendFile) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
