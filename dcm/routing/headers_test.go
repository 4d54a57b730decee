package routing

import (
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func TestHeaderValue(t *testing.T) {
	r := dcm.Route{Namespace: "ns", Name: "a", Kind: dcm.KindHTTP, Host: "a.example", Path: "/", PathType: dcm.PathPrefix}
	if v := HeaderValue(r); v != "" {
		t.Errorf("no actions: %q", v)
	}
	r.Headers = &dcm.HeaderActions{
		Request: []dcm.HeaderAction{
			{Name: "X-A", Type: dcm.HeaderSet, Value: "a; b=%[req.hdr(Host),lower,base64]"},
			{Name: "X-B", Type: dcm.HeaderDelete},
		},
		Response: []dcm.HeaderAction{{Name: "X-C", Type: dcm.HeaderSet, Value: "%{+Q}[ssl_c_der]"}},
	}
	// X-A = 582D41, "a; b=" = 613B20623D, Host = 486F7374.
	want := "qs-582D41-t613B20623D-h486F7374lb.qd-582D42.ss-582D43-cq"
	if v := HeaderValue(r); v != want {
		t.Errorf("got %q, want %q", v, want)
	}
	if err := ValidateHeaderValue("v", want); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "qs-58 2D", "qs-58;", "qs-582x41", "qs\n", string(make([]byte, MaxHeaderValue+1))} {
		if ValidateHeaderValue("v", bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	r.Kind = dcm.KindPassthrough
	if v := HeaderValue(r); v != "" {
		t.Errorf("passthrough: %q", v)
	}
}

func TestTablesHeaders(t *testing.T) {
	r := dcm.Route{Namespace: "ns", Name: "a", Kind: dcm.KindHTTP, Host: "a.example", Path: "/", PathType: dcm.PathPrefix,
		Headers: &dcm.HeaderActions{Request: []dcm.HeaderAction{{Name: "X-B", Type: dcm.HeaderDelete}}}}
	b := dcm.Backend{Name: r.BackendName(), Route: r, Slot: "be_http:_pool:3"}
	es := Tables(dcm.BackendList(b))[dcm.MapHeaders]
	if len(es) != 1 || es[0].Key != "be_http:_pool:3" || es[0].Value() != "qd-582D42" {
		t.Errorf("headers map %+v", es)
	}
}
