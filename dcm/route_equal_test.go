package dcm

import (
	"reflect"
	"testing"
)

// TestRouteEqualSeesEveryField: a change to any field of a route, and to
// any field of what it points to, makes it unequal to the route before.
func TestRouteEqualSeesEveryField(t *testing.T) {
	full := func() Route {
		return Route{Services: []ServiceRef{{Name: "s", Port: "http", Weight: 1}}, Workload: &WorkloadRef{},
			TLS: &TLSRef{}, Upstream: &UpstreamTLS{}, Allowlist: []string{"10.0.0.0/8"}, RateLimit: &RateLimit{},
			Headers: &HeaderActions{Request: []HeaderAction{{}}, Response: []HeaderAction{{}}},
			Gateway: &GatewayRoute{Hostnames: []string{"a"},
				Matches: []HTTPMatch{{Headers: []ValueMatch{{}}, Query: []ValueMatch{{}}}},
				Filters: &HTTPFilters{RequestHeaders: fullHeaderMods(), ResponseHeaders: fullHeaderMods(),
					Redirect: &HTTPRedirect{Path: &PathModifier{}}, Rewrite: &URLRewrite{Path: &PathModifier{}}}}}
	}
	if !full().Equal(full()) {
		t.Fatal("a route is not equal to an equal one")
	}
	var walk func(path string, v reflect.Value, set func(r *Route) reflect.Value)
	walk = func(path string, v reflect.Value, at func(r *Route) reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i), func(r *Route) reflect.Value { return at(r).Field(i) })
			}
		case reflect.Pointer:
			walk(path, v.Elem(), func(r *Route) reflect.Value { return at(r).Elem() })
		case reflect.Slice:
			walk(path+"[0]", v.Index(0), func(r *Route) reflect.Value { return at(r).Index(0) })
		default:
			r := full()
			f := at(&r)
			switch f.Kind() {
			case reflect.String:
				f.SetString(f.String() + "x")
			case reflect.Bool:
				f.SetBool(!f.Bool())
			case reflect.Int, reflect.Int64:
				f.SetInt(f.Int() + 1)
			default:
				t.Fatalf("%s: a %s field; teach the test to change it", path, f.Kind())
			}
			if r.Equal(full()) || full().Equal(r) {
				t.Errorf("Route%s changed, and Equal still says equal", path)
			}
		}
	}
	r := full()
	walk("", reflect.ValueOf(&r).Elem(), func(r *Route) reflect.Value { return reflect.ValueOf(r).Elem() })
}

func fullHeaderMods() *HeaderMods {
	return &HeaderMods{Set: []HeaderValue{{}}, Add: []HeaderValue{{}}, Remove: []string{""}}
}
