package web_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/views"
	"github.com/dcm-router/dcm/web"
)

// call is one function of format.js applied to arguments, and what the Go
// that renders the pages says for them.
type call struct {
	Fn   string `json:"fn"`
	Args []any  `json:"args"`
	want string
}

// TestFormatParity: format.js, as static/ serves it, reads every op kind,
// event type, server state and reload reason of dcm exactly as views/
// renders them on the server. The kinds are read from dcm's source, so a
// new one is checked without touching this test.
func TestFormatParity(t *testing.T) {
	node := nodeBinary(t)
	consts := dcmConstants(t)
	var calls []call
	calls = append(calls, opCalls(consts["OpKind"])...)
	calls = append(calls, eventCalls(consts["EventType"])...)
	calls = append(calls, stateCalls(consts["AdminState"])...)
	calls = append(calls, reasonCalls(consts["ReloadReason"])...)
	calls = append(calls, gatewayRouteCalls()...)

	got := runFormat(t, node, calls)
	if len(got) != len(calls) {
		t.Fatalf("format.js answered %d calls of %d", len(got), len(calls))
	}
	for i, c := range calls {
		if got[i] != c.want {
			args, _ := json.Marshal(c.Args)
			t.Errorf("%s(%s):\n  format.js %q\n  views     %q", c.Fn, args, got[i], c.want)
		}
	}
	t.Logf("%d calls of format.js agree with views/", len(calls))
}

