package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/dcm-router/dcm/dcm"
)

// OpenShift Routes (route.openshift.io/v1) are dcm's second source of
// routes. dcm reads them through the dynamic client, so it needs neither
// OpenShift's client library nor its types: this file holds the small
// typed subset it honours and the conversion into dcm.Route.

// RouteGVR is the resource of OpenShift Routes.
var RouteGVR = schema.GroupVersionResource{Group: "route.openshift.io", Version: "v1", Resource: "routes"}

// KindRoute is the kind of an OpenShift Route in rejections.
const KindRoute = "Route"

// DefaultRouteWeight is the weight of spec.to and of an alternate backend
// that names none, as OpenShift's API defaults it.
const DefaultRouteWeight = 100

// MaxAlternateBackends is OpenShift's limit on spec.alternateBackends.
const MaxAlternateBackends = dcm.MaxServices - 1

// routeSpec is the part of a Route's spec dcm honours.
type routeSpec struct {
	Host           string        `json:"host"`
	Subdomain      string        `json:"subdomain"`
	Path           string        `json:"path"`
	To             routeTarget   `json:"to"`
	Alternates     []routeTarget `json:"alternateBackends"`
	Port           *routePort    `json:"port"`
	TLS            *routeTLS     `json:"tls"`
	WildcardPolicy string        `json:"wildcardPolicy"`
}

type routeTarget struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Weight *int64 `json:"weight"`
}

type routePort struct {
	TargetPort intstr.IntOrString `json:"targetPort"`
}

type routeTLS struct {
	Termination              string               `json:"termination"`
	Certificate              string               `json:"certificate"`
	Key                      string               `json:"key"`
	CACertificate            string               `json:"caCertificate"`
	DestinationCACertificate string               `json:"destinationCACertificate"`
	InsecurePolicy           string               `json:"insecureEdgeTerminationPolicy"`
	ExternalCertificate      *externalCertificate `json:"externalCertificate"`
}

// RouteOptions tune the conversion of Routes.
type RouteOptions struct {
	// Subdomain, when set, gives a Route without spec.host the host
	// <name>-<namespace>.<Subdomain> (or <spec.subdomain>.<Subdomain>), as
	// OpenShift's routerCanonicalHostname/ingress domain does. Empty: such a
	// Route is rejected, because nothing else would give it a host.
	Subdomain string
	// AllowWildcard serves wildcardPolicy Subdomain (--allow-wildcard-routes);
	// without it such a Route is refused.
	AllowWildcard bool
}

// ConvertedRoute is a Route as dcm serves it, with the PEMs it carries
// inline. The PEMs go to the Source's store and nowhere else: the route
// holds only their versions.
type ConvertedRoute struct {
	Route dcm.Route
	// CertPEM is the inline certificate, its chain and key (nil: the
	// default certificate serves the host).
	CertPEM []byte
	// CAPEM is the inline destinationCACertificate of a reencrypt Route
	// (nil: the CA of --default-backend-ca-file).
	CAPEM []byte
}

func routeErr(reason, field, value string) error {
	return &dcm.InvalidError{Reason: reason, Field: field, Value: value}
}

