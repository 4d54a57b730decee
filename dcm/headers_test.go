package dcm

import (
	"errors"
	"strings"
	"testing"
)

func TestParseHeaderValue(t *testing.T) {
	for _, c := range []struct {
		in      string
		request bool
		want    []HeaderSegment // nil: refused
	}{
		{"DENY", true, []HeaderSegment{{Text: "DENY"}}},
		{"default-src 'self'; img-src * #x \"q\"", false, []HeaderSegment{{Text: "default-src 'self'; img-src * #x \"q\""}}},
		{"100%% sure", true, []HeaderSegment{{Text: "100% sure"}}},
		{"h=%[req.hdr(Host),lower]", true, []HeaderSegment{{Text: "h="}, {Fetch: HeaderFetchHeader, Arg: "Host", Converters: []string{"lower"}}}},
		{"%{+Q}[ssl_c_der,base64]", false, []HeaderSegment{{Fetch: HeaderFetchClientCert, Converters: []string{"base64"}, Quote: true}}},
		{"%[res.hdr(X-A)]", false, []HeaderSegment{{Fetch: HeaderFetchHeader, Arg: "X-A"}}},
		{"é", true, []HeaderSegment{{Text: "é"}}},
		{"%[res.hdr(X-A)]", true, nil},  // a response header in a request action
		{"%[req.hdr(X-A)]", false, nil}, // and the other way round
		{"%[src]", true, nil},
		{"%[req.hdr(X-A),upper]", true, nil},
		{"%[req.hdr(X_A)]", true, nil},
		{"%{+X}[ssl_c_der]", true, nil},
		{"%[req.hdr(X-A)", true, nil},
		{"50%", true, nil},
		{"a\nb", true, nil},
		{"a\rb", true, nil},
		{"a\tb", true, nil},
		{"a\x00b", true, nil},
		{"a\x7fb", true, nil},
		{"", true, nil},
		{strings.Repeat("a", MaxHeaderValueLength+1), true, nil},
		{"\xff", true, nil},
	} {
		got, err := ParseHeaderValue("v", c.in, c.request)
		if c.want == nil {
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Errorf("%q: %+v, %v, want a refusal", c.in, got, err)
			}
			continue
		}
		if err != nil || len(got) != len(c.want) {
			t.Errorf("%q: %+v, %v, want %+v", c.in, got, err, c.want)
			continue
		}
		for i := range got {
			if got[i].Text != c.want[i].Text || got[i].Fetch != c.want[i].Fetch || got[i].Arg != c.want[i].Arg ||
				strings.Join(got[i].Converters, ",") != strings.Join(c.want[i].Converters, ",") || got[i].Quote != c.want[i].Quote {
				t.Errorf("%q: segment %d %+v, want %+v", c.in, i, got[i], c.want[i])
			}
		}
	}
}

func TestValidateHeaderActions(t *testing.T) {
	set := func(n, v string) HeaderAction { return HeaderAction{Name: n, Type: HeaderSet, Value: v} }
	many := make([]HeaderAction, MaxHeaderActions+1)
	for i := range many {
		many[i] = set("X-"+strings.Repeat("a", i+1), "v")
	}
	for _, c := range []struct {
		name string
		h    *HeaderActions
		ok   bool
	}{
		{"nil", nil, true},
		{"set and delete", &HeaderActions{Request: []HeaderAction{set("X-A", "1"), {Name: "X-B", Type: HeaderDelete}}}, true},
		{"token characters", &HeaderActions{Response: []HeaderAction{set("X-!#$%&'*+.^_`|~1", "1")}}, true},
		{"20", &HeaderActions{Request: many[:20]}, true},
		{"21", &HeaderActions{Request: many}, false},
		{"same name twice", &HeaderActions{Request: []HeaderAction{set("X-A", "1"), {Name: "x-a", Type: HeaderDelete}}}, false},
		{"same name in both lists", &HeaderActions{Request: []HeaderAction{set("X-A", "1")}, Response: []HeaderAction{set("X-A", "1")}}, true},
		{"space in name", &HeaderActions{Request: []HeaderAction{set("X A", "1")}}, false},
		{"colon in name", &HeaderActions{Request: []HeaderAction{set("X:A", "1")}}, false},
		{"long name", &HeaderActions{Request: []HeaderAction{set(strings.Repeat("a", 256), "1")}}, false},
		{"cookie", &HeaderActions{Request: []HeaderAction{{Name: "Cookie", Type: HeaderDelete}}}, false},
		{"set-cookie", &HeaderActions{Response: []HeaderAction{set("SET-COOKIE", "a=b")}}, false},
		{"hsts", &HeaderActions{Response: []HeaderAction{set("Strict-Transport-Security", "max-age=1")}}, false},
		{"proxy", &HeaderActions{Request: []HeaderAction{set("proxy", "x")}}, false},
		{"content-length", &HeaderActions{Request: []HeaderAction{set("Content-Length", "0")}}, false},
		{"transfer-encoding", &HeaderActions{Response: []HeaderAction{{Name: "Transfer-Encoding", Type: HeaderDelete}}}, false},
		{"bad type", &HeaderActions{Request: []HeaderAction{{Name: "X-A", Type: "Append", Value: "x"}}}, false},
		{"delete with value", &HeaderActions{Request: []HeaderAction{{Name: "X-A", Type: HeaderDelete, Value: "x"}}}, false},
		{"set without value", &HeaderActions{Request: []HeaderAction{{Name: "X-A", Type: HeaderSet}}}, false},
	} {
		err := ValidateHeaderActions(c.h)
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok=%v", c.name, err, c.ok)
		}
	}
}
