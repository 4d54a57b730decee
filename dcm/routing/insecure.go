package routing

import (
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// ActionNone is the action of the None policy: fe_http answers as for a
// request no route matches.
const ActionNone = "none"

// InsecureAction is the value an insecure map holds for a route: "none",
// or "redirect-<code>"; "" for Allow, which has no entry.
func InsecureAction(r dcm.Route) string {
	switch r.InsecureEffective() {
	case dcm.InsecureRedirect:
		return "redirect-" + strconv.Itoa(r.RedirectStatus())
	case dcm.InsecureNone:
		if r.Kind == dcm.KindPassthrough {
			return "" // its host is in no HTTP map: nothing to stop
		}
		return ActionNone
	}
	return ""
}

// ValidateInsecureAction checks a value of an insecure map.
func ValidateInsecureAction(field, s string) error {
	if s == ActionNone {
		return nil
	}
	if code, ok := strings.CutPrefix(s, "redirect-"); ok {
		for _, c := range dcm.RedirectCodes {
			if code == strconv.Itoa(c) {
				return nil
			}
		}
	}
	return &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: field, Value: s}
}
