package views

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestOpTextIsOpString: the pages read every op kind of dcm's source (a new
// one included) as dcm.Op.String, which the logs use, does: bare, with its
// plain fields, and with a certificate and an upstream.
func TestOpTextIsOpString(t *testing.T) {
	kinds := opKinds(t)
	for _, k := range kinds {
		plain := dcm.Op{Kind: k, Backend: "be_http:demo:web", Server: "web-1_http", Addr: "fd00::1", Port: 8080,
			Weight: 3, State: dcm.StateMaint, Map: dcm.MapSNI, Set: []dcm.MapEntry{{Key: "a"}}}
		full := plain
		full.Cert = &dcm.Cert{Host: "web.demo.localhost", Secret: "demo/web", Version: "0123456789abcdefgh"}
		full.Upstream = &dcm.UpstreamTLS{CA: "route:demo/web", Version: "ébcdefghijklmnop", ServerName: "web.demo.svc"}
		for _, op := range []dcm.Op{{Kind: k}, plain, full} {
			if got, want := OpText(op), op.String(); got != want {
				t.Errorf("%+v reads %q on a page, %q in the log", op, got, want)
			}
		}
	}
	if !slices.Contains(kinds, dcm.OpAddServer) || !slices.Contains(kinds, dcm.OpCADel) {
		t.Errorf("the op kinds read from dcm's source lack some: %v", kinds)
	}
}

// opKinds reads the constants of type OpKind from dcm's source.
func opKinds(t *testing.T) []dcm.OpKind {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "dcm", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []dcm.OpKind
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "OpKind" {
				return false
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, dcm.OpKind(s))
				}
			}
			return false
		})
	}
	return out
}

// TestOpWordsParse: every line of OpWords names fields dcm.Op has.
func TestOpWordsParse(t *testing.T) {
	lines := OpLines()
	if last := lines[len(lines)-1]; len(last.Kinds) > 0 || last.When != "" {
		t.Errorf("the last line of OpWords must read any op: %+v", last)
	}
	for _, bad := range []string{"{nope}", "{cert}", "{port#}", "{addr:x}", "{addr"} {
		if _, err := parseOpText(bad); err == nil {
			t.Errorf("%q parses", bad)
		}
	}
}