// RouteFromOpenShift converts a route.openshift.io/v1 Route into the route
// dcm serves. Every string that reaches HAProxy is validated; anything dcm
// does not serve the way the Route asks is rejected with the field and a
// reason, never served differently. Errors never carry a key.
func RouteFromOpenShift(obj *unstructured.Unstructured, opts RouteOptions) (ConvertedRoute, error) {
	ns, name := obj.GetNamespace(), obj.GetName()
	if err := dcm.ValidateDNSLabel("metadata.namespace", ns); err != nil {
		return ConvertedRoute{}, err
	}
	if err := dcm.ValidateDNSSubdomain("metadata.name", name); err != nil {
		return ConvertedRoute{}, err
	}
	rawSpec, ok := obj.Object["spec"].(map[string]any)
	if !ok {
		return ConvertedRoute{}, routeErr(dcm.RejectInvalidValue, "spec", "missing or not an object")
	}
	var spec routeSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rawSpec, &spec); err != nil {
		// The decoder's message names the field and type, not the data.
		return ConvertedRoute{}, routeErr(dcm.RejectInvalidValue, "spec", err.Error())
	}

	r := dcm.Route{
		Namespace: ns,
		Name:      dcm.RouteNamePrefix + name,
		Source:    dcm.SourceRoute,
		Object:    name,
		Kind:      dcm.KindHTTP,
		PathType:  dcm.PathPrefix,
		Balance:   dcm.BalanceRoundRobin,
		Check:     true,
	}
	var err error
	if r.Host, err = routeHost(ns, name, spec, opts); err != nil {
		return ConvertedRoute{}, err
	}
	if spec.Path == "" {
		r.Path = "/"
	} else {
		r.Path = dcm.NormalizePath(spec.Path, dcm.PathPrefix)
		if err := dcm.ValidatePath("spec.path", r.Path); err != nil {
			return ConvertedRoute{}, invalidAt(err, "spec.path", spec.Path)
		}
	}
	if r.Services, err = routeServices(spec); err != nil {
		return ConvertedRoute{}, err
	}
	if r.Headers, err = routeHeaders(rawSpec); err != nil {
		return ConvertedRoute{}, err
	}
	if err := routeAnnotations(obj.GetAnnotations(), &r); err != nil {
		return ConvertedRoute{}, err
	}
	out := ConvertedRoute{}
	if spec.TLS != nil {
		if out, err = routeTLSOf(ns, name, spec.TLS, &r); err != nil {
			return ConvertedRoute{}, err
		}
	}
	tcpBalanceDefault(obj.GetAnnotations(), AnnotationRouteBalance, &r.Balance, r.Kind == dcm.KindPassthrough)
	out.Route = r
	if err := dcm.ValidateRoute(r); err != nil {
		return ConvertedRoute{}, err
	}
	if err := dcm.ValidateInsecure(r); err != nil {
		return ConvertedRoute{}, invalidAt(err, "spec.tls.insecureEdgeTerminationPolicy", string(r.Insecure))
	}
	return out, nil
}

func routeHost(ns, name string, spec routeSpec, opts RouteOptions) (string, error) {
	wild, err := routeWildcard(spec.WildcardPolicy, opts)
	if err != nil {
		return "", err
	}
	host := strings.ToLower(spec.Host)
	field, raw := "spec.host", spec.Host
	if host == "" {
		if opts.Subdomain == "" {
			return "", routeErr(dcm.RejectUnsupported, "spec.host", "empty (dcm gives hosts only with --route-subdomain)")
		}
		if spec.Subdomain != "" {
			field, raw = "spec.subdomain", spec.Subdomain
			host = strings.ToLower(spec.Subdomain) + "." + opts.Subdomain
		} else {
			field, raw = "metadata.name", name
			host = name + "-" + ns + "." + opts.Subdomain
		}
	}
	if err := dcm.ValidateHost(field, host); err != nil {
		return "", invalidAt(err, field, raw)
	}
	if wild {
		return wildcardHost(field, raw, host)
	}
	return host, nil
}

func routeServices(spec routeSpec) ([]dcm.ServiceRef, error) {
	if len(spec.Alternates) > MaxAlternateBackends {
		return nil, routeErr(dcm.RejectUnsupported, "spec.alternateBackends",
			fmt.Sprintf("%d (at most %d)", len(spec.Alternates), MaxAlternateBackends))
	}
	port, err := routeTargetPort(spec.Port)
	if err != nil {
		return nil, err
	}
	targets := append([]routeTarget{spec.To}, spec.Alternates...)
	out := make([]dcm.ServiceRef, 0, len(targets))
	for i, t := range targets {
		field := "spec.to"
		if i > 0 {
			field = fmt.Sprintf("spec.alternateBackends[%d]", i-1)
		}
		if t.Kind != "" && t.Kind != "Service" {
			return nil, routeErr(dcm.RejectUnsupported, field+".kind", t.Kind)
		}
		if err := dcm.ValidateDNSLabel(field+".name", t.Name); err != nil {
			return nil, err
		}
		w := int64(DefaultRouteWeight)
		if t.Weight != nil {
			w = *t.Weight
		}
		if w < 0 || w > dcm.MaxWeight {
			return nil, routeErr(dcm.RejectInvalidValue, field+".weight", strconv.FormatInt(w, 10))
		}
		out = append(out, dcm.ServiceRef{Name: t.Name, Port: port, Weight: int(w)})
	}
	if err := dcm.ValidateServices(out); err != nil {
		return nil, invalidAt(err, "spec.alternateBackends", RejectMessage(err))
	}
	return out, nil
}

