package dcm

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// HeaderActions are a route's header actions (an OpenShift Route's
// spec.httpHeaders.actions, or an Ingress's dcm.io/request-headers and
// dcm.io/response-headers): request actions run before the request reaches
// a pod, response actions before the response reaches the client, each
// list in its order. They are an entry of the headers map, served by a Lua
// action that reads it (dcm/haproxy), so they change without a reload.
type HeaderActions struct {
	Request  []HeaderAction `json:"request,omitempty"`
	Response []HeaderAction `json:"response,omitempty"`
}

// HeaderAction sets or deletes one header.
type HeaderAction struct {
	Name string `json:"name"`
	// Type is HeaderSet or HeaderDelete.
	Type  string `json:"type"`
	Value string `json:"value,omitempty"` // a format string (ParseHeaderValue), Set only
}

// Header action types, as OpenShift spells them.
const (
	HeaderSet    = "Set"
	HeaderDelete = "Delete"
)

// Limits of OpenShift's Route CRD.
const (
	MaxHeaderActions     = 20
	MaxHeaderNameLength  = 255
	MaxHeaderValueLength = 16384
)

// Empty reports whether there is no action.
func (h *HeaderActions) Empty() bool {
	return h == nil || len(h.Request) == 0 && len(h.Response) == 0
}

// reservedHeaders may not be touched by header actions: the four the Route
// CRD refuses (HSTS is dcm's hsts_header, Proxy is stripped against
// httpoxy, cookies are the application's), and the ones that frame the
// message or the connection, which a rewrite could turn into request
// smuggling.
var reservedHeaders = []string{
	"strict-transport-security", "proxy", "cookie", "set-cookie",
	"content-length", "transfer-encoding", "connection", "keep-alive", "te", "trailer", "upgrade",
}

// ReservedHeader reports whether header actions may not touch a header.
func ReservedHeader(name string) bool {
	n := strings.ToLower(name)
	for _, r := range reservedHeaders {
		if n == r {
			return true
		}
	}
	return false
}

// ValidateHeaderName checks a header name: an RFC 7230 token of at most
// 255 bytes that is not reserved.
func ValidateHeaderName(field, s string) error {
	if s == "" || len(s) > MaxHeaderNameLength {
		return invalid(RejectInvalidValue, field, s)
	}
	for i := 0; i < len(s); i++ {
		if !tokenByte(s[i]) {
			return invalid(RejectInvalidValue, field, s)
		}
	}
	if ReservedHeader(s) {
		return invalid(RejectUnsupported, field+" (reserved header)", s)
	}
	return nil
}

func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// ValidateHeaderActions checks a route's header actions: names, types,
// values, at most 20 per list and each name once per list.
func ValidateHeaderActions(h *HeaderActions) error {
	if h == nil {
		return nil
	}
	for _, l := range []struct {
		field   string
		list    []HeaderAction
		request bool
	}{{"httpHeaders.actions.request", h.Request, true}, {"httpHeaders.actions.response", h.Response, false}} {
		if len(l.list) > MaxHeaderActions {
			return invalid(RejectInvalidValue, l.field+" (more than 20 actions)", strconv.Itoa(len(l.list)))
		}
		seen := map[string]bool{}
		for i, a := range l.list {
			field := l.field + "[" + strconv.Itoa(i) + "]"
			if err := ValidateHeaderName(field+".name", a.Name); err != nil {
				return err
			}
			if seen[strings.ToLower(a.Name)] {
				return invalid(RejectInvalidValue, field+".name (twice)", a.Name)
			}
			seen[strings.ToLower(a.Name)] = true
			switch a.Type {
			case HeaderDelete:
				if a.Value != "" {
					return invalid(RejectInvalidValue, field+".value (Delete takes none)", a.Value)
				}
			case HeaderSet:
				if _, err := ParseHeaderValue(field+".value", a.Value, l.request); err != nil {
					return err
				}
			default:
				return invalid(RejectInvalidValue, field+".type", a.Type)
			}
		}
	}
	return nil
}

// HeaderSegment is one piece of a header value: literal text, or a sample
// fetch (a header of the message, or the client certificate) with its
// converters.
type HeaderSegment struct {
	Text string // literal text, when Fetch is empty
	// Fetch is HeaderFetchHeader (Arg names the header) or HeaderFetchClientCert.
	Fetch      string
	Arg        string
	Converters []string // HeaderConvLower, HeaderConvBase64, in order
	Quote      bool     // %{+Q}: the value in double quotes
}

