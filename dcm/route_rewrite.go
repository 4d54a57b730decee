package dcm

// MapRewrite is the setting map of a route's rewrite target: keyed by its
// HAProxy backend, its value says which path prefix to replace by what
// (routing.RewriteValue), read by a Lua action.
const MapRewrite MapTable = "rewrite"

// MaxRewriteTarget bounds a rewrite target, as a route path is bounded.
const MaxRewriteTarget = 1024

// ValidateRewriteTarget checks a rewrite target as OpenShift's router
// accepts it (^/.*$), narrowed to the characters a route path may have:
// the value reaches a map file and an `add map` command, where white
// space, ';', '#' and quotes would be read as syntax. OpenShift's own
// escapes (a backslash, '#' ending the value, "\1") are HAProxy regex
// syntax dcm does not pass through, so they are refused rather than
// served otherwise than written. "" is no rewrite.
func ValidateRewriteTarget(field, s string) error {
	if s == "" {
		return nil
	}
	if s[0] != '/' || len(s) > MaxRewriteTarget {
		return invalid(RejectInvalidValue, field, s)
	}
	for i := 0; i < len(s); i++ {
		if !pathByte(s[i]) {
			return invalid(RejectInvalidValue, field, s)
		}
	}
	return nil
}

// validateRewrite checks a route's rewrite target against its kind: a
// passthrough route's requests are never read.
func validateRewrite(r Route) error {
	t := r.HTTP.RewriteTarget
	if err := ValidateRewriteTarget("rewrite target", t); err != nil {
		return err
	}
	if t != "" && r.Kind == KindPassthrough {
		return invalid(RejectUnsupported, "rewrite target on a passthrough route", t)
	}
	return nil
}
