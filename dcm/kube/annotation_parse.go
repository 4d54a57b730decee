package kube

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// annotationField is the field path a rejection for annotation name names.
func annotationField(name string) string { return "metadata.annotations[" + name + "]" }

// Field is the field path rejections for the annotation name.
func (a Annotation) Field() string { return annotationField(a.Name) }

// Check reports whether dcm serves v as the annotation's value; a refusal is
// a *dcm.InvalidError with the reason, the annotation's field and v.
func (a Annotation) Check(v string) error {
	_, err := a.parse(v)
	return err
}

// parse reads v as the row's type: a bool, an int, a []dcm.ServiceRef
// (weights), a *dcm.WorkloadRef (workload), a []string (sources, canonical)
// or v itself (the others).
func (a Annotation) parse(v string) (any, error) {
	field := a.Field()
	bad := func(reason string) error { return &dcm.InvalidError{Reason: reason, Field: field, Value: v} }
	if a.Refused != "" || slices.Contains(a.Unsupported, v) {
		return nil, bad(dcm.RejectUnsupported)
	}
	switch a.Type {
	case ValueBool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, bad(dcm.RejectInvalidValue)
		}
		return b, nil
	case ValueInt, ValueEnum:
		// Values are written canonically, so membership also refuses
		// "+301" and "0302".
		if !slices.Contains(a.Values, v) {
			return nil, bad(dcm.RejectInvalidValue)
		}
		if a.Type == ValueEnum {
			return v, nil
		}
		return strconv.Atoi(v)
	case ValueWeights:
		return ParseWeights(field, v)
	case ValueSecretName:
		if err := dcm.ValidateDNSSubdomain(field, v); err != nil {
			return nil, invalidAt(err, field, v)
		}
		return v, nil
	case ValueHost:
		if err := dcm.ValidateHost(field, v); err != nil || v == "" {
			return nil, invalidAt(cmpErr(err, dcm.RejectInvalidHost, field, v), field, v)
		}
		return v, nil
	case ValueWorkload:
		return ParseWorkload(field, v)
	case ValueSources, ValueSourceRanges:
		list, err := dcm.ParseAllowlist(field, v, a.Type == ValueSourceRanges)
		if err != nil {
			return nil, invalidAt(err, field, v)
		}
		return list, nil
	case ValueCount:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > dcm.MaxRateLimit || strconv.Itoa(n) != v {
			return nil, bad(dcm.RejectInvalidValue)
		}
		return n, nil
	case ValueTimeout:
		ms, err := dcm.ParseTimeout(field, v)
		if err != nil {
			return nil, bad(dcm.RejectInvalidValue)
		}
		return ms, nil
	case ValueHSTS:
		h, err := dcm.ParseHSTS(field, v)
		if err != nil {
			return nil, bad(dcm.RejectInvalidValue)
		}
		return h, nil
	case ValueCookieName:
		if dcm.ValidateCookieName(field, v) != nil {
			return nil, bad(dcm.RejectInvalidValue)
		}
		return v, nil
	case ValueRewriteTarget:
		if v == "" || dcm.ValidateRewriteTarget(field, v) != nil {
			return nil, bad(dcm.RejectInvalidValue)
		}
		return v, nil
	case ValueMaxConn:
		n, err := strconv.Atoi(v)
		if err != nil || dcm.ValidateMaxConn(field, n) != nil || strconv.Itoa(n) != v {
			return nil, bad(dcm.RejectInvalidValue)
		}
		return n, nil
	case ValueString:
		return v, nil
	case ValueHeaders:
		return ParseHeaderLines(field, v, a.Name == AnnotationRequestHeaders)
	}
	return nil, fmt.Errorf("annotation %s: unknown value type %q", a.Name, a.Type)
}

// annotationValue reads annotation name of an object: its value as T (the
// row's Default when unset, the zero T when the row has none), whether the
// object sets it, and the refusal of a value dcm does not serve. T must be
// what parse gives for the row's type; a mismatch is a bug and panics.
func annotationValue[T any](ann map[string]string, name string) (val T, set bool, err error) {
	a := annotationRow(name)
	raw, set := ann[name]
	if !set {
		if a.Default == "" {
			return val, false, nil
		}
		// The table test parses every Default: this cannot fail.
		raw = a.Default
	}
	v, err := a.parse(raw)
	if err != nil {
		return val, set, err
	}
	return v.(T), set, nil
}

// refuseUnhonoured refuses an object of kind that carries an annotation dcm
// reads but does not honour: serving it regardless would serve it
// otherwise than its author asked.
func refuseUnhonoured(ann map[string]string, kind string) error {
	for _, a := range annotationTable {
		if v, ok := ann[a.Name]; ok && a.Refused != "" && slices.Contains(a.Kinds, kind) {
			return a.Check(v)
		}
	}
	return nil
}

// ParseWeights reads the weights annotation: "primary=80,alternate=20",
// service names that are DNS labels, weights in 0..256, at most
// dcm.MaxServices services, none twice. Ports are the route's business.
func ParseWeights(field, v string) ([]dcm.ServiceRef, error) {
	bad := func(reason string) error { return &dcm.InvalidError{Reason: reason, Field: field, Value: v} }
	if len(v) > 1024 {
		return nil, bad(dcm.RejectInvalidValue)
	}
	var out []dcm.ServiceRef
	for _, part := range strings.Split(v, ",") {
		name, weight, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return nil, bad(dcm.RejectInvalidValue)
		}
		if dcm.ValidateDNSLabel(field, name) != nil {
			return nil, bad(dcm.RejectInvalidName)
		}
		w, err := strconv.Atoi(weight)
		if err != nil || w < 0 || w > dcm.MaxWeight || strconv.Itoa(w) != weight {
			return nil, bad(dcm.RejectInvalidValue)
		}
		out = append(out, dcm.ServiceRef{Name: name, Weight: w})
	}
	if err := dcm.ValidateServices(out); err != nil {
		return nil, invalidAt(err, field, v)
	}
	return out, nil
}

// ParseWorkload reads "Deployment/web" or "StatefulSet/db" (kind
// case-insensitive) into a WorkloadRef with the canonical kind.
func ParseWorkload(field, s string) (*dcm.WorkloadRef, error) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok {
		return nil, &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: field, Value: s}
	}
	k, err := canonicalKind(kind)
	if err != nil {
		return nil, &dcm.InvalidError{Reason: dcm.RejectUnsupported, Field: field, Value: s}
	}
	if err := dcm.ValidateDNSSubdomain(field, name); err != nil {
		return nil, invalidAt(err, field, s)
	}
	return &dcm.WorkloadRef{Kind: k, Name: name}, nil
}

func canonicalKind(kind string) (string, error) {
	switch {
	case strings.EqualFold(kind, WorkloadDeployment):
		return WorkloadDeployment, nil
	case strings.EqualFold(kind, WorkloadStatefulSet):
		return WorkloadStatefulSet, nil
	}
	return "", fmt.Errorf("unsupported workload kind %q: want Deployment or StatefulSet", kind)
}