// The sample fetches and converters a header value may use: the ones the
// Route CRD accepts.
const (
	HeaderFetchHeader     = "hdr"       // req.hdr(<name>) in a request action, res.hdr(<name>) in a response action
	HeaderFetchClientCert = "ssl_c_der" // the client certificate, DER
	HeaderConvLower       = "lower"
	HeaderConvBase64      = "base64"
)

// ParseHeaderValue reads a header value as OpenShift's Route CRD accepts
// it: text without control characters, %% for a '%', and
// %[fetch(,converter)*] or %{flags}[…] with the fetches req.hdr(<name>)
// (res.hdr in a response action) and ssl_c_der, the converters lower and
// base64, and the flags +Q and -Q. X and E flags are refused: dcm does not
// serve them.
func ParseHeaderValue(field, s string, request bool) ([]HeaderSegment, error) {
	if s == "" || len(s) > MaxHeaderValueLength || !utf8.ValidString(s) {
		return nil, invalid(RejectInvalidValue, field, s)
	}
	var out []HeaderSegment
	text := func(t string) {
		if n := len(out); n > 0 && out[n-1].Fetch == "" {
			out[n-1].Text += t
			return
		}
		out = append(out, HeaderSegment{Text: t})
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			return nil, invalid(RejectInvalidValue, field+" (control character)", s)
		}
		if c != '%' {
			j := i + 1
			for j < len(s) && s[j] != '%' && s[j] >= 0x20 && s[j] != 0x7f {
				j++
			}
			text(s[i:j])
			i = j
			continue
		}
		if strings.HasPrefix(s[i:], "%%") {
			text("%")
			i += 2
			continue
		}
		seg, n, ok := parseFetch(s[i+1:], request)
		if !ok {
			return nil, invalid(RejectInvalidValue, field+" (only %%, %[req.hdr(name)], %[res.hdr(name)], %[ssl_c_der] with lower, base64 and +Q)", s)
		}
		out = append(out, seg)
		i += 1 + n
	}
	return out, nil
}

// parseFetch reads "{flags}[fetch,conv…]" or "[fetch,conv…]" at the start
// of s, returning the segment and the bytes read.
func parseFetch(s string, request bool) (HeaderSegment, int, bool) {
	var seg HeaderSegment
	n := 0
	if strings.HasPrefix(s, "{") {
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return seg, 0, false
		}
		for _, f := range strings.Split(s[1:end], ",") {
			switch f {
			case "+Q", "Q":
				seg.Quote = true
			case "-Q":
				seg.Quote = false
			default:
				return seg, 0, false
			}
		}
		n = end + 1
	}
	if !strings.HasPrefix(s[n:], "[") {
		return seg, 0, false
	}
	end := strings.IndexByte(s[n:], ']')
	if end < 0 {
		return seg, 0, false
	}
	parts := strings.Split(s[n+1:n+end], ",")
	prefix := "res.hdr("
	if request {
		prefix = "req.hdr("
	}
	switch f := parts[0]; {
	case f == HeaderFetchClientCert:
		seg.Fetch = HeaderFetchClientCert
	case strings.HasPrefix(f, prefix) && strings.HasSuffix(f, ")"):
		seg.Fetch, seg.Arg = HeaderFetchHeader, f[len(prefix):len(f)-1]
		if seg.Arg == "" || strings.Trim(seg.Arg, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-") != "" {
			return seg, 0, false
		}
	default:
		return seg, 0, false
	}
	for _, c := range parts[1:] {
		if c != HeaderConvLower && c != HeaderConvBase64 {
			return seg, 0, false
		}
		seg.Converters = append(seg.Converters, c)
	}
	return seg, n + end + 1, true
}

// validateRouteHeaders checks a route's header actions; a passthrough
// route has none, as OpenShift says: HAProxy never reads its requests.
func validateRouteHeaders(r Route) error {
	if r.Kind == KindPassthrough && !r.Headers.Empty() {
		return invalid(RejectUnsupported, "header actions on a passthrough route", r.Host)
	}
	return ValidateHeaderActions(r.Headers)
}
