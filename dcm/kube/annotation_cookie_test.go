package kube

import (
	"errors"
	"testing"

	"github.com/dcm-router/dcm/dcm"
)

// TestIngressCookie: dcm.io/cookie-name and cookie-same-site reach every
// sticky route of the Ingress; a name without dcm.io/sticky is refused, as
// is a SameSite the table does not list.
func TestIngressCookie(t *testing.T) {
	for _, tc := range []struct {
		name string
		ann  map[string]string
		want dcm.HTTPOptions
		why  string // the refusal's reason, "" when served
	}{
		{name: "defaults", ann: map[string]string{AnnotationSticky: "true"}},
		{name: "name and Lax", ann: map[string]string{AnnotationSticky: "true", AnnotationCookieName: "shop_1", AnnotationCookieSameSite: "Lax"},
			want: dcm.HTTPOptions{CookieName: "shop_1", CookieSameSite: dcm.SameSiteLax}},
		{name: "None is the default", ann: map[string]string{AnnotationSticky: "true", AnnotationCookieSameSite: "None"}},
		{name: "name without sticky", ann: map[string]string{AnnotationCookieName: "shop_1"}, why: dcm.RejectUnsupported},
		{name: "name with a semicolon", ann: map[string]string{AnnotationSticky: "true", AnnotationCookieName: "a;b"}, why: dcm.RejectInvalidValue},
		{name: "unknown SameSite", ann: map[string]string{AnnotationSticky: "true", AnnotationCookieSameSite: "Loose"}, why: dcm.RejectInvalidValue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ing := tlsIngress()
			ing.Annotations = tc.ann
			routes, err := IngressRoutes(ing)
			if tc.why != "" {
				var ie *dcm.InvalidError
				if !errors.As(err, &ie) || ie.Reason != tc.why {
					t.Fatalf("err %v, want %s", err, tc.why)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range routes {
				if !r.Sticky || r.HTTP.CookieName != tc.want.CookieName || r.HTTP.CookieSameSite != tc.want.CookieSameSite {
					t.Errorf("%s: sticky %v, http %+v, want %+v", r.Name, r.Sticky, r.HTTP, tc.want)
				}
			}
		})
	}
}
