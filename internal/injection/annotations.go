package injection

import (
	"fmt"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/kube"
)

// The annotation fields of the corpus come from kube's table, one per row,
// so that a new annotation is written hostile values without anyone
// remembering to list it here: its value type says how a hostile value is
// wrapped in a valid one and what the refusal must say.

// annotationCorpus is how the corpus writes one annotation.
type annotationCorpus struct {
	wrap   func(hostile string) string
	long   string
	reason string
}

// corpusOf is the corpus of a row; false for the rows whose values never
// reach HAProxy (the class, the workload of a Service: the tests of ignored
// fields cover them).
func corpusOf(a kube.Annotation) (annotationCorpus, bool) {
	valid := a.Default
	if valid == "" {
		valid = a.Example
	}
	suffixed := func(pad string) annotationCorpus {
		return annotationCorpus{func(h string) string { return valid + h + Marker }, valid + Marker + strings.Repeat(pad, 300), dcm.RejectInvalidValue}
	}
	host := annotationCorpus{func(h string) string { return Marker + h + "x.example.com" }, Marker + strings.Repeat("a", 61) + ".example.com", dcm.RejectInvalidHost}
	switch {
	case a.Refused != "":
		// Refused whatever it holds.
		return annotationCorpus{inName, Marker + strings.Repeat("a", 300), dcm.RejectUnsupported}, true
	case a.Type == kube.ValueBool:
		return suffixed("e"), true
	case a.Type == kube.ValueEnum, a.Type == kube.ValueCookieName:
		return suffixed("a"), true
	case a.Type == kube.ValueInt, a.Type == kube.ValueCount, a.Type == kube.ValueMaxConn, a.Type == kube.ValueTimeout, a.Type == kube.ValueHSTS:
		return suffixed("0"), true
	case a.Type == kube.ValueSources, a.Type == kube.ValueSourceRanges:
		// A hostile byte inside the last entry, or a separator before
		// an entry that is no address.
		return suffixed("0"), true
	case a.Type == kube.ValueWeights:
		return annotationCorpus{func(h string) string { return "web=80," + inName(h) + "=20" },
			"web=80," + Marker + strings.Repeat("a", 61) + "=20", dcm.RejectInvalidName}, true
	case a.Type == kube.ValueSecretName:
		return annotationCorpus{inName, Marker + strings.Repeat("a", 251), dcm.RejectInvalidName}, true
	case a.Type == kube.ValueHost:
		return host, true
	case a.Type == kube.ValueRewriteTarget:
		// A path, so only longer than any path is too long.
		return annotationCorpus{func(h string) string { return valid + h + Marker }, valid + Marker + strings.Repeat("a", dcm.MaxRewriteTarget), dcm.RejectInvalidValue}, true
	case a.Type == kube.ValueString, a.Type == kube.ValueWorkload:
		return annotationCorpus{}, false
	case a.Type == kube.ValueHeaders:
		// Header values take spaces, quotes, ';' and '#' (a CSP does):
		// they reach HAProxy hex-encoded, never raw. dcm/kube's
		// headers_injection_test.go checks each hostile value is refused
		// or encoded.
		return annotationCorpus{}, false
	}
	panic(fmt.Sprintf("injection: annotation %s: no corpus for value type %q", a.Name, a.Type))
}

// servedWith prepares an Ingress on which the annotation would be served
// but for its value: the reencrypt annotations need a host in spec.tls, the
// server name a CA as well, so that the hostile value alone is refused.
func servedWith(i *networkingv1.Ingress, name string) {
	switch name {
	case kube.AnnotationBackendCA, kube.AnnotationBackendServerName, kube.AnnotationReencrypt:
		i.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{i.Spec.Rules[0].Host}, SecretName: "web-tls"}}
	}
	if name == kube.AnnotationBackendServerName {
		i.Annotations[kube.AnnotationBackendCA] = "web-ca"
	}
	if name == kube.AnnotationCookieName {
		i.Annotations[kube.AnnotationSticky] = "true" // a name needs a cookie
	}
}

// annotationName is the short name of an annotation in a case's name.
func annotationName(a kube.Annotation) string {
	_, short, _ := strings.Cut(a.Name, "/")
	return short + " annotation"
}

func ingressAnnotationFields() []Field {
	var out []Field
	for _, a := range kube.AnnotationsOf(kube.KindIngress) {
		c, ok := corpusOf(a)
		if !ok {
			continue
		}
		out = append(out, Field{Name: annotationName(a), Set: func(i *ing, _ *slice, v string) {
			servedWith(i, a.Name)
			i.Annotations[a.Name] = v
		}, Wrap: c.wrap, Long: c.long, Reason: c.reason, Path: a.Field()})
	}
	return out
}

func routeAnnotationFields() []RouteField {
	var out []RouteField
	for _, a := range kube.AnnotationsOf(kube.KindRoute) {
		c, ok := corpusOf(a)
		if !ok {
			continue
		}
		out = append(out, RouteField{Name: "route " + annotationName(a), Set: func(r route, v string) { annotations(r)[a.Name] = v },
			Wrap: c.wrap, Long: c.long, Reason: c.reason, Path: a.Field()})
	}
	return out
}
