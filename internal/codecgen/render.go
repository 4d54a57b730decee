package main

import (
	"encoding/json"
	"fmt"
	"go/format"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// gen writes the codec of the roots and of every type they reach: one dec
// and one enc function per struct, pointer, slice, map or type with its own
// JSON methods; basic kinds use the package's generic readers and writers.
type gen struct {
	imports map[string]string // package path → name
	ids     map[string]reflect.Type
	done    map[reflect.Type]bool
	queue   []reflect.Type
	funcs   strings.Builder
	// scratch lists the element types of the arrays of structs, by id:
	// each has a field of the decoder's scratch (see fromScratch).
	scratch []string
}

func newGen() *gen {
	return &gen{imports: map[string]string{}, ids: map[string]reflect.Type{}, done: map[reflect.Type]bool{}}
}

// typeName is t as Go source in the generated file.
func (g *gen) typeName(t reflect.Type) string {
	if t.Name() != "" && t.PkgPath() != "" {
		name := t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:]
		g.imports[t.PkgPath()] = name
		return name + "." + t.Name()
	}
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + g.typeName(t.Elem())
	case reflect.Slice:
		return "[]" + g.typeName(t.Elem())
	case reflect.Map:
		return "map[" + g.typeName(t.Key()) + "]" + g.typeName(t.Elem())
	}
	return t.String()
}

// id names t's functions: decRoute, encSliceRoute, decMapStringInt.
func (g *gen) id(t reflect.Type) (string, error) {
	var id string
	switch {
	case t.Name() != "":
		id = t.Name()
		if strings.ContainsAny(id, "[]") {
			return "", fmt.Errorf("%v: generic types are not supported", t)
		}
		id = strings.ToUpper(id[:1]) + id[1:]
	case t.Kind() == reflect.Pointer:
		id = "Ptr"
	case t.Kind() == reflect.Slice:
		id = "Slice"
	case t.Kind() == reflect.Map:
		k, err := g.id(t.Key())
		if err != nil {
			return "", err
		}
		id = "Map" + k
	default:
		return "", fmt.Errorf("%v: not supported", t)
	}
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		if t.Name() != "" {
			return "", fmt.Errorf("%v: a named %s type: not supported", t, t.Kind())
		}
		e, err := g.id(t.Elem())
		if err != nil {
			return "", err
		}
		id += e
	}
	if other, ok := g.ids[id]; ok && other != t {
		return "", fmt.Errorf("%v and %v would share the functions of %s", t, other, id)
	}
	g.ids[id] = t
	return id, nil
}

// basics are the generic readers and writers of codec by kind.
var basics = map[reflect.Kind]string{
	reflect.String: "Str", reflect.Bool: "Bool", reflect.Float64: "Float64", reflect.Float32: "Float32",
	reflect.Int: "Int", reflect.Int8: "Int", reflect.Int16: "Int", reflect.Int32: "Int", reflect.Int64: "Int",
	reflect.Uint: "Uint", reflect.Uint16: "Uint", reflect.Uint32: "Uint", reflect.Uint64: "Uint", reflect.Uintptr: "Uint",
}

// ref is the function that reads (dir "dec") or writes ("enc") a *t: a
// generic one instantiated for a basic kind, else a generated one, queued.
func (g *gen) ref(dir string, t reflect.Type, call bool) (string, error) {
	if t == reflect.TypeFor[time.Time]() {
		return dir + "Time", nil // codec's own, see wasm/codec/time.go
	}
	enc, dec, err := custom(t)
	if err != nil {
		return "", err
	}
	if b, ok := basics[t.Kind()]; ok && enc == "" && dec == "" {
		if call {
			return dir + b, nil
		}
		return dir + b + "[" + g.typeName(t) + "]", nil
	}
	id, err := g.id(t)
	if err != nil {
		return "", err
	}
	if !g.done[t] {
		g.done[t] = true
		g.queue = append(g.queue, t)
	}
	return dir + id, nil
}

