// Package static serves what the browser downloads: the portal's scripts
// and stylesheet from web/, and the what-if planner's WebAssembly with its
// loader from dist/ (built by make wasm, not committed; without it the
// what-if page asks the server instead). Every file is served under a hash of all of them,
// /static/<hash>/<name>, cached for a year: a new build changes the hash,
// so no browser keeps a stale script, and the modules' relative imports
// stay within one build. /static/<name> serves the current file too, for
// links that cannot know the hash, revalidated every time.
package static

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/dcm-router/dcm/web"
)

// dist holds what make wasm builds: dcm.wasm, its precompressed
// dcm.wasm.gz and dcm.wasm.br, and the wasm_exec.js of the Go that built
// it (the two must match). Only its README is committed.
//
//go:embed dist
var dist embed.FS

// Names of the planner's files.
const (
	PlannerWasm   = "dcm.wasm"
	PlannerLoader = "wasm_exec.js"
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
	// Precompressed copies, served to browsers that accept them.
	encoded []encoding
}

type encoding struct {
	name string // a Content-Encoding token
	data []byte
}

// encodings are the precompressed copies looked for, best first.
var encodings = []struct{ name, ext string }{{"br", ".br"}, {"gzip", ".gz"}}

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
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic("static: " + err.Error())
	}
	a, err := load(web.Files, sub)
	if err != nil {
		// The files are compiled in: failing to read them is a broken build.
		panic("static: " + err.Error())
	}
	return a
}

// load reads the files of every fsys into one flat namespace; x.gz and
// x.br beside x are x's precompressed copies, and README.md files are
// notes for people.
func load(fsyss ...fs.FS) (*Assets, error) {
	a := &Assets{files: map[string]file{}}
	var names []string
	for _, fsys := range fsyss {
		err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || path.Base(name) == "README.md" || isEncoded(name) {
				return err
			}
			if _, dup := a.files[name]; dup {
				return fmt.Errorf("two files named %s", name)
			}
			data, err := fs.ReadFile(fsys, name)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			f := file{data: data, contentType: contentType(name), etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
			for _, enc := range encodings {
				if data, err := fs.ReadFile(fsys, name+enc.ext); err == nil {
					f.encoded = append(f.encoded, encoding{name: enc.name, data: data})
				}
			}
			a.files[name] = f
			names = append(names, name)
			return nil
		})
		if err != nil {
			return nil, err
		}
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

func isEncoded(name string) bool {
	for _, enc := range encodings {
		if strings.HasSuffix(name, enc.ext) {
			return true
		}
	}
	return false
}

// Has reports whether the build carries a file (the planner's are built
// apart, by make wasm).
func (a *Assets) Has(name string) bool {
	_, ok := a.files[name]
	return ok
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
	data, etag := f.data, f.etag
	if len(f.encoded) > 0 {
		h.Add("Vary", "Accept-Encoding")
		for _, enc := range f.encoded {
			if accepts(r.Header.Get("Accept-Encoding"), enc.name) {
				h.Set("Content-Encoding", enc.name)
				data, etag = enc.data, strings.TrimSuffix(f.etag, `"`)+"-"+enc.name+`"`
				break
			}
		}
	}
	h.Set("ETag", etag)
	if hashed && hash == a.hash {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		// An unhashed link, or a page of an older build: the current file,
		// checked again next time.
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
}

// accepts reports whether an Accept-Encoding header allows enc (q=0 refuses).
func accepts(header, enc string) bool {
	for _, part := range strings.Split(header, ",") {
		token, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(token), enc) {
			continue
		}
		q := strings.ReplaceAll(params, " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
