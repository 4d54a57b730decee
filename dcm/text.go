package dcm

import "strconv"

// The model and the planner are compiled to WebAssembly for the browser's
// what-if, and fmt would bring reflect and os along (some 40 KB of the
// download, gzipped): they format text with these instead.

// wrapped says what failed, then why, as fmt.Errorf("…: %w") does.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg + ": " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

// Wrap returns err behind msg: "msg: err", with errors.Is and errors.As
// seeing err.
func Wrap(msg string, err error) error { return &wrapped{msg: msg, err: err} }

// Short is s cut to its first n characters, as %.ns prints it.
func Short(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// Hex writes b in lower-case hexadecimal, as encoding/hex does.
func Hex(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&0xf]
	}
	return string(out)
}

// HexUint writes v in lower-case hexadecimal, zero-padded to width digits,
// as %0<width>x does.
func HexUint(v uint64, width int) string {
	s := strconv.FormatUint(v, 16)
	for len(s) < width {
		s = "0" + s
	}
	return s
}
