package static

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"

	"github.com/dcm-router/dcm/web"
)

// moduleImport matches the static imports of an ES module: import … from
// './x.js', import './x.js', and export … from './x.js'.
var moduleImport = regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^'";]*?(?:from\s*)?['"]\./([^'"]+)['"]`)

// TestModulesServed: every module the portal's scripts import is served
// beside them, hashed, as JavaScript (a browser refuses a module of
// another type), so splitting a script into modules cannot leave one out.
func TestModulesServed(t *testing.T) {
	a := New()
	scripts, err := fs.Glob(web.Files, "*.js")
	if err != nil {
		t.Fatal(err)
	}
	imports := 0
	for _, name := range scripts {
		src, err := fs.ReadFile(web.Files, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range moduleImport.FindAllSubmatch(src, -1) {
			imports++
			dep := string(m[1])
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, a.URL(dep), nil))
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/javascript; charset=utf-8" {
				t.Errorf("%s imports %s: HTTP %d, Content-Type %q", name, dep, rec.Code, rec.Header().Get("Content-Type"))
			}
		}
	}
	if imports < 20 {
		t.Errorf("found only %d imports in %d scripts: is the pattern still right?", imports, len(scripts))
	}
}
