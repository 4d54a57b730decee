package codec

import (
	"errors"
	"strconv"
	"time"
)

// time.Time's own MarshalJSON and UnmarshalJSON go through the time
// package's general layout formatter and parser, about 19 KB of the
// planner's gzipped download; these follow their RFC 3339 fast paths.

// encTime writes t as time.Time.MarshalJSON does: RFC 3339 with the
// nanoseconds that are not zero, Z for UTC, an error for a year outside
// [0,9999] or a zone of 24 hours or more.
func encTime(e *encoder, k string, t *time.Time) {
	e.key(k)
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	_, offset := t.Zone()
	zone := offset / 60
	if year < 0 || year > 9999 || zone <= -24*60 || zone >= 24*60 {
		if e.err == nil {
			e.err = errors.New("Time.MarshalJSON: year outside of range [0,9999] or timezone hour outside of range [0,23]")
		}
		e.b = append(e.b, "null"...)
		return
	}
	b := append(e.b, '"')
	b = append2(append2(b, year/100), year%100)
	b = append2(append(b, '-'), int(month))
	b = append2(append(b, '-'), day)
	b = append2(append(b, 'T'), hour)
	b = append2(append(b, ':'), minute)
	b = append2(append(b, ':'), sec)
	if ns := t.Nanosecond(); ns != 0 {
		frac := strconv.AppendInt(nil, int64(ns)+1e9, 10)[1:] // nine digits
		for frac[len(frac)-1] == '0' {
			frac = frac[:len(frac)-1]
		}
		b = append(append(b, '.'), frac...)
	}
	switch {
	case offset == 0:
		b = append(b, 'Z')
	case zone < 0:
		b = append2(append(append2(append(b, '-'), -zone/60), ':'), -zone%60)
	default:
		b = append2(append(append2(append(b, '+'), zone/60), ':'), zone%60)
	}
	e.b = append(b, '"')
}

// append2 writes 0 ≤ n < 100 in two digits.
func append2(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }

// decTime reads what encTime writes, as time.Time.UnmarshalJSON does: null
// leaves *t alone; the zone is time.Local when its offset is Local's at
// that instant, else a fixed zone. UnmarshalJSON also takes the looser
// forms its general parser accepts (a one-digit hour, a comma before the
// fraction); this refuses them.
func decTime(d *decoder, t *time.Time) {
	if d.null() || d.err != nil {
		return
	}
	start := d.peekPos()
	var s string
	if decStr(d, &s); d.err != nil {
		return
	}
	if d.s[start+1:d.pos-1] != s { // UnmarshalJSON does not unescape
		d.timeError(start)
		return
	}
	v, ok := parseRFC3339(s)
	if !ok {
		d.timeError(start)
		return
	}
	*t = v
}

// timeError is the error of a time that parseRFC3339 refuses.
type timeError struct{ syntaxError }

// IsTimeError says err is about a time in a form decTime refuses, which
// time.Time.UnmarshalJSON may accept.
func IsTimeError(err error) bool {
	var te *timeError
	return errors.As(err, &te)
}

func (d *decoder) timeError(start int) {
	d.err = &timeError{syntaxError{"time " + d.s[start:d.pos] + " is not RFC 3339", start}}
	d.pos = len(d.s)
}

func parseRFC3339(s string) (time.Time, bool) {
	ok := true
	num := func(from, to, lo, hi int) int {
		n, good := digitsIn(s[from:to], lo, hi)
		ok = ok && good
		return n
	}
	if len(s) < len("2006-01-02T15:04:05") {
		return time.Time{}, false
	}
	year, month := num(0, 4, 0, 9999), num(5, 7, 1, 12)
	day := num(8, 10, 1, 31)
	hour, minute, sec := num(11, 13, 0, 23), num(14, 16, 0, 59), num(17, 19, 0, 59)
	if !ok || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
		day > time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day() {
		return time.Time{}, false
	}
	s = s[19:]
	nsec := 0
	if len(s) >= 2 && s[0] == '.' && s[1] >= '0' && s[1] <= '9' {
		n := 1
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		for i, scale := 1, int(1e8); i < n && i <= 9; i, scale = i+1, scale/10 {
			nsec += int(s[i]-'0') * scale
		}
		s = s[n:]
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if s == "Z" {
		return t, true
	}
	if len(s) != len("-07:00") {
		return time.Time{}, false
	}
	s = "0000000000000" + s // so that num's offsets read the zone
	hr, mm := num(14, 16, 0, 23), num(17, 19, 0, 59)
	if !ok || (s[13] != '-' && s[13] != '+') || s[16] != ':' {
		return time.Time{}, false
	}
	offset := (hr*60 + mm) * 60
	if s[13] == '-' {
		offset = -offset
	}
	t = t.Add(-time.Duration(offset) * time.Second)
	if _, local := t.In(time.Local).Zone(); local == offset {
		return t.In(time.Local), true
	}
	return t.In(time.FixedZone("", offset)), true
}

// digitsIn reads s, decimal digits only, as a number in [lo, hi].
//
//go:noinline
func digitsIn(s string, lo, hi int) (int, bool) {
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return lo, false
		}
		n = n*10 + int(c-'0')
	}
	return n, lo <= n && n <= hi
}
