package routing

import (
	"github.com/dcm-router/dcm/dcm"
	"strings"
)

// HeaderValue encodes a route's header actions as the value of its
// headers map entry; "" when it has none. A map value travels in an
// `add map` command, where ';' ends a command and white space splits
// arguments, so every name and text is upper-case hex and the structure
// is spelled with a few lower-case letters, '-' and '.':
//
//	value   = action *("." action)
//	action  = phase type "-" HEX(name) *("-" segment)   phase q request, s response; type s Set, d Delete
//	segment = "t" HEX(text) | "h" HEX(header) mods | "c" mods
//	mods    = *("l" | "b") ["q"]                        lower, base64 in order, then +Q
//
// The Lua action (dcm/haproxy) decodes it; values that do not parse
// (dcm.ParseHeaderValue) have no entry, the route is refused before.
func HeaderValue(r dcm.Route) string {
	h := r.Headers
	if h.Empty() || r.Kind == dcm.KindPassthrough {
		return ""
	}
	var parts []string
	for _, l := range []struct {
		phase   string
		list    []dcm.HeaderAction
		request bool
	}{{"q", h.Request, true}, {"s", h.Response, false}} {
		for _, a := range l.list {
			p, ok := encodeAction(l.phase, a, l.request)
			if !ok {
				return ""
			}
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ".")
}

func encodeAction(phase string, a dcm.HeaderAction, request bool) (string, bool) {
	up := func(s string) string { return strings.ToUpper(dcm.Hex([]byte(s))) }
	if a.Type == dcm.HeaderDelete {
		return phase + "d-" + up(a.Name), true
	}
	segs, err := dcm.ParseHeaderValue("value", a.Value, request)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	b.WriteString(phase + "s-" + up(a.Name))
	for _, s := range segs {
		b.WriteByte('-')
		switch s.Fetch {
		case "":
			b.WriteString("t" + up(s.Text))
			continue
		case dcm.HeaderFetchHeader:
			b.WriteString("h" + up(s.Arg))
		default:
			b.WriteString("c")
		}
		for _, c := range s.Converters {
			b.WriteByte(c[0]) // lower → l, base64 → b
		}
		if s.Quote {
			b.WriteByte('q')
		}
	}
	return b.String(), true
}

// MaxHeaderValue bounds a headers map value: one `add map` line must fit
// HAProxy's 16 KB buffer with room for the command. A route whose actions
// encode longer is refused (ValidateHeaderValue).
const MaxHeaderValue = 12000

// ValidateHeaderValue checks a headers map value against the alphabet of
// HeaderValue and its length.
func ValidateHeaderValue(field, s string) error {
	if s == "" || len(s) > MaxHeaderValue {
		return &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: field, Value: s}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'F' || strings.IndexByte("-.qsdthclb", c) >= 0) {
			return &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: field, Value: s}
		}
	}
	return nil
}
