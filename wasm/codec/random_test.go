package codec_test

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"time"
)

// filler sets every exported field of a value at random, following the
// types by reflection: a field added to a dcm type is covered without a
// change here. It makes values that survive a round trip through
// encoding/json unchanged: valid UTF-8, no NaN, an omitempty slice or map
// nil or not empty.
type filler struct {
	r     *rand.Rand
	depth int
}

// runes are the characters strings are drawn from: the ones JSON escapes
// (quotes, backslashes, control bytes, HTML's <>&, U+2028/9), multi-byte
// ones and one outside the BMP (a surrogate pair in \u escapes).
var runes = []rune("abcxyz09 -_./:\"\\<>&\x00\x01\x07\b\f\n\r\t\x1f\x7fé世\u2028\u2029\U0001F600\uFFFD")

func (f *filler) str() string {
	if f.r.IntN(4) == 0 {
		return ""
	}
	var b strings.Builder
	for range f.r.IntN(12) + 1 {
		b.WriteRune(runes[f.r.IntN(len(runes))])
	}
	return b.String()
}

func (f *filler) float(bits int) float64 {
	switch f.r.IntN(8) {
	case 0:
		return 0
	case 1:
		return float64(f.r.IntN(2000) - 1000)
	case 2:
		return math.Ldexp(f.r.Float64(), f.r.IntN(200)-100) // tiny to 1e30: both of encoding/json's formats
	case 3:
		if bits == 32 {
			return -math.MaxFloat32
		}
		return math.MaxFloat64
	case 4:
		return 1e21
	case 5:
		return 1e-7
	}
	return f.r.NormFloat64() * 1e3
}

func (f *filler) int(bits int) int64 {
	switch f.r.IntN(5) {
	case 0:
		return 0
	case 1:
		return -1 << (bits - 1)
	case 2:
		return 1<<(bits-1) - 1
	}
	return f.r.Int64N(2000) - 1000
}

func (f *filler) uint(bits int) uint64 {
	switch f.r.IntN(4) {
	case 0:
		return 0
	case 1:
		return math.MaxUint64 >> (64 - bits)
	}
	return f.r.Uint64N(5000)
}

func (f *filler) time() time.Time {
	t := time.Unix(f.r.Int64N(1<<33), 0)
	if f.r.IntN(2) == 0 {
		t = t.Add(time.Duration(f.r.Int64N(1e9)))
	}
	// A zone of offset 0 comes back as UTC: it is written Z.
	if offset := (f.r.IntN(48) - 24) * 15 * 60; offset != 0 && f.r.IntN(3) == 0 {
		return t.In(time.FixedZone("", offset))
	}
	return t.UTC()
}

// fill sets v; omitempty says its field is omitted when empty, so an empty
// slice or map would come back nil.
func (f *filler) fill(v reflect.Value, omitempty bool) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(f.str())
	case reflect.Bool:
		v.SetBool(f.r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(f.int(v.Type().Bits()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(f.uint(v.Type().Bits()))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(f.float(v.Type().Bits()))
	case reflect.Pointer:
		if f.r.IntN(3) > 0 && f.depth < 6 {
			v.Set(reflect.New(v.Type().Elem()))
			f.nested(v.Elem())
		}
	case reflect.Slice:
		n := f.size(omitempty)
		if n < 0 {
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			f.nested(v.Index(i))
		}
	case reflect.Map:
		n := f.size(omitempty)
		if n < 0 {
			return
		}
		v.Set(reflect.MakeMap(v.Type()))
		for range n {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			f.nested(k)
			f.nested(e)
			v.SetMapIndex(k, e)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(f.time()))
			return
		}
		for i := range v.NumField() {
			sf := v.Type().Field(i)
			if sf.IsExported() && sf.Tag.Get("json") != "-" {
				f.fill(v.Field(i), strings.Contains(sf.Tag.Get("json"), ",omitempty"))
			}
		}
	}
}

func (f *filler) nested(v reflect.Value) {
	f.depth++
	f.fill(v, false)
	f.depth--
}

// size is a slice's or map's length, -1 for nil.
func (f *filler) size(omitempty bool) int {
	if f.depth >= 6 {
		return -1
	}
	switch n := f.r.IntN(5) - 1; {
	case n == 0 && omitempty:
		return -1
	default:
		return n
	}
}
