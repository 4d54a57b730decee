package dcm

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseAllowlist(t *testing.T) {
	for _, tt := range []struct {
		in     string
		commas bool
		want   []string
		bad    string // the entry the refusal names
	}{
		{in: "", want: nil},
		{in: "   ", want: nil},
		{in: "10.1.2.3/8 10.0.0.0/8\t192.168.0.1", want: []string{"10.0.0.0/8", "192.168.0.1"}},
		{in: "2001:DB8:0:0::1 ::ffff:10.0.0.1 ::/0", want: []string{"2001:db8::1", "::/0", "::ffff:10.0.0.1"}},
		{in: "1.2.3.4/32 ::1/128", want: []string{"1.2.3.4", "::1"}},
		{in: "10.0.0.0/8,10.0.0.1", commas: true, want: []string{"10.0.0.0/8", "10.0.0.1"}},
		{in: "10.0.0.0/8,10.0.0.1", bad: "10.0.0.0/8,10.0.0.1"},
		{in: "10.0.0.0/33", bad: "10.0.0.0/33"},
		{in: "fe80::1%eth0", bad: "fe80::1%eth0"},
		{in: "10.0.0.1;x", bad: "10.0.0.1;x"},
		{in: "example.com", bad: "example.com"},
		{in: "10.0.0.1\n10.0.0.2", bad: "10.0.0.1\n10.0.0.2"},
		{in: "010.0.0.1", bad: "010.0.0.1"},
	} {
		got, err := ParseAllowlist("f", tt.in, tt.commas)
		var ie *InvalidError
		switch {
		case tt.bad != "":
			if !errors.As(err, &ie) || ie.Reason != RejectInvalidValue || ie.Value != tt.bad {
				t.Errorf("%q: %v, want a refusal of %q", tt.in, err, tt.bad)
			}
		case err != nil || !slices.Equal(got, tt.want):
			t.Errorf("%q: %q, %v, want %q", tt.in, got, err, tt.want)
		default:
			if err := ValidateAllowlist("f", got); err != nil {
				t.Errorf("%q: the parsed list is refused: %v", tt.in, err)
			}
		}
	}
	many := strings.Repeat("10.0.0.1 ", MaxAllowlist+1)
	if _, err := ParseAllowlist("f", many, false); err == nil {
		t.Errorf("%d entries accepted", MaxAllowlist+1)
	}
	for _, bad := range [][]string{{"10.0.0.1/8"}, {"::1", "10.0.0.1"}, {"10.0.0.1", "10.0.0.1"}, {""}} {
		if ValidateAllowlist("f", bad) == nil {
			t.Errorf("ValidateAllowlist(%q) accepted", bad)
		}
	}
}
