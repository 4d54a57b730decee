package views

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dcm-router/dcm/dcm"
)

// The words pages use for ops and server states are declared here as data,
// once: the pages render them through OpText and DisplayState, and
// internal/jsgen writes the same tables into web/display_gen.js for the
// scripts that keep the pages live, so the two cannot drift.

// OpWord is how one kind of op reads. Text holds the op's fields by their
// JSON names in braces: {cert.host} is a field of an object field, {set#}
// the length of a list, {cert.version:12} at most its first 12 characters.
type OpWord struct {
	// Kinds are the op kinds the line is for; none stands for every kind
	// no line before it matched.
	Kinds []dcm.OpKind
	// When names an object field (cert, upstream) the line needs; an op
	// without it reads as the next line of its kind.
	When string
	Text string
}

// OpWords says how every op reads, as dcm.Op.String does (a test holds the
// two equal); the first line that matches an op wins.
func OpWords() []OpWord {
	certs := []dcm.OpKind{dcm.OpCertAdd, dcm.OpCertUpdate, dcm.OpCertDel}
	cas := []dcm.OpKind{dcm.OpCAAdd, dcm.OpCADel}
	return []OpWord{
		{Kinds: []dcm.OpKind{dcm.OpMapReplace}, Text: "{op} {map} +{set#} -{del#}"},
		{Kinds: certs, When: "cert", Text: "{op} {cert.host} {cert.secret}@{cert.version:12}"},
		{Kinds: certs, Text: "{op}"},
		{Kinds: cas, When: "upstream", Text: "{op} {upstream.ca}@{upstream.version:12}"},
		{Kinds: cas, Text: "{op}"},
		{Kinds: []dcm.OpKind{dcm.OpAddServer}, When: "upstream",
			Text: "{op} {backend}/{server} {addr}:{port} weight {weight} ssl ca {upstream.version:12} sni {upstream.serverName}"},
		{Kinds: []dcm.OpKind{dcm.OpAddServer}, Text: "{op} {backend}/{server} {addr}:{port} weight {weight}"},
		{Kinds: []dcm.OpKind{dcm.OpSetAddr}, Text: "{op} {backend}/{server} {addr}:{port}"},
		{Kinds: []dcm.OpKind{dcm.OpSetState}, Text: "{op} {backend}/{server} {state}"},
		{Kinds: []dcm.OpKind{dcm.OpSetWeight}, Text: "{op} {backend}/{server} {weight}"},
		{Kinds: []dcm.OpKind{dcm.OpSetMaxConn}, Text: "{op} {backend}/{server} {maxConn}"},
		{Text: "{op} {backend}/{server}"},
	}
}

// OpLine is an OpWord parsed, in the form web/display_gen.js carries.
type OpLine struct {
	Kinds []dcm.OpKind `json:"kinds,omitempty"`
	When  string       `json:"when,omitempty"`
	Parts []OpPart     `json:"parts"`
}

// OpPart is literal text, or a field of the op.
type OpPart struct {
	Lit   string   `json:"lit,omitempty"`
	Field []string `json:"field,omitempty"` // JSON names, from the op down
	Count bool     `json:"count,omitempty"` // the length of a list
	Max   int      `json:"max,omitempty"`   // at most this many characters
	// Zero is how an absent field reads: JSON leaves out a zero number,
	// which Go prints as 0.
	Zero string `json:"zero,omitempty"`
}

var opType = reflect.TypeFor[dcm.Op]()

// parsedOpLines parses OpWords once: a page of a large preview renders
// thousands of ops.
var parsedOpLines = sync.OnceValue(OpLines)

// OpLines parses OpWords; a field that dcm.Op lacks is a programming error.
func OpLines() []OpLine {
	words := OpWords()
	out := make([]OpLine, len(words))
	for i, w := range words {
		parts, err := parseOpText(w.Text)
		if err != nil {
			panic(fmt.Sprintf("views: OpWords[%d]: %v", i, err))
		}
		out[i] = OpLine{Kinds: w.Kinds, When: w.When, Parts: parts}
	}
	return out
}