func nodeBinary(t *testing.T) string {
	for _, name := range []string{"node", "nodejs"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("node is not installed (Debian: apt-get install nodejs): format.js is not checked against views/")
	return ""
}

// dcmConstants reads the string constants of dcm's source by type name.
func dcmConstants(t *testing.T) map[string][]string {
	t.Helper()
	pkgFiles, err := filepath.Glob(filepath.Join("..", "dcm", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, name := range pkgFiles {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				collectConsts(t, g, out)
			}
		}
	}
	for _, typ := range []string{"OpKind", "EventType", "AdminState", "ReloadReason"} {
		if len(out[typ]) == 0 {
			t.Fatalf("no constants of type dcm.%s found in dcm's source", typ)
		}
	}
	return out
}

func collectConsts(t *testing.T, g *ast.GenDecl, out map[string][]string) {
	for _, spec := range g.Specs {
		vs := spec.(*ast.ValueSpec)
		typ, ok := vs.Type.(*ast.Ident)
		if !ok {
			continue
		}
		for _, v := range vs.Values {
			lit, ok := v.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			out[typ.Name] = append(out[typ.Name], s)
		}
	}
}

// opCalls reads every kind bare, with its plain fields, and with all of them.
func opCalls(kinds []string) []call {
	var out []call
	for _, k := range kinds {
		plain := dcm.Op{Kind: dcm.OpKind(k), Backend: "be_http:demo:web", Server: "web-1_http", Addr: "127.0.10.2",
			Port: 8080, Weight: 3, State: dcm.StateDrain, Map: dcm.MapHostExact,
			Set: []dcm.MapEntry{{Key: "a", Backend: "b"}, {Key: "c", Backend: "d"}}, Del: []dcm.MapEntry{{Key: "e"}}}
		full := plain
		full.Cert = &dcm.Cert{Host: "web.demo.localhost", Secret: "demo/web-tls", Version: "0123456789abcdef0123"}
		full.Upstream = &dcm.UpstreamTLS{CA: "secret:demo/ca", Version: "fedcba9876543210", ServerName: "web.demo.svc"}
		for _, op := range []dcm.Op{{Kind: dcm.OpKind(k)}, plain, full} {
			out = append(out, call{Fn: "opText", Args: []any{op}, want: views.OpText(op)})
		}
	}
	return out
}

func eventCalls(types []string) []call {
	var out []call
	objects := []*dcm.ObjectRef{nil, {Kind: "HAProxy"}, {Kind: "Ingress", Namespace: "demo", Name: "web"}}
	for i, typ := range types {
		ev := dcm.Event{Seq: uint64(i + 1), Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Type: dcm.EventType(typ),
			Message: "Something Happened", Reason: "Some-Reason", Actor: "Alice",
			Object: objects[i%len(objects)], Backends: []string{"be_http:demo:web", "be_edge:demo:shop"}}
		bare := dcm.Event{Seq: ev.Seq, Time: ev.Time, Type: ev.Type}
		for _, e := range []dcm.Event{bare, ev} {
			out = append(out, call{Fn: "eventSearch", Args: []any{e}, want: views.EventSearch(e)})
			out = append(out, call{Fn: "objectText", Args: []any{e.Object}, want: views.ObjectText(e.Object)})
		}
	}
	return out
}

// gatewayRouteCalls: a Gateway route reads the same in rows and on its
// page, bare and with every match and filter, and an Ingress route as before.
func gatewayRouteCalls() []call {
	bare := dcm.Route{Namespace: "demo", Name: "gw_web.v1.0.0123456789abcdef", Object: "web.v1", Source: dcm.SourceHTTPRoute,
		Gateway: &dcm.GatewayRoute{Gateway: "infra/gw", Listener: "http", Bind: "127.0.20.1:80",
			Matches: []dcm.HTTPMatch{{PathType: dcm.GatewayPathPrefix, Path: "/"}}}}
	full := bare
	g := *bare.Gateway
	g.Hostnames, g.Unresolved = []string{"a.example", "*.b.example"}, true
	g.Matches = []dcm.HTTPMatch{{PathType: dcm.GatewayPathExact, Path: "/x", Method: "POST",
		Headers: []dcm.ValueMatch{{Name: "X-A", Value: "a"}}, Query: []dcm.ValueMatch{{Name: "q", Value: "v[0-9]", Regex: true}}},
		{PathType: dcm.GatewayPathRegex, Path: "/r.*"}}
	g.Filters = &dcm.HTTPFilters{
		RequestHeaders:  &dcm.HeaderMods{Set: []dcm.HeaderValue{{Name: "X-S", Value: "s"}}, Add: []dcm.HeaderValue{{Name: "X-D", Value: "d"}}, Remove: []string{"X-R"}},
		ResponseHeaders: &dcm.HeaderMods{Remove: []string{"Server"}},
		Redirect:        &dcm.HTTPRedirect{Scheme: "https", Hostname: "n.example", Port: 8443, StatusCode: 301, Path: &dcm.PathModifier{Type: dcm.ReplacePrefixMatch, Value: "/v2"}},
		Rewrite:         &dcm.URLRewrite{Hostname: "in.example", Path: &dcm.PathModifier{Type: dcm.ReplaceFullPath, Value: "/y"}},
	}
	full.Gateway = &g
	redirectOnly := bare
	rg := *bare.Gateway
	rg.Filters = &dcm.HTTPFilters{Redirect: &dcm.HTTPRedirect{}}
	redirectOnly.Gateway = &rg
	ingress := dcm.Route{Namespace: "demo", Name: "web", Object: "web", Host: "web.example", Path: "/", PathType: dcm.PathPrefix}
	grpc := bare
	grpc.Name, grpc.Object, grpc.Source = "gw_echo.g2.0123456789abcdef", "echo", dcm.SourceGRPCRoute
	tlsRoute := dcm.Route{Namespace: "demo", Name: "gw_db.0.0123456789abcdef", Object: "db", Source: dcm.SourceTLSRoute, Kind: dcm.KindPassthrough,
		Gateway: &dcm.GatewayRoute{Gateway: "infra/gw", Listener: "tls", Bind: "127.0.20.1:443", Hostnames: []string{"db.example"}, Unresolved: true}}
	var out []call
	for _, r := range []dcm.Route{bare, full, redirectOnly, ingress, grpc, tlsRoute} {
		out = append(out, call{Fn: "routeText", Args: []any{r}, want: views.RouteText(r)},
			call{Fn: "sourceText", Args: []any{r}, want: views.SourceText(r)},
			call{Fn: "hostsText", Args: []any{r}, want: views.HostsText(r)},
			call{Fn: "pathText", Args: []any{r}, want: views.PathText(r)},
			call{Fn: "gatewayText", Args: []any{r}, want: views.GatewayText(r)},
			call{Fn: "filtersText", Args: []any{r}, want: views.FiltersText(r)},
			call{Fn: "backendSearch", Args: []any{dcm.Backend{Name: "be_http:demo:x", Route: r}}, want: views.BackendSearch(&dcm.Backend{Name: "be_http:demo:x", Route: r})})
	}
	c := dcm.Condition{Type: "ResolvedRefs", Status: "False", Reason: "RefNotPermitted", Message: "no ReferenceGrant"}
	out = append(out, call{Fn: "conditionText", Args: []any{c}, want: views.ConditionText(c)})
	for _, rv := range []dcm.HTTPRouteView{{Namespace: "demo", Name: "web"}, {Kind: "GRPCRoute", Namespace: "demo", Name: "echo"}} {
		out = append(out, call{Fn: "routeViewText", Args: []any{rv}, want: views.RouteViewText(rv)})
	}
	for _, hs := range [][]string{nil, {"a.example", "*.b.example"}} {
		out = append(out, call{Fn: "hostnamesText", Args: []any{hs}, want: views.HostnamesText(hs)})
	}
	for _, p := range []dcm.RouteParentView{{Gateway: "infra/gw"}, {Gateway: "infra/gw", Listener: "http"}} {
		out = append(out, call{Fn: "parentText", Args: []any{p}, want: views.ParentText(p)})
	}
	return out
}

func stateCalls(states []string) []call {
	out := []call{{Fn: "displayStates", want: strings.Join(views.DisplayStates(), " ")}}
	var all []dcm.Server
	for _, st := range states {
		for _, health := range []string{"", "UP", "DOWN", "MAINT", "DRAIN", "no check"} {
			for _, check := range []bool{false, true} {
				s := dcm.Server{Name: "web-1_http", Addr: "127.0.10.2", Port: 8080, Weight: 1, State: dcm.AdminState(st),
					Health: health, Check: check, Pod: "web-1"}
				all = append(all, s)
				out = append(out,
					call{Fn: "displayState", Args: []any{s}, want: views.DisplayState(s)},
					call{Fn: "healthText", Args: []any{s}, want: views.HealthText(s)},
					call{Fn: "chipTitle", Args: []any{s}, want: views.ChipTitle(s)})
			}
		}
	}
	b := dcm.Backend{Name: "be_http:demo:web", Servers: all}
	return append(out, call{Fn: "backendStates", Args: []any{b}, want: views.BackendStates(&b)})
}

func reasonCalls(reasons []string) []call {
	var out []call
	lists := [][]dcm.ReloadReason{nil}
	for _, r := range reasons {
		lists = append(lists, []dcm.ReloadReason{dcm.ReloadReason(r)})
		lists[0] = append(lists[0], dcm.ReloadReason(r)) // every reason at once
	}
	for _, rs := range lists {
		info := dcm.ReloadInfo{Time: time.Date(2026, 3, 1, 12, 3, 0, 0, time.UTC), Reasons: rs, Duration: 0.084, OldPID: 4242, NewPID: 4301}
		out = append(out,
			call{Fn: "reasons", Args: []any{rs}, want: views.Reasons(rs)},
			call{Fn: "reloadText", Args: []any{info}, want: views.ReloadText(info)})
	}
	return out
}

// driver calls format.js as the calls on stdin say; a list it returns is
// compared joined by spaces (views joins them so).
const driver = `import { readFileSync } from 'node:fs';
import * as f from './format.js';

const calls = JSON.parse(readFileSync(0, 'utf8'));
const out = calls.map(({ fn, args }) => {
  const v = typeof f[fn] === 'function' ? f[fn](...(args || [])) : f[fn];
  return Array.isArray(v) ? v.join(' ') : String(v);
});
process.stdout.write(JSON.stringify(out));
`

// runFormat runs the calls in node over the scripts static/ serves.
func runFormat(t *testing.T, node string, calls []call) []string {
	t.Helper()
	dir := t.TempDir()
	scripts, err := fs.Glob(web.Files, "*.js")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"package.json": []byte(`{"type":"module"}`), "parity-driver.js": []byte(driver)}
	for _, name := range scripts {
		if files[name], err = fs.ReadFile(web.Files, name); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(dir, "parity-driver.js"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var got []string
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("node's answer: %v\n%s", err, stdout)
	}
	return got
}
