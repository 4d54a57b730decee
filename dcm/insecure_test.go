package dcm

import "testing"

func TestInsecureEffective(t *testing.T) {
	for _, tc := range []struct {
		kind RouteKind
		set  InsecurePolicy
		want InsecurePolicy
	}{
		{KindEdge, "", InsecureAllow},
		{KindEdge, InsecureRedirect, InsecureRedirect},
		{KindEdge, InsecureNone, InsecureNone},
		{KindReencrypt, "", InsecureAllow},
		{KindReencrypt, InsecureRedirect, InsecureRedirect},
		{KindPassthrough, "", InsecureNone},
		{KindPassthrough, InsecureRedirect, InsecureRedirect},
		{KindHTTP, "", InsecureAllow},
	} {
		r := Route{Kind: tc.kind, Insecure: tc.set}
		if got := r.InsecureEffective(); got != tc.want {
			t.Errorf("%s %q: InsecureEffective = %q, want %q", tc.kind, tc.set, got, tc.want)
		}
	}
}

func TestValidateInsecure(t *testing.T) {
	for _, tc := range []struct {
		kind RouteKind
		set  InsecurePolicy
		code int
		ok   bool
	}{
		{KindEdge, "", 0, true},
		{KindEdge, InsecureAllow, 0, true},
		{KindEdge, InsecureRedirect, 301, true},
		{KindEdge, InsecureNone, 0, true},
		{KindEdge, "redirect", 0, false},
		{KindEdge, "Allow\n", 0, false},
		{KindEdge, InsecureRedirect, 200, false},
		{KindEdge, InsecureRedirect, 304, false},
		{KindReencrypt, InsecureRedirect, 308, true},
		{KindPassthrough, InsecureAllow, 0, false},
		{KindPassthrough, InsecureNone, 0, true},
		{KindPassthrough, InsecureRedirect, 0, true},
		{KindHTTP, "", 0, true},
		{KindHTTP, InsecureAllow, 0, true},
		{KindHTTP, InsecureRedirect, 0, false},
		{KindHTTP, InsecureNone, 0, false},
	} {
		err := ValidateInsecure(Route{Kind: tc.kind, Insecure: tc.set, RedirectCode: tc.code})
		if (err == nil) != tc.ok {
			t.Errorf("%s %q %d: err = %v, want ok=%v", tc.kind, tc.set, tc.code, err, tc.ok)
		}
	}
	if (Route{}).RedirectStatus() != 302 || (Route{RedirectCode: 308}).RedirectStatus() != 308 {
		t.Error("RedirectStatus")
	}
}
