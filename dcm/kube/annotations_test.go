package kube

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dcm-router/dcm/dcm"
)

// badReason is the reason a value of each type gets when a valid value is
// followed by a newline and a semicolon.
var badReason = map[ValueType]string{
	ValueBool:          dcm.RejectInvalidValue,
	ValueInt:           dcm.RejectInvalidValue,
	ValueEnum:          dcm.RejectInvalidValue,
	ValueWeights:       dcm.RejectInvalidValue,
	ValueSecretName:    dcm.RejectInvalidName,
	ValueHost:          dcm.RejectInvalidHost,
	ValueWorkload:      dcm.RejectInvalidName,
	ValueSources:       dcm.RejectInvalidValue,
	ValueSourceRanges:  dcm.RejectInvalidValue,
	ValueCount:         dcm.RejectInvalidValue,
	ValueTimeout:       dcm.RejectInvalidValue,
	ValueHSTS:          dcm.RejectInvalidValue,
	ValueHeaders:       dcm.RejectInvalidValue,
	ValueRewriteTarget: dcm.RejectInvalidValue,
	ValueMaxConn:       dcm.RejectInvalidValue,
	ValueCookieName:    dcm.RejectInvalidValue,
}

// TestAnnotationTable: every row parses its default (or, without one, its
// example) and refuses a bad value with its type's reason, on its field;
// a row dcm does not honour refuses every value as unsupported.
func TestAnnotationTable(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range Annotations() {
		t.Run(a.Name, func(t *testing.T) {
			if seen[a.Name] {
				t.Fatal("declared twice")
			}
			seen[a.Name] = true
			if len(a.Kinds) == 0 || a.Doc == "" || strings.Contains(a.Doc, "\n") {
				t.Errorf("kinds %v, doc %q: want kinds and one line of doc", a.Kinds, a.Doc)
			}
			refused := func(v, reason string) {
				t.Helper()
				var ie *dcm.InvalidError
				if err := a.Check(v); !errors.As(err, &ie) || ie.Reason != reason || ie.Field != a.Field() || ie.Value != v {
					t.Errorf("Check(%q) = %v, want %s on %s", v, err, reason, a.Field())
				}
			}
			if a.Refused != "" {
				refused("", dcm.RejectUnsupported)
				refused("x", dcm.RejectUnsupported)
				return
			}
			for _, v := range append([]string{a.Default, a.Example}, a.Values...) {
				if err := a.Check(v); v != "" && err != nil {
					t.Errorf("Check(%q): %v", v, err)
				}
			}
			for _, v := range a.Unsupported {
				refused(v, dcm.RejectUnsupported)
			}
			if _, _, err := annotationValue[any](nil, a.Name); err != nil {
				t.Errorf("unset: %v", err)
			}
			valid := a.Default + a.Example
			if a.Type == ValueString {
				if valid != "" || len(a.Values) > 0 {
					t.Errorf("a string row takes any value: default %q, example %q, values %v mean nothing", a.Default, a.Example, a.Values)
				}
				return // any value is served: it selects, it never reaches HAProxy
			}
			if valid == "" || a.Default != "" && a.Example != "" {
				t.Fatalf("default %q, example %q: want exactly one", a.Default, a.Example)
			}
			reason, ok := badReason[a.Type]
			if !ok {
				t.Fatalf("type %q: no bad value known", a.Type)
			}
			refused(valid+"\n;x", reason)
			if a.Type == ValueInt || a.Type == ValueCount {
				refused("+"+valid, dcm.RejectInvalidValue)
				refused("0"+valid, dcm.RejectInvalidValue)
			}
		})
	}
}

// TestAnnotationDefaults: what a converted object gets without annotations
// is what the table says it gets.
func TestAnnotationDefaults(t *testing.T) {
	def := func(name string) string { return annotationRow(name).Default }
	routes, err := IngressRoutes(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web"},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{httpRule("a.example.com", httpPath("/", prefix, svcBackend("web", "http")))}}})
	if err != nil {
		t.Fatal(err)
	}
	r := routes[0]
	if r.Balance != def(AnnotationBalance) || strconv.FormatBool(r.Check) != def(AnnotationHealthCheck) ||
		strconv.FormatBool(r.Sticky) != def(AnnotationSticky) || strconv.FormatBool(r.Kind == dcm.KindPassthrough) != def(AnnotationSSLPassthrough) ||
		strconv.FormatBool(r.Upstream != nil) != def(AnnotationReencrypt) {
		t.Errorf("Ingress route %+v disagrees with the table's defaults", r)
	}
	c, err := RouteFromOpenShift(osRoute("web", "web.example.com", nil), RouteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Route.Balance != def(AnnotationRouteBalance) || strconv.FormatBool(!c.Route.Sticky) != def(AnnotationRouteDisableCookies) {
		t.Errorf("Route %+v disagrees with the table's defaults", c.Route)
	}
	if want, _ := strconv.Atoi(def(AnnotationSSLRedirectCode)); !slices.Contains(dcm.RedirectCodes, want) {
		t.Errorf("default redirect code %d is not one of %v", want, dcm.RedirectCodes)
	}
}

// TestAnnotationRefusedOnRoute: a Route carrying an annotation dcm reads
// but does not honour is refused, never served without it.
func TestAnnotationRefusedOnRoute(t *testing.T) {
	for _, a := range AnnotationsOf(KindRoute) {
		if a.Refused == "" {
			continue
		}
		u := osRoute("web", "web.example.com", nil)
		u.SetAnnotations(map[string]string{a.Name: "10.0.0.0/8"})
		_, err := RouteFromOpenShift(u, RouteOptions{})
		checkRefusal(t, err, dcm.RejectUnsupported, a.Field())
	}
}

// TestAnnotationsDeclaredOnce: every Annotation… constant of the package
// has its row in the table and every row its constant, so no annotation is
// read around the table.
func TestAnnotationsDeclaredOnce(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	constants := map[string]string{} // value → constant
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Annotation") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
						v, _ := strconv.Unquote(lit.Value)
						constants[v] = n.Name
					}
				}
			}
		}
	}
	for _, a := range Annotations() {
		if _, ok := constants[a.Name]; !ok {
			t.Errorf("row %s has no Annotation… constant", a.Name)
		}
		delete(constants, a.Name)
	}
	for v, name := range constants {
		t.Errorf("%s = %q has no row in the annotation table", name, v)
	}
}
