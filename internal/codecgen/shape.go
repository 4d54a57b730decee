package main

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// field is one JSON member of a struct, as encoding/json sees it.
type field struct {
	name      string // the JSON key
	path      string // the Go selector from the struct: "Route" or "Inner.Route"
	typ       reflect.Type
	omitempty bool
	omitzero  bool
}

var (
	marshalerType       = reflect.TypeFor[json.Marshaler]()
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// fieldsOf lists the JSON members of struct t in order, embedded structs'
// members promoted. A rule of encoding/json this generator does not follow
// is an error, so that a new field is never encoded differently.
func fieldsOf(t reflect.Type) ([]field, error) {
	var out []field
	if err := collect(t, "", &out); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, f := range out {
		lower := strings.ToLower(f.name)
		if seen[lower] {
			return nil, fmt.Errorf("%v: two fields named %q (or equal but for case): not supported", t, f.name)
		}
		seen[lower] = true
	}
	return out, nil
}

func collect(t reflect.Type, prefix string, out *[]field) error {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, hasTag := sf.Tag.Lookup("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && !hasTag {
			if sf.Type.Kind() != reflect.Struct {
				return fmt.Errorf("%v.%s: embedded %v: not supported", t, sf.Name, sf.Type)
			}
			// The generated code cannot name an unexported embedded
			// field: it reaches the fields promoted through it.
			inner := prefix
			if sf.IsExported() {
				inner += sf.Name + "."
			}
			if err := collect(sf.Type, inner, out); err != nil {
				return err
			}
			continue
		}
		if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		if strings.ContainsAny(name, "\"\\,") {
			return fmt.Errorf("%v.%s: JSON name %q: not supported", t, sf.Name, name)
		}
		f := field{name: name, path: prefix + sf.Name, typ: sf.Type}
		for o := range strings.SplitSeq(opts, ",") {
			switch o {
			case "omitempty":
				f.omitempty = true
			case "omitzero":
				f.omitzero = true
			case "":
			default:
				return fmt.Errorf("%v.%s: tag option %q: not supported", t, sf.Name, o)
			}
		}
		*out = append(*out, f)
	}
	return nil
}

// custom says how a type's own methods encode and decode it: "json" for
// MarshalJSON/UnmarshalJSON, "text" for MarshalText/UnmarshalText, "" for
// neither. encoding/json calls a pointer receiver's MarshalJSON only on
// addressable values; the generated code could not tell, so it refuses.
func custom(t reflect.Type) (enc, dec string, err error) {
	switch {
	case t.Implements(marshalerType):
		enc = "json"
	case reflect.PointerTo(t).Implements(marshalerType):
		return "", "", fmt.Errorf("%v: MarshalJSON with a pointer receiver: not supported", t)
	case t.Implements(textMarshalerType):
		enc = "text"
	case reflect.PointerTo(t).Implements(textMarshalerType):
		return "", "", fmt.Errorf("%v: MarshalText with a pointer receiver: not supported", t)
	}
	switch p := reflect.PointerTo(t); {
	case p.Implements(unmarshalerType):
		dec = "json"
	case p.Implements(textUnmarshalerType):
		dec = "text"
	}
	if t.Kind() == reflect.Pointer && (enc != "" || dec != "") {
		return "", "", fmt.Errorf("%v: a pointer type with its own JSON methods: not supported", t)
	}
	return enc, dec, nil
}
