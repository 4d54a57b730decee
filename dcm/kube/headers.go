package kube

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dcm-router/dcm/dcm"
)

// Annotations of an Ingress's header actions: the Ingress equivalent of a
// Route's spec.httpHeaders.actions.request and .response.
const (
	AnnotationRequestHeaders  = "dcm.io/request-headers"
	AnnotationResponseHeaders = "dcm.io/response-headers"
)

// ValueHeaders is a list of header actions, one a line: "Name: value"
// sets the header to value (a format string as a Route's set.value),
// "delete Name" deletes it. Blank lines are skipped. No header name holds
// a space, so the two forms cannot be confused.
const ValueHeaders ValueType = "header actions"

// headersDoc is the doc of the two rows.
const headersDoc = `One header action a line, run in order on the %s: "Name: value" sets the header (value as a Route's set.value: text, %%%% for a %%, %%[%s(name)] and %%[ssl_c_der] with lower and base64), "delete Name" deletes it; at most 20, each name once. Cookie, Set-Cookie, Proxy, Strict-Transport-Security and the headers that frame a message are refused.`

// ParseHeaderLines reads a ValueHeaders annotation. The field of a
// refusal is the annotation's, whichever line is wrong.
func ParseHeaderLines(field, v string, request bool) ([]dcm.HeaderAction, error) {
	var out []dcm.HeaderAction
	for _, line := range strings.Split(v, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if name, ok := strings.CutPrefix(line, "delete "); ok {
			out = append(out, dcm.HeaderAction{Name: strings.TrimSpace(name), Type: dcm.HeaderDelete})
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, &dcm.InvalidError{Reason: dcm.RejectInvalidValue, Field: field, Value: v}
		}
		out = append(out, dcm.HeaderAction{Name: name, Type: dcm.HeaderSet, Value: strings.TrimSpace(value)})
	}
	h := &dcm.HeaderActions{Response: out}
	if request {
		h = &dcm.HeaderActions{Request: out}
	}
	if err := dcm.ValidateHeaderActions(h); err != nil {
		return nil, invalidAt(err, field, v)
	}
	return out, nil
}

// ingressHeaders reads the two annotations; nil when neither is set.
func ingressHeaders(ann map[string]string) (*dcm.HeaderActions, error) {
	req, _, err := annotationValue[[]dcm.HeaderAction](ann, AnnotationRequestHeaders)
	if err != nil {
		return nil, err
	}
	res, _, err := annotationValue[[]dcm.HeaderAction](ann, AnnotationResponseHeaders)
	if err != nil {
		return nil, err
	}
	if len(req) == 0 && len(res) == 0 {
		return nil, nil
	}
	return &dcm.HeaderActions{Request: req, Response: res}, nil
}

// routeHTTPHeaders is the part of a Route's spec.httpHeaders dcm reads.
type routeHTTPHeaders struct {
	Actions struct {
		Request  []routeHeaderAction `json:"request"`
		Response []routeHeaderAction `json:"response"`
	} `json:"actions"`
}

type routeHeaderAction struct {
	Name   string `json:"name"`
	Action struct {
		Type string `json:"type"`
		Set  *struct {
			Value string `json:"value"`
		} `json:"set"`
	} `json:"action"`
}

// routeHeaders reads spec.httpHeaders.actions of a Route; nil without
// actions. A refusal names the action's field.
func routeHeaders(rawSpec map[string]any) (*dcm.HeaderActions, error) {
	raw, ok := rawSpec["httpHeaders"].(map[string]any)
	if !ok {
		if rawSpec["httpHeaders"] != nil {
			return nil, routeErr(dcm.RejectInvalidValue, "spec.httpHeaders", "not an object")
		}
		return nil, nil
	}
	var hh routeHTTPHeaders
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &hh); err != nil {
		return nil, routeErr(dcm.RejectInvalidValue, "spec.httpHeaders", err.Error())
	}
	h := &dcm.HeaderActions{}
	for _, l := range []struct {
		field string
		in    []routeHeaderAction
		out   *[]dcm.HeaderAction
	}{{"request", hh.Actions.Request, &h.Request}, {"response", hh.Actions.Response, &h.Response}} {
		for i, a := range l.in {
			act := dcm.HeaderAction{Name: a.Name, Type: a.Action.Type}
			if a.Action.Set != nil {
				if a.Action.Type != dcm.HeaderSet {
					field := "spec.httpHeaders.actions." + l.field + "[" + strconv.Itoa(i) + "].action.set"
					return nil, routeErr(dcm.RejectInvalidValue, field, "set with type "+a.Action.Type)
				}
				act.Value = a.Action.Set.Value
			}
			*l.out = append(*l.out, act)
		}
	}
	if h.Empty() {
		return nil, nil
	}
	if err := dcm.ValidateHeaderActions(h); err != nil {
		var ie *dcm.InvalidError
		if errors.As(err, &ie) {
			return nil, &dcm.InvalidError{Reason: ie.Reason, Field: "spec." + ie.Field, Value: ie.Value}
		}
		return nil, fmt.Errorf("spec.httpHeaders: %w", err)
	}
	return h, nil
}
