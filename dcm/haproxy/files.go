package haproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// StagingDir is where Validate writes a candidate, inside the work directory.
const StagingDir = ".staging"

// WriteFiles writes f into dir so that a reload or a crash at any moment
// finds a consistent set: every changed file is first written in full to a
// temporary name, and only when all of them are written are they renamed
// into place — certificates, the crt-list, maps, then the backends' files
// and the cfg that read them (the backends' files that f no longer has are
// removed just before). A write that fails (a full disk) leaves the
// directory as it was, never new maps beside an old cfg. Files whose bytes
// equal prev (what the directory already holds; zero Files when unknown)
// are not rewritten. Map files and certificates that f no longer has are
// removed afterwards.
//
// There is no fsync: the files must survive a reload, a crash of HAProxy or
// of dcm, all of which read the page cache; after a crash of the machine
// dcm starts again and renders everything from Kubernetes. An fsync per
// endpoint change would cost more than the change itself.
func WriteFiles(dir string, f Files, prev Files) (err error) {
	if len(f.Config) == 0 {
		return errors.New("write haproxy files: empty configuration")
	}
	if err := os.MkdirAll(filepath.Join(dir, MapsDir), 0o755); err != nil {
		return fmt.Errorf("write haproxy files: %w", err)
	}
	names := make([]string, 0, len(f.Maps))
	for name := range f.Maps {
		if err := checkMapName(name); err != nil {
			return fmt.Errorf("write haproxy files: %w", err)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	var st staged
	defer func() {
		if err != nil {
			st.discard()
		}
	}()
	// Certificates before the crt-list that names them, both before the cfg.
	if err := stageCerts(&st, dir, f, prev); err != nil {
		return err
	}
	if err := stageCAs(&st, dir, f, prev); err != nil {
		return err
	}
	for _, name := range names {
		if old, ok := prev.Maps[name]; ok && bytes.Equal(old, f.Maps[name]) {
			continue
		}
		if err := st.add(filepath.Join(dir, filepath.FromSlash(name)), f.Maps[name], 0o644); err != nil {
			return fmt.Errorf("write map %s: %w", name, err)
		}
	}
	if len(prev.Config) == 0 { // a directory dcm has not written yet: the cfg loads the script
		if err := st.add(filepath.Join(dir, HeadersLuaName), HeadersLua(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", HeadersLuaName, err)
		}
		if err := st.add(filepath.Join(dir, RewriteLuaName), RewriteLua(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", RewriteLuaName, err)
		}
		if err := st.add(filepath.Join(dir, AllowlistLuaName), AllowlistLua(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", AllowlistLuaName, err)
		}
		if err := st.add(filepath.Join(dir, GatewayLuaName), GatewayLua(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", GatewayLuaName, err)
		}
	}
	gone, err := stageBackends(&st, dir, f, prev)
	if err != nil {
		return err
	}
	if !bytes.Equal(prev.Config, f.Config) {
		if err := st.add(filepath.Join(dir, ConfigName), f.Config, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", ConfigName, err)
		}
	}
	if err := removeBackends(dir, gone); err != nil {
		return err
	}
	if err := st.commit(); err != nil {
		return fmt.Errorf("write haproxy files: %w", err)
	}
	if f.CrtList != nil || len(f.Certs) > 0 || len(f.GatewayLists) > 0 {
		if err := removeStaleCerts(dir, f.Certs); err != nil {
			return err
		}
	}
	if err := removeStaleCAs(dir, f.CAs); err != nil {
		return err
	}
	return removeStaleMaps(dir, f.Maps)
}

// stageCAs stages the destination CA files (public: mode 0644).
func stageCAs(st *staged, dir string, f Files, prev Files) error {
	if len(f.CAs) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(dir, CAsDir), 0o755); err != nil {
		return fmt.Errorf("write CA files: %w", err)
	}
	names := make([]string, 0, len(f.CAs))
	for name := range f.CAs {
		if path.Clean(name) != name || !strings.HasPrefix(name, CAsDir+"/") || strings.Count(name, "/") != 1 ||
			!strings.HasSuffix(name, ".pem") || !safePath(name) {
			return fmt.Errorf("write CA files: file name %q: want %s/<version>.pem", name, CAsDir)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if old, ok := prev.CAs[name]; ok && bytes.Equal(old, f.CAs[name]) {
			continue
		}
		if err := st.add(filepath.Join(dir, filepath.FromSlash(name)), f.CAs[name], 0o644); err != nil {
			return fmt.Errorf("write CA file %s: %w", name, err)
		}
	}
	return nil
}

// removeStaleCAs removes the CA files no server uses any more.
func removeStaleCAs(dir string, keep map[string][]byte) error {
	entries, err := os.ReadDir(filepath.Join(dir, CAsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list CA files: %w", err)
	}
	for _, e := range entries {
		name := CAsDir + "/" + e.Name()
		if _, ok := keep[name]; ok || e.IsDir() || !strings.HasSuffix(e.Name(), ".pem") {
			continue
		}
		if err := os.Remove(filepath.Join(dir, CAsDir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale CA file %s: %w", name, err)
		}
	}
	return nil
}

// staged is a set of files written to temporary names, to be renamed into
// place together.
type staged struct {
	files []stagedFile
}

type stagedFile struct{ tmp, path string }

// add writes data in full to a temporary file beside path.
func (s *staged) add(path string, data []byte, mode os.FileMode) error {
	tmp, err := writeTemp(path, data, mode)
	if err != nil {
		return err
	}
	s.files = append(s.files, stagedFile{tmp: tmp, path: path})
	return nil
}

// commit renames the files into place in the order they were added. A
// rename needs no space, so once every file is written this goes through.
func (s *staged) commit() error {
	for i, f := range s.files {
		if err := os.Rename(f.tmp, f.path); err != nil {
			s.files = s.files[i:]
			return err
		}
	}
	s.files = nil
	return nil
}

// discard removes the temporary files not renamed.
func (s *staged) discard() {
	for _, f := range s.files {
		_ = os.Remove(f.tmp)
	}
	s.files = nil
}

// stageCerts stages the certificate files (mode 0600: they hold private
// keys) and the crt-list.
func stageCerts(st *staged, dir string, f Files, prev Files) error {
	if f.CrtList == nil && len(f.Certs) == 0 && len(f.GatewayLists) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(dir, CertsDir), 0o700); err != nil {
		return fmt.Errorf("write certificates: %w", err)
	}
	names := make([]string, 0, len(f.Certs))
	for name := range f.Certs {
		if err := checkCertName(name); err != nil {
			return fmt.Errorf("write certificates: %w", err)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if old, ok := prev.Certs[name]; ok && bytes.Equal(old, f.Certs[name]) {
			continue
		}
		if err := st.add(filepath.Join(dir, filepath.FromSlash(name)), f.Certs[name], 0o600); err != nil {
			// The path only: the error must not carry the key.
			return fmt.Errorf("write certificate %s: %w", name, err)
		}
	}
	_, https := f.Certs[DefaultCertName] // the HTTPS frontend's, which reads the crt-list
	if (f.CrtList != nil || https) && (prev.CrtList == nil || !bytes.Equal(prev.CrtList, f.CrtList)) {
		if err := st.add(filepath.Join(dir, CrtListName), f.CrtList, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", CrtListName, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.GatewayLists)) {
		if old, ok := prev.GatewayLists[name]; ok && bytes.Equal(old, f.GatewayLists[name]) {
			continue
		}
		if path.Clean(name) != name || !strings.HasPrefix(name, CertsDir+"/gw_") || !strings.HasSuffix(name, ".list") || !safePath(name) {
			return fmt.Errorf("gateway crt-list name %q", name)
		}
		if err := st.add(filepath.Join(dir, filepath.FromSlash(name)), f.GatewayLists[name], 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// removeStaleCerts removes the certificates of hosts that left.
func removeStaleCerts(dir string, keep map[string][]byte) error {
	entries, err := os.ReadDir(filepath.Join(dir, CertsDir))
	if err != nil {
		return fmt.Errorf("list certificates: %w", err)
	}
	for _, e := range entries {
		name := CertsDir + "/" + e.Name()
		if _, ok := keep[name]; ok || e.IsDir() || !strings.HasSuffix(e.Name(), ".pem") {
			continue
		}
		if err := os.Remove(filepath.Join(dir, CertsDir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale certificate %s: %w", name, err)
		}
	}
	return nil
}

// checkCertName keeps certificate files inside certs/, or the default one.
func checkCertName(name string) error {
	if name == DefaultCertName {
		return nil
	}
	if path.Clean(name) != name || !strings.HasPrefix(name, CertsDir+"/") || strings.Count(name, "/") != 1 ||
		!strings.HasSuffix(name, ".pem") || !safePath(name) {
		return fmt.Errorf("certificate file name %q: want %s/<host>.pem", name, CertsDir)
	}
	return nil
}

// checkMapName keeps map files inside maps/, whatever a caller puts in Files.
func checkMapName(name string) error {
	if path.Clean(name) != name || !strings.HasPrefix(name, MapsDir+"/") || strings.Count(name, "/") != 1 ||
		!strings.HasSuffix(name, ".map") || !safePath(name) {
		return fmt.Errorf("map file name %q: want %s/<name>.map", name, MapsDir)
	}
	return nil
}

func removeStaleMaps(dir string, keep map[string][]byte) error {
	entries, err := os.ReadDir(filepath.Join(dir, MapsDir))
	if err != nil {
		return fmt.Errorf("list maps: %w", err)
	}
	for _, e := range entries {
		name := MapsDir + "/" + e.Name()
		if _, ok := keep[name]; ok || e.IsDir() || !strings.HasSuffix(e.Name(), ".map") {
			continue
		}
		if err := os.Remove(filepath.Join(dir, MapsDir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale map %s: %w", name, err)
		}
	}
	return nil
}

func writeAtomicMode(path string, data []byte, mode os.FileMode) error {
	tmp, err := writeTemp(path, data, mode)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// writeTemp writes data in full to a new temporary file beside path and
// returns its name; on error nothing is left behind.
func writeTemp(path string, data []byte, mode os.FileMode) (string, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return "", err
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return "", err
	}
	if err := tmp.Chmod(mode); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	done = true
	return tmp.Name(), nil
}

// ConfigError is HAProxy refusing a configuration; Alerts are its own words.
type ConfigError struct {
	Alerts []string
	Output string // the whole output of haproxy -c
}

func (e *ConfigError) Error() string {
	if len(e.Alerts) == 0 {
		return "haproxy rejected the configuration: " + truncate(strings.TrimSpace(e.Output), 2000)
	}
	return "haproxy rejected the configuration: " + strings.Join(e.Alerts, "; ")
}

// Validate checks f with `<bin> -c` in a fresh staging directory under dir,
// with the very bytes WriteFiles would write (maps resolve relative to the
// cfg, so the location does not matter). A rejection is a *ConfigError.
func Validate(ctx context.Context, bin, dir string, f Files) error {
	staging := filepath.Join(dir, StagingDir)
	if err := os.RemoveAll(staging); err != nil {
		return fmt.Errorf("validate: clear staging: %w", err)
	}
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	if err := WriteFiles(staging, f, Files{}); err != nil {
		return fmt.Errorf("validate: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, ConfigArgs(staging)...).CombinedOutput()
	if err == nil {
		return nil
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || ctx.Err() != nil {
		return fmt.Errorf("validate: run %s -c: %w", bin, err)
	}
	return &ConfigError{Alerts: alertLines(out), Output: string(out)}
}

// alertLines keeps HAProxy's [ALERT] messages without their "(pid) : config :" preamble.
func alertLines(out []byte) []string {
	var alerts []string
	for _, line := range bytes.Split(out, []byte("\n")) {
		s := strings.TrimSpace(string(line))
		if !strings.HasPrefix(s, "[ALERT]") {
			continue
		}
		s = strings.TrimSpace(strings.TrimPrefix(s, "[ALERT]"))
		if strings.HasPrefix(s, "(") {
			if _, rest, ok := strings.Cut(s, ") : "); ok {
				s = rest
			}
		}
		s = strings.TrimPrefix(s, "config : ")
		// "Error(s) found" and "Fatal errors found" repeat what the lines above say.
		if strings.HasPrefix(s, "Error(s) found in configuration file") || strings.HasPrefix(s, "Fatal errors found in configuration") {
			continue
		}
		alerts = append(alerts, s)
	}
	return alerts
}

// ReadFiles reads what WriteFiles wrote in dir.
func ReadFiles(dir string) (Files, error) {
	cfg, err := os.ReadFile(filepath.Join(dir, ConfigName))
	if err != nil {
		return Files{}, fmt.Errorf("read %s: %w", ConfigName, err)
	}
	backends, err := readBackends(dir)
	if err != nil {
		return Files{}, err
	}
	f := Files{Config: cfg, Backends: backends, Maps: map[string][]byte{}}
	entries, err := os.ReadDir(filepath.Join(dir, MapsDir))
	if err != nil {
		return Files{}, fmt.Errorf("list maps: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".map") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, MapsDir, e.Name()))
		if err != nil {
			return Files{}, fmt.Errorf("read map %s: %w", e.Name(), err)
		}
		f.Maps[MapsDir+"/"+e.Name()] = b
	}
	// The crt-list, not the certificates: what ReadFiles returns is shown.
	switch b, err := os.ReadFile(filepath.Join(dir, CrtListName)); {
	case err == nil:
		f.CrtList = b
	case !errors.Is(err, fs.ErrNotExist):
		return Files{}, fmt.Errorf("read %s: %w", CrtListName, err)
	}
	lists, err := filepath.Glob(filepath.Join(dir, CertsDir, "gw_*.list"))
	if err != nil {
		return Files{}, fmt.Errorf("list gateway crt-lists: %w", err)
	}
	for _, p := range lists {
		b, err := os.ReadFile(p)
		if err != nil {
			return Files{}, fmt.Errorf("read %s: %w", p, err)
		}
		if f.GatewayLists == nil {
			f.GatewayLists = map[string][]byte{}
		}
		f.GatewayLists[CertsDir+"/"+filepath.Base(p)] = b
	}
	return f, nil
}
