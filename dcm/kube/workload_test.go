package kube

import (
	"regexp"
	"testing"
)

// TestWorkloadOwnerNames: the pods' names are read by hand as these
// regular expressions read them (what they were before), over names
// built from the pieces that can tell them apart.
func TestWorkloadOwnerNames(t *testing.T) {
	deployment := regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*)-[a-z0-9]{6,10}-[a-z0-9]{5}$`)
	statefulSet := regexp.MustCompile(`^([a-z0-9][a-z0-9.-]*)-(?:0|[1-9][0-9]*)$`)
	pieces := []string{"", "-", "web", "a.b", "-x", "7d9f8c6b5", "7d9f8c", "7d9f8c6b5ab", "abcde", "abcd", "ABCDE", "0", "01", "12", "x_y", "."}
	var names []string
	for _, a := range pieces {
		for _, b := range pieces {
			for _, c := range pieces {
				names = append(names, a+"-"+b+"-"+c, a+b+"-"+c, a+"-"+b+c)
			}
		}
	}
	for _, n := range names {
		for _, tt := range []struct {
			re    *regexp.Regexp
			owner func(string) (string, bool)
		}{{deployment, deploymentOf}, {statefulSet, statefulSetOf}} {
			var want string
			m := tt.re.FindStringSubmatch(n)
			if m != nil {
				want = m[1]
			}
			if got, ok := tt.owner(n); got != want || ok != (m != nil) {
				t.Errorf("%q against %s: got %q %v, want %q %v", n, tt.re, got, ok, want, m != nil)
			}
		}
	}
}