func parseOpText(text string) ([]OpPart, error) {
	var parts []OpPart
	for text != "" {
		open := strings.IndexByte(text, '{')
		if open < 0 {
			return append(parts, OpPart{Lit: text}), nil
		}
		if open > 0 {
			parts = append(parts, OpPart{Lit: text[:open]})
		}
		end := strings.IndexByte(text[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("unclosed { in %q", text)
		}
		p, err := parseOpField(text[open+1 : open+end])
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
		text = text[open+end+1:]
	}
	return parts, nil
}

func parseOpField(spec string) (OpPart, error) {
	var p OpPart
	if name, limit, ok := strings.Cut(spec, ":"); ok {
		n, err := strconv.Atoi(limit)
		if err != nil || n <= 0 {
			return p, fmt.Errorf("{%s}: a limit is a positive number", spec)
		}
		spec, p.Max = name, n
	}
	spec, p.Count = strings.CutSuffix(spec, "#")
	p.Field = strings.Split(spec, ".")
	t, err := fieldType(p.Field)
	if err != nil {
		return p, err
	}
	switch {
	case p.Count && t.Kind() != reflect.Slice:
		return p, fmt.Errorf("{%s#}: not a list", spec)
	case !p.Count && t.Kind() == reflect.Int:
		p.Zero = "0"
	case !p.Count && t.Kind() != reflect.String:
		return p, fmt.Errorf("{%s}: neither text nor a number", spec)
	}
	return p, nil
}

// fieldType follows JSON names through dcm.Op's fields.
func fieldType(path []string) (reflect.Type, error) {
	t := opType
	for _, name := range path {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		i := jsonField(t, name)
		if i < 0 {
			return nil, fmt.Errorf("%s has no field %q", t, name)
		}
		t = t.Field(i).Type
	}
	return t, nil
}

// jsonField is the index of the field of struct type t that JSON names
// name, or -1.
func jsonField(t reflect.Type, name string) int {
	if t.Kind() != reflect.Struct {
		return -1
	}
	for i := range t.NumField() {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if tag == name {
			return i
		}
	}
	return -1
}

// OpText is how an op reads in the audit log and the what-if preview.
func OpText(op dcm.Op) string {
	v := reflect.ValueOf(op)
	for _, line := range parsedOpLines() {
		if len(line.Kinds) > 0 && !slices.Contains(line.Kinds, op.Kind) {
			continue
		}
		if w := field(v, []string{line.When}); line.When != "" && (!w.IsValid() || w.IsZero()) {
			continue
		}
		var b strings.Builder
		for _, p := range line.Parts {
			b.WriteString(p.text(v))
		}
		return b.String()
	}
	return string(op.Kind)
}

func (p OpPart) text(op reflect.Value) string {
	if p.Field == nil {
		return p.Lit
	}
	v := field(op, p.Field)
	var s string
	switch {
	case !v.IsValid():
		s = p.Zero
	case p.Count:
		s = strconv.Itoa(v.Len())
	case v.Kind() == reflect.Int:
		s = strconv.FormatInt(v.Int(), 10)
	default:
		s = v.String()
	}
	if r := []rune(s); p.Max > 0 && len(r) > p.Max {
		s = string(r[:p.Max])
	}
	return s
}

// field follows JSON names from v; the zero Value past a nil pointer.
func field(v reflect.Value, path []string) reflect.Value {
	for _, name := range path {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}
			}
			v = v.Elem()
		}
		i := jsonField(v.Type(), name)
		if i < 0 {
			return reflect.Value{}
		}
		v = v.Field(i)
	}
	return v
}

// StateRule shows a server in a display state: its admin state is State,
// or its health is Health.
type StateRule struct {
	State  dcm.AdminState `json:"state,omitempty"`
	Health string         `json:"health,omitempty"`
	Show   string         `json:"show"`
}

// StateRules decide a server's display state, first match first; a server
// no rule matches is ready. Drain and maint are what someone asked for, so
// they show even when the health check fails.
func StateRules() []StateRule {
	return []StateRule{
		{State: dcm.StateDrain, Show: StateDrain},
		{State: dcm.StateMaint, Show: StateMaint},
		{Health: "DOWN", Show: StateDown},
	}
}
