package haproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// Client allowlists (dcm.Route.Allowlist). Every backend, spares included,
// is rendered with the same two lines, reading a file of its own:
//
//	acl allowlist src -f acls/<proxy>.acl
//	tcp-request content reject if !allowlist
//
// A route without a list has dcm.AllowEveryone in its file. So the rule
// never changes, and a list that comes, changes or goes is one versioned
// ACL transaction (prepare acl, add acl @ver, commit acl @ver): atomic,
// with no moment where a list is switched on before it is filled. The
// other switch, a map keyed by be_name that says whether to look at the
// list, costs a map lookup per request and needs two transactions in
// order for every change; the file of everyone costs two entries per
// backend. tcp-request content reject closes the connection without an
// answer, as OpenShift's router does; in an HTTP backend it is evaluated
// for every request, in a TCP one (passthrough) for the connection, and
// src is the client's address in both (fe_https takes it from fe_tls's
// PROXY header).

// ACLsDir holds the allowlist files, one per HAProxy backend.
const ACLsDir = "acls"

// ACLFile is the allowlist file of an HAProxy backend, relative to the cfg;
// the runtime API names the ACL by the same string.
func ACLFile(proxy string) string { return ACLsDir + "/" + proxy + ".acl" }

// renderAllowlistRule is the rule every backend gets, after its servers.
func renderAllowlistRule(w *bytes.Buffer, proxy string) {
	fmt.Fprintf(w, "    acl allowlist src -f %s\n", ACLFile(proxy))
	w.WriteString("    tcp-request content reject if !allowlist\n")
}

// renderACL renders an allowlist file, checking every source again.
func renderACL(proxy string, sources []string) ([]byte, error) {
	if err := dcm.ValidateAllowlist("allowlist", sources); err != nil {
		return nil, fmt.Errorf("backend %q: %w", proxy, err)
	}
	var b bytes.Buffer
	for _, s := range sources {
		b.WriteString(s + "\n")
	}
	return b.Bytes(), nil
}

// renderedACL is a backend's allowlist file and the list it came from.
type renderedACL struct {
	sources []string
	text    []byte
}

// aclCache is what renderACLs rendered last: every file, by backend.
type aclCache struct {
	byProxy map[string]renderedACL
	files   map[string][]byte
}

// unchanged reports whether all renders to the files of c: the same
// backends with the same lists. It allocates nothing, so a rendering of
// thousands of backends where no list changed costs a walk.
func (c aclCache) unchanged(all []*dcm.Backend) bool {
	if c.files == nil || len(c.byProxy) != len(all) {
		return false
	}
	for _, b := range all {
		ra, ok := c.byProxy[b.ProxyName()]
		if !ok || !slices.Equal(ra.sources, b.Route.Sources()) {
			return false
		}
	}
	return true
}

// renderACLs renders the allowlist file of every HAProxy backend of all
// (backends and spares), reusing the text of lists that did not change.
func renderACLs(all []*dcm.Backend, cache aclCache) (aclCache, error) {
	if cache.unchanged(all) {
		return cache, nil
	}
	next := aclCache{byProxy: make(map[string]renderedACL, len(all)), files: make(map[string][]byte, len(all))}
	for _, b := range all {
		proxy, sources := b.ProxyName(), b.Route.Sources()
		ra, ok := cache.byProxy[proxy]
		if !ok || !slices.Equal(ra.sources, sources) {
			text, err := renderACL(proxy, sources)
			if err != nil {
				return aclCache{}, err
			}
			ra = renderedACL{sources: sources, text: text}
		}
		next.byProxy[proxy] = ra
		next.files[ACLFile(proxy)] = ra.text
	}
	return next, nil
}

// checkACLName keeps allowlist files inside acls/: the backend's name,
// already restricted to letters, digits and -_.:
func checkACLName(name string) error {
	proxy, ok := strings.CutPrefix(name, ACLsDir+"/")
	if ok {
		proxy, ok = strings.CutSuffix(proxy, ".acl")
	}
	if !ok || path.Clean(name) != name || validateBackendName(proxy) != nil {
		return fmt.Errorf("allowlist file name %q: want %s/<backend>.acl", name, ACLsDir)
	}
	return nil
}

