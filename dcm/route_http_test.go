package dcm

import "testing"

func TestParseTimeout(t *testing.T) {
	for _, tt := range []struct {
		in string
		ms int64
	}{
		{"5000", 5000}, {"2s", 2000}, {"1m", 60000}, {"1h", 3600000}, {"1d", 86400000}, {"10ms", 10},
		{"1500us", 2}, {"1us", 1}, {"24d", 24 * 86400000},
		{"", 0}, {"s", 0}, {"0", 0}, {"0s", 0}, {"-1s", 0}, {"1.5s", 0}, {"25d", 0}, {"1 s", 0}, {"1S", 0},
		{"1s;", 0}, {"1y", 0}, {"99999999999999s", 0},
	} {
		ms, err := ParseTimeout("timeout", tt.in)
		if ms != tt.ms || (err == nil) != (tt.ms != 0) {
			t.Errorf("ParseTimeout(%q) = %d, %v; want %d", tt.in, ms, err, tt.ms)
		}
	}
}

func TestParseHSTS(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"max-age=31536000", "max-age=31536000"},
		{"max-age=31536000;includeSubDomains;preload", "max-age=31536000;includeSubDomains;preload"},
		{"MAX-AGE=1 ; preload ; INCLUDESUBDOMAINS", "max-age=1;includeSubDomains;preload"},
		{`max-age="0"`, "max-age=0"},
		{"max-age=1;", "max-age=1"},
		{"", ""}, {"preload", ""}, {"max-age=", ""}, {"max-age=-1", ""}, {"max-age=1;foo", ""},
		{"max-age=1;max-age=2", ""}, {"max-age=1;preload;preload", ""}, {"max-age=1 2", ""},
		{"max-age=1\n;x", ""}, {"max-age=12345678901", ""},
	} {
		got, err := ParseHSTS("hsts", tt.in)
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("ParseHSTS(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestValidateHTTPOptions(t *testing.T) {
	edge := Route{Kind: KindEdge, HTTP: HTTPOptions{HSTS: "max-age=1", Forwarded: ForwardReplace, TimeoutMillis: 2000}}
	if err := ValidateHTTPOptions(edge); err != nil {
		t.Errorf("edge: %v", err)
	}
	if err := ValidateHTTPOptions(Route{Kind: KindPassthrough, HTTP: HTTPOptions{TimeoutMillis: 1, TunnelMillis: 2}}); err != nil {
		t.Errorf("passthrough timeouts: %v", err)
	}
	for name, r := range map[string]Route{
		"hsts on http":          {Kind: KindHTTP, HTTP: HTTPOptions{HSTS: "max-age=1"}},
		"hsts not normalised":   {Kind: KindEdge, HTTP: HTTPOptions{HSTS: "max-age=1; preload"}},
		"hsts on passthrough":   {Kind: KindPassthrough, HTTP: HTTPOptions{HSTS: "max-age=1"}},
		"forwarded passthrough": {Kind: KindPassthrough, HTTP: HTTPOptions{Forwarded: ForwardNever}},
		"bad policy":            {Kind: KindHTTP, HTTP: HTTPOptions{Forwarded: "sometimes"}},
		"negative timeout":      {Kind: KindHTTP, HTTP: HTTPOptions{TunnelMillis: -1}},
	} {
		if ValidateHTTPOptions(r) == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