// routeTargetPort reads spec.port.targetPort. In OpenShift it names the
// port on the endpoints, not the Service's port: a name is the Service
// port's name (which is what EndpointSlices call their ports), a number the
// endpoint's (container's) port number. dcm keeps it as written; the Source
// resolves it against the EndpointSlices (routePortName). No port: the
// Service's first port.
func routeTargetPort(p *routePort) (string, error) {
	if p == nil {
		return "", nil
	}
	const field = "spec.port.targetPort"
	t := p.TargetPort
	if t.Type == intstr.Int {
		if err := dcm.ValidatePort(field, int(t.IntVal)); err != nil {
			return "", err
		}
		return strconv.Itoa(int(t.IntVal)), nil
	}
	if n, err := strconv.Atoi(t.StrVal); err == nil {
		// "8080" as a string: an IANA port name has a letter, so this can
		// only mean the number.
		if err := dcm.ValidatePort(field, n); err != nil || strconv.Itoa(n) != t.StrVal {
			return "", routeErr(dcm.RejectInvalidPort, field, t.StrVal)
		}
		return t.StrVal, nil
	}
	if err := dcm.ValidatePortName(field, t.StrVal); err != nil {
		return "", err
	}
	return t.StrVal, nil
}

// routeAnnotations reads the OpenShift router's annotations dcm honours
// through the table, and refuses those it reads but does not honour.
func routeAnnotations(ann map[string]string, r *dcm.Route) error {
	balance, _, err := annotationValue[string](ann, AnnotationRouteBalance)
	if err != nil {
		return err
	}
	disable, _, err := annotationValue[bool](ann, AnnotationRouteDisableCookies)
	if err != nil {
		return err
	}
	r.Balance, r.Sticky = balance, !disable
	if r.Allowlist, err = routeAllowlist(ann); err != nil {
		return err
	}
	if r.RateLimit, err = rateLimitOf(ann, routeRateLimits); err != nil {
		return err
	}
	// The kind comes from spec.tls later: dcm.ValidateRoute refuses
	// what a passthrough or plain Route cannot have.
	if r.HTTP, err = httpOptions(ann, KindRoute, false); err != nil {
		return err
	}
	if err := routeKnobs(ann, r); err != nil {
		return err
	}
	return refuseUnhonoured(ann, KindRoute)
}

// routeAllowlist reads ip_allowlist, else its older name ip_whitelist, as
// OpenShift's router prefers them; both are checked.
func routeAllowlist(ann map[string]string) ([]string, error) {
	allow, set, err := annotationValue[[]string](ann, AnnotationRouteIPAllowlist)
	if err != nil {
		return nil, err
	}
	white, _, err := annotationValue[[]string](ann, AnnotationRouteIPWhitelist)
	if err != nil || set {
		return allow, err
	}
	return white, nil
}

