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
