package dcm

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// TestTextAsFmt: the helpers that stand in for fmt in the browser's build
// write what fmt writes.
func TestTextAsFmt(t *testing.T) {
	for _, s := range []string{"", "abc", "0123456789abcdef", "ébcdefghijklmnop", "日本語のテキストです。長い"} {
		for _, n := range []int{0, 1, 3, 12} {
			if got, want := Short(s, n), fmt.Sprintf("%.*s", n, s); got != want {
				t.Errorf("Short(%q, %d) = %q, want %q", s, n, got, want)
			}
		}
	}
	for _, b := range [][]byte{nil, {0}, {0xde, 0xad, 0xbe, 0xef}, []byte("hello")} {
		if got, want := Hex(b), fmt.Sprintf("%x", b); got != want {
			t.Errorf("Hex(%v) = %q, want %q", b, got, want)
		}
	}
	for _, v := range []uint64{0, 1, 0xabc, 1<<64 - 1} {
		for _, w := range []int{0, 8, 16} {
			if got, want := HexUint(v, w), fmt.Sprintf("%0*x", w, v); got != want {
				t.Errorf("HexUint(%d, %d) = %q, want %q", v, w, got, want)
			}
		}
	}
	err := Wrap("reading", fs.ErrNotExist)
	if want := fmt.Errorf("reading: %w", fs.ErrNotExist); err.Error() != want.Error() || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Wrap: %q (is ErrNotExist: %v), want %q", err, errors.Is(err, fs.ErrNotExist), want)
	}
}