// routeTLSOf reads spec.tls into the route's kind, certificate, upstream
// TLS and insecure policy, and returns the inline PEMs.
func routeTLSOf(ns, name string, t *routeTLS, r *dcm.Route) (ConvertedRoute, error) {
	var out ConvertedRoute
	switch t.InsecurePolicy {
	case "", "None":
		// OpenShift's default: no plain HTTP for a TLS route.
		r.Insecure = dcm.InsecureNone
	case "Allow":
		r.Insecure = dcm.InsecureAllow
	case "Redirect":
		r.Insecure = dcm.InsecureRedirect
	default:
		return out, routeErr(dcm.RejectInvalidValue, "spec.tls.insecureEdgeTerminationPolicy", t.InsecurePolicy)
	}
	switch t.Termination {
	case "edge", "reencrypt":
		if t.Termination == "edge" {
			r.Kind = dcm.KindEdge
			if t.DestinationCACertificate != "" {
				return out, routeErr(dcm.RejectInvalidValue, "spec.tls.destinationCACertificate", "set on an edge route")
			}
		} else {
			r.Kind = dcm.KindReencrypt
		}
		r.TLS = &dcm.TLSRef{Secret: dcm.RouteCertRef(ns, name)}
		if t.ExternalCertificate != nil {
			if err := externalCertOf(ns, t, r); err != nil {
				return out, err
			}
		} else if t.Certificate != "" || t.Key != "" {
			pem, version, err := InlineCert(t.Certificate, t.CACertificate, t.Key)
			if err != nil {
				return out, err
			}
			r.TLS.Version, out.CertPEM = version, pem
		} else if t.CACertificate != "" {
			return out, routeErr(dcm.RejectInvalidValue, "spec.tls.caCertificate", "without certificate and key")
		}
		if r.Kind == dcm.KindReencrypt {
			// As OpenShift verifies: with the service CA, each pod's
			// certificate must name its own Service (the service-serving
			// certificates do), alternate backends' too; with the Route's
			// own CA, the chain only, no SNI.
			r.Upstream = &dcm.UpstreamTLS{CA: CADefault, ServerName: r.Services[0].Name + "." + ns + ".svc", PerService: true}
			if t.DestinationCACertificate != "" {
				r.Upstream.ServerName, r.Upstream.PerService = "", false
				ca := []byte(withNewline(t.DestinationCACertificate))
				version, err := ParseCA(ca)
				if err != nil {
					return out, invalidAt(err, "spec.tls.destinationCACertificate", RejectMessage(err))
				}
				out.CAPEM = ca
				r.Upstream.CA, r.Upstream.Version = dcm.RouteCertPrefix+ns+"/"+name, version
			}
			// Without one, OpenShift trusts its service CA: dcm the file
			// of --default-backend-ca-file (the Source checks it is set).
		}
	case "passthrough":
		r.Kind = dcm.KindPassthrough
		for f, v := range map[string]string{"certificate": t.Certificate, "key": t.Key, "caCertificate": t.CACertificate,
			"destinationCACertificate": t.DestinationCACertificate} {
			if v != "" {
				// The pods hold the certificate of a passed-through host.
				return out, routeErr(dcm.RejectInvalidValue, "spec.tls."+f, "set on a passthrough route")
			}
		}
		if t.ExternalCertificate != nil {
			return out, routeErr(dcm.RejectInvalidValue, "spec.tls.externalCertificate", "set on a passthrough route")
		}
		if r.Path != "/" {
			return out, routeErr(dcm.RejectUnsupported, "spec.path", "passthrough with path "+r.Path)
		}
		if r.Insecure == dcm.InsecureAllow {
			return out, routeErr(dcm.RejectUnsupported, "spec.tls.insecureEdgeTerminationPolicy", "Allow on a passthrough route")
		}
		// A cookie needs HTTP; HAProxy never reads a passed-through request.
		r.Sticky = false
	default:
		return out, routeErr(dcm.RejectInvalidValue, "spec.tls.termination", t.Termination)
	}
	return out, nil
}

// InlineCert checks a Route's inline certificate, chain and key the way
// HAProxy will load them (SecretCert does the same for Secrets) and returns
// the PEM HAProxy gets — certificate, chain, key — and its version.
func InlineCert(cert, chain, key string) (out []byte, version string, err error) {
	if cert == "" {
		return nil, "", routeErr(dcm.RejectInvalidValue, "spec.tls.certificate", "empty")
	}
	if key == "" {
		return nil, "", routeErr(dcm.RejectInvalidValue, "spec.tls.key", "empty")
	}
	crt := withNewline(cert)
	if chain != "" {
		crt += withNewline(chain)
	}
	if err := checkKeyPair([]byte(crt), []byte(key)); err != nil {
		return nil, "", routeErr(dcm.RejectInvalidValue, "spec.tls", err.Error())
	}
	out = []byte(crt + withNewline(key))
	sum := sha256.Sum256(out)
	return out, hex.EncodeToString(sum[:16]), nil
}

func withNewline(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}
