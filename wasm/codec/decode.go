// Package codec is JSON for the what-if planner's shapes without
// encoding/json, whose reflection costs the browser's download about
// 190 KB gzipped. codec_gen.go (written by internal/codecgen from the
// types themselves) walks each shape field by field over the small
// tokenizer and writer of this package. It follows encoding/json: the same
// bytes out (HTML-safe escaping, sorted map keys, its float format,
// omitempty and omitzero), the same values in (unknown fields skipped, keys
// matched exactly first and then case-insensitively, null leaves a value
// alone and clears a pointer, slice or map). Its error messages are its
// own. The native bridge and the wasm build both run this code, so the
// parity tests exercise it; codec's tests hold it to encoding/json.
package codec

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit, kept so that a hostile
// message cannot grow the stack without bound.
const maxDepth = 10000

// decoder reads one JSON text. The first error sticks: every method does
// nothing after it, so generated code checks it once, at the end.
type decoder struct {
	s     string
	pos   int
	depth int
	// first is set by open and cleared by more: the next element is the
	// first of its object or array, so no comma comes before it.
	first bool
	err   error
	// scratch is where arrays of structs are read into before they are
	// copied out at their length (codec_gen.go: one field per type).
	scratch scratch
}

// fromScratch is the i elements read into s, the scratch of their type,
// as a slice of their own of length and capacity i; s goes back to
// scratch cleared, so the next array of the type starts from zero values
// and the scratch holds no pointer into what was decoded.
func fromScratch[T any](s []T, i int, scratch *[]T) []T {
	out := append(make([]T, 0, i), s[:i]...)
	clear(s[:i])
	*scratch = s[:0]
	return out
}

type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string { return e.msg + " at offset " + strconv.Itoa(e.off) }

func (d *decoder) fail(msg string) {
	if d.err == nil {
		d.err = &syntaxError{msg, d.pos}
		d.pos = len(d.s) // ends every loop
	}
}

// finish is the error of the whole text: trailing data is one.
func (d *decoder) finish() error {
	d.ws()
	if d.err == nil && d.pos < len(d.s) {
		d.fail("invalid character " + quoteByte(d.s[d.pos]) + " after top-level value")
	}
	return d.err
}

func quoteByte(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	return strconv.QuoteRune(rune(c))
}

