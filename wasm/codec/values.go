package codec

import (
	"strconv"
)

// The readers of values below leave *p alone for null, as encoding/json
// does for a value that is not a pointer, slice or map.

//go:noinline
func decStr[T ~string](d *decoder, p *T) {
	if d.null() || d.err != nil {
		return
	}
	if d.peek() != '"' {
		d.mismatch('"')
		return
	}
	*p = T(d.rawString())
}

//go:noinline
func decBool[T ~bool](d *decoder, p *T) {
	switch c := d.peek(); {
	case d.err != nil:
	case c == 't':
		d.literal("true")
		*p = true
	case c == 'f':
		d.literal("false")
		*p = false
	case c == 'n':
		d.literal("null")
	default:
		d.mismatch('t')
	}
}

//go:noinline
func decInt[T ~int | ~int8 | ~int16 | ~int32 | ~int64](d *decoder, p *T) {
	if s := d.number(); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || int64(T(n)) != n {
			d.rangeError(s)
			return
		}
		*p = T(n)
	}
}

//go:noinline
func decUint[T ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr](d *decoder, p *T) {
	if s := d.number(); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || uint64(T(n)) != n {
			d.rangeError(s)
			return
		}
		*p = T(n)
	}
}

//go:noinline
func decFloat64[T ~float64](d *decoder, p *T) {
	if s := d.number(); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			d.rangeError(s)
			return
		}
		*p = T(f)
	}
}

//go:noinline
func decFloat32[T ~float32](d *decoder, p *T) {
	if s := d.number(); s != "" {
		f, err := strconv.ParseFloat(s, 32)
		if err != nil {
			d.rangeError(s)
			return
		}
		*p = T(f)
	}
}

func (d *decoder) rangeError(number string) {
	d.pos -= len(number)
	d.fail("number " + number + " does not fit")
}

// decMap reads a map with string keys: null clears it, an object adds to
// it (made if it was nil).
//
//go:noinline
func decMap[K ~string, V any](d *decoder, p *map[K]V, f func(*decoder, *V)) {
	if d.null() {
		*p = nil
		return
	}
	if !d.open('{') {
		return
	}
	if *p == nil {
		*p = map[K]V{}
	}
	for d.more('}') {
		k := d.key()
		var v V
		f(d, &v)
		(*p)[K(k)] = v
	}
}

// decJSON hands the next value's text to the type's own UnmarshalJSON,
// null included, as encoding/json does.
//
//go:noinline
func decJSON(d *decoder, unmarshal func([]byte) error) {
	if s := d.raw(); d.err == nil {
		d.wrap(unmarshal([]byte(s)))
	}
}

// decText hands a string to the type's own UnmarshalText; null leaves the
// value alone.
//
//go:noinline
func decText(d *decoder, unmarshal func([]byte) error) {
	var s string
	if d.null() || d.err != nil {
		return
	}
	if decStr(d, &s); d.err == nil {
		d.wrap(unmarshal([]byte(s)))
	}
}

// The common kinds have methods that are not generic: a generic function
// takes a dictionary at every call site of the generated code.

//go:noinline
func (d *decoder) str(p *string) { decStr(d, p) }

//go:noinline
func (d *decoder) boolean(p *bool) { decBool(d, p) }

//go:noinline
func (d *decoder) int(p *int) { decInt(d, p) }

//go:noinline
func (d *decoder) int64(p *int64) { decInt(d, p) }

//go:noinline
func (d *decoder) uint64(p *uint64) { decUint(d, p) }

//go:noinline
func (d *decoder) float64(p *float64) { decFloat64(d, p) }