// common are the kinds with a method of their own on the decoder and the
// encoder: a call to a generic function costs each call site a dictionary.
var common = map[reflect.Kind]struct{ method, goType, encMethod, encType string }{
	reflect.String: {"str", "string", "str", "string"}, reflect.Bool: {"boolean", "bool", "boolean", "bool"},
	reflect.Int: {"int", "int", "int64", "int64"}, reflect.Int64: {"int64", "int64", "int64", "int64"},
	reflect.Uint64: {"uint64", "uint64", "uint64", "uint64"}, reflect.Float64: {"float64", "float64", "float64", "float64"},
}

// decStmt reads into *p, p a Go expression of type *t.
func (g *gen) decStmt(t reflect.Type, p string) (string, error) {
	if c, ok := common[t.Kind()]; ok && g.plain(t) {
		if t.Name() != c.goType || t.PkgPath() != "" {
			p = "(*" + c.goType + ")(" + p + ")"
		}
		return "d." + c.method + "(" + p + ")\n", nil
	}
	fn, err := g.ref("dec", t, true)
	return fn + "(d, " + p + ")\n", err
}

// encStmt writes *p, p a Go expression of type *t, as the member quoted
// key ("" for none).
func (g *gen) encStmt(t reflect.Type, key, p string) (string, error) {
	if c, ok := common[t.Kind()]; ok && g.plain(t) {
		x, ok := strings.CutPrefix(p, "&")
		if !ok {
			x = "*" + p
		}
		if t.Name() != c.encType || t.PkgPath() != "" {
			x = c.encType + "(" + x + ")"
		}
		return "e." + c.encMethod + "(" + key + ", " + x + ")\n", nil
	}
	fn, err := g.ref("enc", t, true)
	return fn + "(e, " + key + ", " + p + ")\n", err
}

// plain says t has no JSON or text methods of its own.
func (g *gen) plain(t reflect.Type) bool {
	enc, dec, err := custom(t)
	return err == nil && enc == "" && dec == "" && t != reflect.TypeFor[time.Time]()
}

// emit writes both functions of t.
func (g *gen) emit(t reflect.Type) error {
	id, err := g.id(t)
	if err != nil {
		return err
	}
	tn := g.typeName(t)
	enc, dec, err := custom(t)
	if err != nil {
		return err
	}
	decBody, err := g.decBody(t, dec)
	if err != nil {
		return err
	}
	encBody, err := g.encBody(t, enc)
	if err != nil {
		return err
	}
	fmt.Fprintf(&g.funcs, "\nfunc dec%s(d *decoder, v *%s) {\n%s}\n", id, tn, decBody)
	fmt.Fprintf(&g.funcs, "\nfunc enc%s(e *encoder, k string, v *%s) {\n%s}\n", id, tn, encBody)
	return nil
}

func (g *gen) decBody(t reflect.Type, custom string) (string, error) {
	switch {
	case custom == "json":
		return "decJSON(d, v.UnmarshalJSON)\n", nil
	case custom == "text":
		return "decText(d, v.UnmarshalText)\n", nil
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		elem, err := g.ref("dec", t.Elem(), false)
		if err != nil {
			return "", err
		}
		et := g.typeName(t.Elem())
		switch t.Kind() {
		case reflect.Pointer:
			read, err := g.decStmt(t.Elem(), "*v")
			return fmt.Sprintf("if d.null() {\n*v = nil\nreturn\n}\nif *v == nil {\n*v = new(%s)\n}\n%s", et, read), err
		case reflect.Slice:
			read, err := g.decStmt(t.Elem(), "&s[i]")
			if err != nil {
				return "", err
			}
			// As encoding/json: into the elements already there (a key
			// given twice), [] is an empty slice and not nil.
			start, end := "", ""
			if t.Elem().Kind() == reflect.Struct {
				// An array of structs into a slice with no room is read
				// into the decoder's scratch and copied out at its length:
				// grown element by element, the 100,000 servers of a
				// snapshot took three times their size and a copy at each
				// doubling, which the browser's heap grew for. An array
				// of the same type within takes its own while this one
				// holds the scratch.
				id, err := g.id(t.Elem())
				if err != nil {
					return "", err
				}
				if !slices.Contains(g.scratch, id) {
					g.scratch = append(g.scratch, id)
				}
				start = fmt.Sprintf("fresh := cap(s) == 0\nif fresh {\ns, d.scratch.%s = d.scratch.%s[:0], nil\n}\n", id, id)
				end = fmt.Sprintf("if fresh {\ns = fromScratch(s, i, &d.scratch.%s)\n}\n", id)
			}
			return fmt.Sprintf("if d.null() {\n*v = nil\nreturn\n}\nif !d.open('[') {\nreturn\n}\n"+
				"s, i := *v, 0\n%sfor ; d.more(']'); i++ {\nif i == len(s) {\nif i < cap(s) {\ns = s[:i+1]\n} else {\ns = append(s, %s)\n}\n}\n%s}\n"+
				"%sif i == 0 {\ns = []%s{}\n}\n*v = s[:i]\n", start, zeroLit(t.Elem(), et), read, end, et), nil
		}
		if t.Key().Kind() != reflect.String {
			return "", fmt.Errorf("%v: map keys must be strings", t)
		}
		return fmt.Sprintf("decMap(d, v, %s)\n", elem), nil
	case reflect.Struct:
		return g.decStruct(t)
	}
	return "", fmt.Errorf("%v: decoding a %s: not supported", t, t.Kind())
}

