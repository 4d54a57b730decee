package static

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func TestServe(t *testing.T) {
	a, err := load(fstest.MapFS{
		"app.js":  {Data: []byte("import './feed.js';\n")},
		"feed.js": {Data: []byte("export const x = 1;\n")},
		"dcm.css": {Data: []byte("body{}\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, inm string
		code            int
		ctype, cache    string
		body            string
	}{
		{name: "hashed script", path: a.URL("app.js"), code: 200, ctype: "text/javascript; charset=utf-8",
			cache: "public, max-age=31536000, immutable", body: "import"},
		{name: "hashed module import", path: "/static/" + a.Hash() + "/feed.js", code: 200, ctype: "text/javascript; charset=utf-8", cache: "immutable"},
		{name: "stylesheet", path: a.URL("dcm.css"), code: 200, ctype: "text/css; charset=utf-8", body: "body{}"},
		{name: "unhashed", path: "/static/dcm.css", code: 200, ctype: "text/css; charset=utf-8", cache: "no-cache"},
		{name: "older build", path: "/static/000000000000/app.js", code: 200, cache: "no-cache"},
		{name: "revalidated", path: "/static/dcm.css", inm: a.files["dcm.css"].etag, code: 304},
		{name: "missing", path: a.URL("nope.js"), code: 404},
		{name: "no directory walk", path: "/static/" + a.Hash() + "/../static.go", code: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.inm != "" {
				req.Header.Set("If-None-Match", tt.inm)
			}
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("HTTP %d, want %d", rec.Code, tt.code)
			}
			if tt.ctype != "" && rec.Header().Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", rec.Header().Get("Content-Type"), tt.ctype)
			}
			if !strings.Contains(rec.Header().Get("Cache-Control"), tt.cache) {
				t.Errorf("Cache-Control %q, want %q", rec.Header().Get("Cache-Control"), tt.cache)
			}
			if !strings.Contains(rec.Body.String(), tt.body) {
				t.Errorf("body %q, want %q", rec.Body.String(), tt.body)
			}
		})
	}
}

func TestHashFollowsContent(t *testing.T) {
	a1, _ := load(fstest.MapFS{"app.js": {Data: []byte("a")}})
	a2, _ := load(fstest.MapFS{"app.js": {Data: []byte("b")}})
	if a1.Hash() == a2.Hash() {
		t.Fatal("different files, same hash")
	}
	if New().files["app.js"].data == nil || New().files["dcm.css"].data == nil {
		t.Fatal("the embedded web files lack app.js or dcm.css")
	}
}

// TestPrecompressed: x.br and x.gz are served as x to browsers that take
// them, with Vary and an ETag of their own; others get x itself.
func TestPrecompressed(t *testing.T) {
	a, err := load(fstest.MapFS{
		"dcm.wasm":    {Data: []byte("raw wasm")},
		"dcm.wasm.br": {Data: []byte("brotli")},
		"dcm.wasm.gz": {Data: []byte("gzip")},
		"README.md":   {Data: []byte("notes")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if a.Has("dcm.wasm.gz") || a.Has("README.md") || !a.Has("dcm.wasm") {
		t.Fatalf("files: %v", a.files)
	}
	tests := []struct {
		accept, wantEnc, wantBody string
	}{
		{"gzip, deflate, br, zstd", "br", "brotli"},
		{"gzip, deflate", "gzip", "gzip"},
		{"br;q=0, gzip", "gzip", "gzip"},
		{"", "", "raw wasm"},
		{"identity", "", "raw wasm"},
	}
	etags := map[string]bool{}
	for _, tt := range tests {
		req := httptest.NewRequest(http.MethodGet, a.URL("dcm.wasm"), nil)
		if tt.accept != "" {
			req.Header.Set("Accept-Encoding", tt.accept)
		}
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		h := rec.Header()
		if rec.Code != 200 || h.Get("Content-Encoding") != tt.wantEnc || rec.Body.String() != tt.wantBody {
			t.Errorf("Accept-Encoding %q: HTTP %d, Content-Encoding %q, body %q", tt.accept, rec.Code, h.Get("Content-Encoding"), rec.Body)
		}
		if h.Get("Content-Type") != "application/wasm" || h.Get("Vary") != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: Content-Type %q, Vary %q", tt.accept, h.Get("Content-Type"), h.Get("Vary"))
		}
		etags[h.Get("ETag")] = true
	}
	if len(etags) != 3 {
		t.Errorf("want one ETag per representation, got %v", etags)
	}
}