func (d *decoder) ws() {
	for d.pos < len(d.s) {
		switch d.s[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek is the next byte after white space, 0 at the end. It and null
// are not inlined: at every field and element of the generated code they
// cost the download more than the calls cost the planner.
//
//go:noinline
func (d *decoder) peek() byte {
	d.ws()
	if d.pos < len(d.s) {
		return d.s[d.pos]
	}
	return 0
}

func (d *decoder) unexpected(want string) {
	if d.pos >= len(d.s) {
		d.fail("unexpected end of JSON input")
		return
	}
	d.fail("invalid character " + quoteByte(d.s[d.pos]) + " looking for " + want)
}

// null consumes a null literal if one comes next.
//
//go:noinline
func (d *decoder) null() bool {
	if d.peek() == 'n' {
		d.literal("null")
		return d.err == nil
	}
	return false
}

func (d *decoder) literal(word string) {
	if strings.HasPrefix(d.s[d.pos:], word) {
		d.pos += len(word)
		return
	}
	d.pos++
	for _, c := range []byte(word[1:]) {
		if d.pos >= len(d.s) || d.s[d.pos] != c {
			d.unexpected("a literal")
			return
		}
		d.pos++
	}
}

// open starts an object ('{') or an array ('['). It is false for null (the
// value is left alone) and on an error: a value of another type is one.
func (d *decoder) open(c byte) bool {
	if d.null() || d.err != nil {
		return false
	}
	if d.peek() != c {
		d.mismatch(c)
		return false
	}
	if d.depth++; d.depth > maxDepth {
		d.fail("exceeded max depth")
		return false
	}
	d.pos++
	d.first = true
	return true
}

// mismatch fails on a well-formed value of the wrong type for want.
func (d *decoder) mismatch(want byte) {
	name := "a boolean"
	switch want {
	case '{':
		name = "an object"
	case '[':
		name = "an array"
	case '"':
		name = "a string"
	case '0':
		name = "a number"
	}
	start := d.pos
	d.skip()
	if d.err == nil {
		value := d.s[start:d.pos]
		if len(value) > 20 {
			value = value[:20] + "…"
		}
		d.pos = start
		d.fail("cannot decode " + value + " as " + name)
	}
}

// more moves to the next element of the object or array open started,
// consuming its comma, and is false at the closing byte.
func (d *decoder) more(closing byte) bool {
	first := d.first
	d.first = false
	c := d.peek()
	switch {
	case d.err != nil:
		return false
	case c == closing:
		d.pos++
		d.depth--
		return false
	case first:
		return true
	case c == ',':
		d.pos++
		return true
	}
	if closing == '}' {
		d.unexpected("comma or end of object")
	} else {
		d.unexpected("comma or end of array")
	}
	return false
}

// key reads an object's key and its colon.
func (d *decoder) key() string {
	if d.peek() != '"' {
		d.unexpected("beginning of object key string")
		return ""
	}
	k := d.rawString()
	if d.peek() != ':' {
		d.unexpected("colon after object key")
		return ""
	}
	d.pos++
	return k
}

// cursor finds the members of one object among the names of its struct.
type cursor struct{ off, i int }

// find is the index of key among names (joined by commas): an exact match,
// else a case-insensitive one as encoding/json accepts, else -1. Members
// usually come in the struct's order, so the search starts after the last
// match and wraps around.
func (c *cursor) find(key, names string) int {
	off, i := c.off, c.i
	for {
		name, next := names[off:], 0
		if end := strings.IndexByte(name, ','); end >= 0 {
			name, next = name[:end], off+end+1
		}
		if name == key {
			c.off, c.i = next, i+1
			if next == 0 {
				c.i = 0
			}
			return i
		}
		if i++; next == 0 {
			i = 0
		}
		if off = next; off == c.off {
			break
		}
	}
	i = 0
	for name := range strings.SplitSeq(names, ",") {
		if strings.EqualFold(key, name) {
			return i
		}
		i++
	}
	return -1
}

// rawString reads a string token: a slice of the input when it has no
// escapes and is valid UTF-8, else unquoted as encoding/json does (invalid
// UTF-8 and lone surrogates become U+FFFD).
func (d *decoder) rawString() string {
	d.pos++ // the opening quote
	start := d.pos
	for i := start; i < len(d.s); i++ {
		c := d.s[i]
		if c == '"' {
			d.pos = i + 1
			return d.s[start:i]
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return d.unquote(start, i)
		}
	}
	d.pos = len(d.s)
	d.fail("unexpected end of JSON input")
	return ""
}

// unquote continues a string whose first plain bytes are s[start:i].
func (d *decoder) unquote(start, i int) string {
	b := []byte(d.s[start:i])
	for i < len(d.s) {
		c := d.s[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return string(b)
		case c < 0x20:
			d.pos = i
			d.fail("invalid character " + quoteByte(c) + " in string literal")
			return ""
		case c == '\\':
			n, ok := d.escape(&b, i)
			if !ok {
				return ""
			}
			i = n
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(d.s[i:])
			b = utf8.AppendRune(b, r) // RuneError for an invalid byte
			i += size
		}
	}
	d.pos = len(d.s)
	d.fail("unexpected end of JSON input")
	return ""
}

// escape appends the escape at s[i] to b and returns where the string goes
// on.
func (d *decoder) escape(b *[]byte, i int) (int, bool) {
	if i+1 >= len(d.s) {
		d.pos = len(d.s)
		d.fail("unexpected end of JSON input")
		return 0, false
	}
	if c := unescape(d.s[i+1]); c != 0 {
		*b = append(*b, c)
		return i + 2, true
	}
	r := d.hex4(i)
	if r < 0 {
		d.pos = i + 1
		d.fail("invalid character in string escape code")
		return 0, false
	}
	i += 6
	if utf16.IsSurrogate(rune(r)) {
		if r2 := d.hex4(i); r2 >= 0 {
			if dec := utf16.DecodeRune(rune(r), rune(r2)); dec != utf8.RuneError {
				*b = utf8.AppendRune(*b, dec)
				return i + 6, true
			}
		}
		r = utf8.RuneError
	}
	*b = utf8.AppendRune(*b, rune(r))
	return i, true
}

// unescape is the byte a one-letter escape stands for, or 0.
func unescape(c byte) byte {
	switch c {
	case '"', '\\', '/':
		return c
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return 0
}

// hex4 is the code of a \uXXXX escape at s[i], or -1.
func (d *decoder) hex4(i int) int {
	if i+6 > len(d.s) || d.s[i] != '\\' || d.s[i+1] != 'u' {
		return -1
	}
	n := 0
	for _, c := range []byte(d.s[i+2 : i+6]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		n = n<<4 | int(c)
	}
	return n
}

// number reads a number token, checked against JSON's grammar, or "" when
// the value is null or an error.
func (d *decoder) number() string {
	if d.null() || d.err != nil {
		return ""
	}
	c := d.peek()
	if c != '-' && (c < '0' || c > '9') {
		d.mismatch('0')
		return ""
	}
	start := d.pos
	if c == '-' {
		d.pos++
	}
	switch {
	case d.pos < len(d.s) && d.s[d.pos] == '0':
		d.pos++
	case d.pos < len(d.s) && d.s[d.pos] >= '1' && d.s[d.pos] <= '9':
		d.digits()
	default:
		d.unexpected("digit in numeric literal")
		return ""
	}
	if d.pos < len(d.s) && d.s[d.pos] == '.' {
		d.pos++
		if !d.digits() {
			return ""
		}
	}
	if d.pos < len(d.s) && (d.s[d.pos] == 'e' || d.s[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.s) && (d.s[d.pos] == '+' || d.s[d.pos] == '-') {
			d.pos++
		}
		if !d.digits() {
			return ""
		}
	}
	return d.s[start:d.pos]
}

// digits reads one or more digits.
func (d *decoder) digits() bool {
	start := d.pos
	for d.pos < len(d.s) && d.s[d.pos] >= '0' && d.s[d.pos] <= '9' {
		d.pos++
	}
	if d.pos == start {
		d.unexpected("digit in numeric literal")
		return false
	}
	return true
}

// skip reads any value, checking it, for a field no shape has.
func (d *decoder) skip() {
	switch c := d.peek(); {
	case c == '{':
		for d.open('{'); d.more('}'); {
			d.key()
			d.skip()
		}
	case c == '[':
		for d.open('['); d.more(']'); {
			d.skip()
		}
	case c == '"':
		d.rawString()
	case c == 't':
		d.literal("true")
	case c == 'f':
		d.literal("false")
	case c == 'n':
		d.literal("null")
	default:
		d.skipNumber()
	}
}

// skipNumber reads a number where skip found no other value.
func (d *decoder) skipNumber() {
	c := d.peek()
	if c != '-' && (c < '0' || c > '9') {
		d.unexpected("beginning of value")
		return
	}
	d.number()
}

// raw is the text of the next value, for a type's own UnmarshalJSON.
func (d *decoder) raw() string {
	start := d.peekPos()
	d.skip()
	return d.s[start:d.pos]
}

func (d *decoder) peekPos() int {
	d.ws()
	return d.pos
}

// wrap records an error a type's own unmarshaler returned.
func (d *decoder) wrap(err error) {
	if err != nil && d.err == nil {
		d.err = err
		d.pos = len(d.s)
	}
}
