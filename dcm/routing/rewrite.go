package routing

import (
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// RewriteValue is a route's rewrite map entry, "<prefix>|<target>": a
// request whose path starts with prefix gets target in its place, as
// OpenShift's `replace-path ^<path>(.*)$ <target>\1`, and its `/?` after
// the path when the target is "/" (/foo/bar → /bar, /foo → /). A route
// without a path of its own (path "/") has prefix "": OpenShift's route
// without spec.path puts the target before the whole path. Both parts are
// route-path characters (dcm.ValidateRewriteTarget), so '|' cannot occur
// in either; "" when the route has no rewrite.
func RewriteValue(r dcm.Route) string {
	t := r.HTTP.RewriteTarget
	if t == "" || r.Kind == dcm.KindPassthrough {
		return ""
	}
	prefix := r.Path
	if prefix == "/" {
		prefix = ""
	}
	return prefix + "|" + t
}

// validateRewriteValue checks a rewrite map value: a prefix that is empty
// or a route path, then a rewrite target.
func validateRewriteValue(field, v string) error {
	bad := &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: field, Value: v}
	prefix, target, ok := strings.Cut(v, "|")
	if !ok || target == "" || prefix != "" && dcm.ValidatePath(field, prefix) != nil {
		return bad
	}
	if dcm.ValidateRewriteTarget(field, target) != nil {
		return bad
	}
	return nil
}