// zeroLit is the zero value of t (named et in the generated code).
func zeroLit(t reflect.Type, et string) string {
	switch k := t.Kind(); {
	case k == reflect.String:
		return `""`
	case k == reflect.Bool:
		return "false"
	case basics[k] != "":
		return "0"
	case k == reflect.Struct:
		return et + "{}"
	}
	return "nil"
}

func (g *gen) decStruct(t reflect.Type) (string, error) {
	fields, err := fieldsOf(t)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if len(fields) == 0 {
		return "if !d.open('{') {\nreturn\n}\nfor d.more('}') {\nd.key()\nd.skip()\n}\n", nil
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	fmt.Fprintf(&b, "if !d.open('{') {\nreturn\n}\nvar c cursor\nfor d.more('}') {\nswitch c.find(d.key(), %s) {\n", strconv.Quote(strings.Join(names, ",")))
	for i, f := range fields {
		read, err := g.decStmt(f.typ, "&v."+f.path)
		if err != nil {
			return "", fmt.Errorf("%v.%s: %w", t, f.path, err)
		}
		fmt.Fprintf(&b, "case %d:\n%s", i, read)
	}
	b.WriteString("default:\nd.skip()\n}\n}\n")
	return b.String(), nil
}

func (g *gen) encBody(t reflect.Type, custom string) (string, error) {
	switch {
	case custom == "json":
		return "encJSON(e, k, v.MarshalJSON)\n", nil
	case custom == "text":
		return "encText(e, k, v.MarshalText)\n", nil
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		elem, err := g.ref("enc", t.Elem(), false)
		if err != nil {
			return "", err
		}
		switch t.Kind() {
		case reflect.Pointer:
			write, err := g.encStmt(t.Elem(), "k", "*v")
			return fmt.Sprintf("if *v == nil {\ne.null(k)\nreturn\n}\n%s", write), err
		case reflect.Slice:
			write, err := g.encStmt(t.Elem(), `""`, "&(*v)[i]")
			return fmt.Sprintf("if *v == nil {\ne.null(k)\nreturn\n}\ne.array(k)\nfor i := range *v {\ne.comma(i)\n%s}\ne.end(']')\n", write), err
		}
		return fmt.Sprintf("encMap(e, k, v, %s)\n", elem), nil
	case reflect.Struct:
		return g.encStruct(t)
	}
	return "", fmt.Errorf("%v: encoding a %s: not supported", t, t.Kind())
}

func (g *gen) encStruct(t reflect.Type) (string, error) {
	fields, err := fieldsOf(t)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("e.open(k)\n")
	for _, f := range fields {
		key, _ := json.Marshal(f.name)
		write, err := g.encStmt(f.typ, strconv.Quote(string(key)+":"), "&v."+f.path)
		if err != nil {
			return "", fmt.Errorf("%v.%s: %w", t, f.path, err)
		}
		cond, err := g.keep(f)
		if err != nil {
			return "", fmt.Errorf("%v.%s: %w", t, f.path, err)
		}
		if cond != "" {
			write = "if " + cond + " {\n" + write + "}\n"
		}
		b.WriteString(write)
	}
	b.WriteString("e.end('}')\n")
	return b.String(), nil
}

// keep is the condition under which an omitempty or omitzero field is
// written, "" for always.
func (g *gen) keep(f field) (string, error) {
	x := "v." + f.path
	var conds []string
	if f.omitempty {
		switch k := f.typ.Kind(); {
		case k == reflect.String:
			conds = append(conds, x+` != ""`)
		case k == reflect.Bool:
			conds = append(conds, x)
		case basics[k] != "":
			conds = append(conds, x+" != 0")
		case k == reflect.Pointer:
			conds = append(conds, x+" != nil")
		case k == reflect.Slice || k == reflect.Map:
			conds = append(conds, "len("+x+") != 0")
		}
	}
	if f.omitzero {
		c, err := g.nonZero(f.typ, x)
		if err != nil {
			return "", err
		}
		conds = append(conds, c)
	}
	return strings.Join(conds, " && "), nil
}

// nonZero is the condition that x, of type t, is not its type's zero (or
// its IsZero method says so), as omitzero reads it.
func (g *gen) nonZero(t reflect.Type, x string) (string, error) {
	if m, ok := t.MethodByName("IsZero"); ok && m.Type.NumIn() == 1 && m.Type.NumOut() == 1 && m.Type.Out(0).Kind() == reflect.Bool {
		return "!" + x + ".IsZero()", nil
	}
	switch k := t.Kind(); {
	case k == reflect.String:
		return x + ` != ""`, nil
	case k == reflect.Bool:
		return x, nil
	case basics[k] != "":
		return x + " != 0", nil
	case k == reflect.Pointer || k == reflect.Slice || k == reflect.Map:
		return x + " != nil", nil
	case k == reflect.Struct && t.Comparable():
		return x + " != (" + g.typeName(t) + "{})", nil
	}
	return "", fmt.Errorf("omitzero on %v: not supported", t)
}

// render is the whole generated file for roots.
func render(roots []root) (string, error) {
	g := newGen()
	var api strings.Builder
	for _, r := range roots {
		dec, err := g.ref("dec", r.typ, false)
		if err != nil {
			return "", err
		}
		enc, _ := g.ref("enc", r.typ, false)
		tn := g.typeName(r.typ)
		fmt.Fprintf(&api, "\n// Decode%s reads %s from JSON text into v.\nfunc Decode%s(data string, v *%s) error {\nd := &decoder{s: data}\n%s(d, v)\nreturn d.finish()\n}\n", r.name, r.doc, r.name, tn, dec)
		fmt.Fprintf(&api, "\n// Append%s appends %s to b as JSON text.\nfunc Append%s(b []byte, v *%s) ([]byte, error) {\ne := &encoder{b: b}\n%s(e, \"\", v)\nreturn e.b, e.err\n}\n", r.name, r.doc, r.name, tn, enc)
	}
	for len(g.queue) > 0 {
		t := g.queue[0]
		g.queue = g.queue[1:]
		if err := g.emit(t); err != nil {
			return "", err
		}
	}
	var src strings.Builder
	src.WriteString(header + "\npackage codec\n\nimport (\n")
	paths := make([]string, 0, len(g.imports))
	for p := range g.imports {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	// The standard library first, as goimports groups them.
	slices.SortStableFunc(paths, func(a, b string) int { return cmpBool(strings.Contains(a, "."), strings.Contains(b, ".")) })
	for i, p := range paths {
		if i > 0 && strings.Contains(p, ".") != strings.Contains(paths[i-1], ".") {
			src.WriteString("\n")
		}
		fmt.Fprintf(&src, "%q\n", p)
	}
	src.WriteString(")\n" + api.String())
	src.WriteString("\n// scratch holds, per type, the last array of structs decoded, cleared:\n" +
		"// where the next one of its type is read before it is copied out (fromScratch).\ntype scratch struct {\n")
	for _, id := range g.scratch {
		fmt.Fprintf(&src, "%s []%s\n", id, g.typeName(g.ids[id]))
	}
	src.WriteString("}\n" + g.funcs.String())
	out, err := format.Source([]byte(src.String()))
	if err != nil {
		return src.String(), fmt.Errorf("formatting the generated code: %w", err)
	}
	return string(out), nil
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