// stageACLs stages the allowlist files that changed since prev.
func stageACLs(st *staged, dir string, f Files, prev Files) error {
	if len(f.ACLs) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(dir, ACLsDir), 0o755); err != nil {
		return fmt.Errorf("write allowlists: %w", err)
	}
	names := make([]string, 0, len(f.ACLs))
	for name := range f.ACLs {
		if err := checkACLName(name); err != nil {
			return fmt.Errorf("write allowlists: %w", err)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if old, ok := prev.ACLs[name]; ok && bytes.Equal(old, f.ACLs[name]) {
			continue
		}
		if err := st.add(filepath.Join(dir, filepath.FromSlash(name)), f.ACLs[name], 0o644); err != nil {
			return fmt.Errorf("write allowlist %s: %w", name, err)
		}
	}
	return nil
}

// removeStaleACLs removes the allowlist files of backends HAProxy no
// longer has.
func removeStaleACLs(dir string, keep map[string][]byte) error {
	entries, err := os.ReadDir(filepath.Join(dir, ACLsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list allowlists: %w", err)
	}
	for _, e := range entries {
		name := ACLsDir + "/" + e.Name()
		if _, ok := keep[name]; ok || e.IsDir() || !strings.HasSuffix(e.Name(), ".acl") {
			continue
		}
		if err := os.Remove(filepath.Join(dir, ACLsDir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale allowlist %s: %w", name, err)
		}
	}
	return nil
}

// readACLs reads the allowlist files of dir, keyed like Files.ACLs.
func readACLs(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(filepath.Join(dir, ACLsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list allowlists: %w", err)
	}
	out := make(map[string][]byte, len(entries))
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".acl") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ACLsDir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read allowlist %s: %w", e.Name(), err)
		}
		out[ACLsDir+"/"+e.Name()] = b
	}
	return out, nil
}

// aclFileFor validates an HAProxy backend's name and names its file.
func aclFileFor(proxy string) (string, error) {
	if err := validateBackendName(proxy); err != nil {
		return "", fmt.Errorf("allowlist: %w", err)
	}
	return ACLFile(proxy), nil
}

// PrepareACLCommand is `prepare acl <file>`; 2.6 answers it as prepare
// map ("New version created: <ver>").
func PrepareACLCommand(proxy string) (Command, error) {
	file, err := aclFileFor(proxy)
	if err != nil {
		return Command{}, err
	}
	return Command{text: "prepare acl " + file, kind: replyPrepareMap}, nil
}

// AddACLCommand is `add acl @<ver> <file> <source>`, the source checked
// to be canonical again (no space, no ';', nothing but an address or a
// network).
func AddACLCommand(version uint32, proxy, source string) (Command, error) {
	file, err := aclFileFor(proxy)
	if err != nil {
		return Command{}, err
	}
	if c, ok := dcm.CanonicalSource(source); !ok || c != source {
		return Command{}, fmt.Errorf("allowlist of %s: source %q is not an address or a network", proxy, source)
	}
	return Command{text: "add acl @" + strconv.FormatUint(uint64(version), 10) + " " + file + " " + source, kind: replyEmpty}, nil
}

// CommitACLCommand is `commit acl @<ver> <file>`.
func CommitACLCommand(version uint32, proxy string) (Command, error) {
	file, err := aclFileFor(proxy)
	if err != nil {
		return Command{}, err
	}
	return Command{text: "commit acl @" + strconv.FormatUint(uint64(version), 10) + " " + file, kind: replyEmpty}, nil
}

// ShowACLCommand is `show acl <file>`: the visible version of a list.
func ShowACLCommand(proxy string) (Command, error) {
	file, err := aclFileFor(proxy)
	if err != nil {
		return Command{}, err
	}
	return Command{text: "show acl " + file, kind: replyShowACL}, nil
}

// ParseShowACL reads show acl's "<ref> <pattern>" lines as file lines.
func ParseShowACL(reply string) (string, error) {
	var b strings.Builder
	for _, line := range strings.Split(reply, "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 || !strings.HasPrefix(f[0], "0x") {
			return "", fmt.Errorf("show acl: unexpected line %q", truncate(line, 200))
		}
		b.WriteString(f[1] + "\n")
	}
	return b.String(), nil
}
