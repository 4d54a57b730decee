package codec

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// encoder appends JSON text to b. The first error (a NaN, a type's own
// marshaler failing) sticks.
type encoder struct {
	b   []byte
	err error
}

// key starts a field: its comma unless it is the object's first, and its
// name, quoted and followed by the colon (`"name":`). Every writer takes
// the key of the field it writes, "" for an element or the whole text, so
// that a field costs the generated code one call: in WebAssembly each call
// site carries its own resumption code.
func (e *encoder) key(quoted string) {
	if quoted == "" {
		return
	}
	if e.b[len(e.b)-1] != '{' {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, quoted...)
}

// The writers below are not inlined: inlined at every field, they made
// the generated code seven times larger.

//go:noinline
func (e *encoder) open(k string) {
	e.key(k)
	e.b = append(e.b, '{')
}

//go:noinline
func (e *encoder) end(c byte) { e.b = append(e.b, c) }

//go:noinline
func (e *encoder) null(k string) {
	e.key(k)
	e.b = append(e.b, "null"...)
}

//go:noinline
func (e *encoder) array(k string) {
	e.key(k)
	e.b = append(e.b, '[')
}

// comma goes before element i of an array.
//
//go:noinline
func (e *encoder) comma(i int) {
	if i > 0 {
		e.b = append(e.b, ',')
	}
}

// The common kinds have methods that are not generic (a generic function
// takes a dictionary at every call site of the generated code); the
// generic writers of the other kinds go through them.

//go:noinline
func (e *encoder) str(k, v string) {
	e.key(k)
	e.b = appendString(e.b, v)
}

//go:noinline
func (e *encoder) boolean(k string, v bool) {
	e.key(k)
	e.b = strconv.AppendBool(e.b, v)
}

//go:noinline
func (e *encoder) int64(k string, v int64) {
	e.key(k)
	e.b = strconv.AppendInt(e.b, v, 10)
}

//go:noinline
func (e *encoder) uint64(k string, v uint64) {
	e.key(k)
	e.b = strconv.AppendUint(e.b, v, 10)
}

//go:noinline
func (e *encoder) float64(k string, v float64) {
	e.key(k)
	e.float(v, 64)
}

func encStr[T ~string](e *encoder, k string, p *T) { e.str(k, string(*p)) }

func encBool[T ~bool](e *encoder, k string, p *T) { e.boolean(k, bool(*p)) }

func encInt[T ~int | ~int8 | ~int16 | ~int32 | ~int64](e *encoder, k string, p *T) {
	e.int64(k, int64(*p))
}

func encUint[T ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr](e *encoder, k string, p *T) {
	e.uint64(k, uint64(*p))
}

func encFloat64[T ~float64](e *encoder, k string, p *T) { e.float64(k, float64(*p)) }

//go:noinline
func encFloat32[T ~float32](e *encoder, k string, p *T) {
	e.key(k)
	e.float(float64(*p), 32)
}

// float writes f as encoding/json does: the shortest decimal that reads
// back as f, in exponent form only below 1e-6 or from 1e21 on, with the
// exponent's leading zero dropped (1e-07 → 1e-7).
func (e *encoder) float(f float64, bits int) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		if e.err == nil {
			e.err = errors.New("json: unsupported value: " + strconv.FormatFloat(f, 'g', -1, bits))
		}
		e.b = append(e.b, '0')
		return
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 {
		if bits == 32 {
			a = float64(float32(a))
		}
		if a < 1e-6 || a >= 1e21 {
			format = 'e'
		}
	}
	e.b = strconv.AppendFloat(e.b, f, format, -1, bits)
	if n := len(e.b); format == 'e' && n >= 4 && e.b[n-4] == 'e' && e.b[n-3] == '-' && e.b[n-2] == '0' {
		e.b[n-2] = e.b[n-1]
		e.b = e.b[:n-1]
	}
}

// encMap writes a map with string keys in the order of its keys, as
// encoding/json does; null for a nil map.
//
//go:noinline
func encMap[K ~string, V any](e *encoder, k string, p *map[K]V, f func(*encoder, string, *V)) {
	e.key(k)
	m := *p
	if m == nil {
		e.b = append(e.b, "null"...)
		return
	}
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.b = append(e.b, '{')
	for i, key := range keys {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = appendString(e.b, string(key))
		e.b = append(e.b, ':')
		v := m[key]
		f(e, "", &v)
	}
	e.b = append(e.b, '}')
}

// encJSON writes what a type's own MarshalJSON returns.
//
//go:noinline
func encJSON(e *encoder, k string, marshal func() ([]byte, error)) {
	e.key(k)
	text, err := marshal()
	if err != nil && e.err == nil {
		e.err = err
	}
	if err != nil || len(text) == 0 {
		text = []byte("null")
	}
	e.b = append(e.b, text...)
}

// encText writes what a type's own MarshalText returns, as a string.
//
//go:noinline
func encText(e *encoder, k string, marshal func() ([]byte, error)) {
	e.key(k)
	text, err := marshal()
	if err != nil && e.err == nil {
		e.err = err
	}
	e.b = appendString(e.b, string(text))
}

// appendString quotes s as encoding/json does by default: \", \\ and the
// short escapes, \u00XX for other control bytes and for <, > and & (HTML
// safe), \u2028 and \u2029, and \ufffd for each byte of invalid UTF-8.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	// safe[c] is 1 for the ASCII bytes written as they are: one load a
	// byte, where six comparisons slowed a preview's answer.
	const safe = "" +
		"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
		"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
		"\x01\x01\x00\x01\x01\x01\x00\x01\x01\x01\x01\x01\x01\x01\x01\x01" + // " &
		"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x01\x00\x01" + // < >
		"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
		"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x01\x01\x01" + // \\
		"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01" +
		"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] == 1 {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
