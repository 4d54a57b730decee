package routing

import (
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

func TestRewriteValue(t *testing.T) {
	for _, c := range []struct {
		kind         dcm.RouteKind
		path, target string
		want         string
	}{
		{dcm.KindHTTP, "/foo", "/", "/foo|/"},
		{dcm.KindEdge, "/foo", "/v2", "/foo|/v2"},
		{dcm.KindHTTP, "/", "/app", "|/app"},
		{dcm.KindHTTP, "/foo", "", ""},
		{dcm.KindPassthrough, "/", "/", ""},
	} {
		r := dcm.Route{Kind: c.kind, Path: c.path, HTTP: dcm.HTTPOptions{RewriteTarget: c.target}}
		got := RewriteValue(r)
		if got != c.want {
			t.Errorf("%s %s → %q: %q, want %q", c.kind, c.path, c.target, got, c.want)
		}
		if got != "" {
			if err := ValidateSetting(dcm.MapRewrite, "rewrite", got); err != nil {
				t.Errorf("%q: %v", got, err)
			}
		}
	}
	for _, v := range []string{"", "/foo", "|", "/foo|", "foo|/", "/foo|v2", "/a b|/", "/a|/b;c", "/a|/b#", "/a|/b\n", "/a|/b|/c"} {
		if ValidateSetting(dcm.MapRewrite, "rewrite", v) == nil {
			t.Errorf("%q accepted", v)
		}
	}
}
