// Package static serves what the browser downloads: the portal's scripts
// and stylesheet from web/ (and, once it is built, the what-if planner's
// WebAssembly). Every file is served under a hash of all of them,
// /static/<hash>/<name>, cached for a year: a new build changes the hash,
// so no browser keeps a stale script, and the modules' relative imports
// stay within one build. /static/<name> serves the current file too, for
// links that cannot know the hash, revalidated every time.
package static

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/dcm-router/dcm/web"
)

// Prefix is where the files are served.
const Prefix = "/static/"

// Assets are the files, read once at start.
type Assets struct {
	hash  string
	files map[string]file
}

type file struct {
	data        []byte
	contentType string
	etag        string
}

// contentType is set here rather than taken from the system's MIME tables,
// which differ between machines (a script served as text/plain is refused
// under nosniff).
func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".wasm":
		return "application/wasm"
	case ".svg":
		return "image/svg+xml"
	case ".json":
		return "application/json"
	}
	if ct := mime.TypeByExtension(path.Ext(name)); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

// New reads the files embedded in the binary.
func New() *Assets {
	a, err := load(web.Files)
	if err != nil {
		// The files are compiled in: failing to read them is a broken build.
		panic("static: " + err.Error())
	}
	return a
}

func load(fsys fs.FS) (*Assets, error) {
	a := &Assets{files: map[string]file{}}
	var names []string
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		a.files[name] = file{data: data, contentType: contentType(name), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		names = append(names, name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write([]byte(a.files[n].etag))
	}
	a.hash = hex.EncodeToString(h.Sum(nil))[:12]
	return a, nil
}

// Hash identifies this set of files.
func (a *Assets) Hash() string { return a.hash }

// URL is where the browser gets a file of this build.
func (a *Assets) URL(name string) string { return Prefix + a.hash + "/" + name }

// ServeHTTP serves /static/<hash>/<name> and /static/<name>.
func (a *Assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, Prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	hash, name, hashed := strings.Cut(rest, "/")
	if !hashed {
		name = rest
	}
	f, ok := a.files[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("ETag", f.etag)
	if hashed && hash == a.hash {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		// An unhashed link, or a page of an older build: the current file,
		// checked again next time.
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(f.data))
}
