package codec

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

// TestHelpersNoShapeUsesYet: the readers and writers the generator emits
// for types the dcm shapes do not hold today (a float32, a type with its
// own JSON or text methods) agree with encoding/json.
func TestHelpersNoShapeUsesYet(t *testing.T) {
	type shape struct {
		F    float32        `json:"f"`
		T    time.Time      `json:"t"`
		Addr netip.Addr     `json:"addr"`
		Pfx  *netip.Prefix  `json:"pfx"`
		M    map[string]int `json:"m"`
	}
	dec := func(d *decoder, v *shape) {
		if !d.open('{') {
			return
		}
		var c cursor
		for d.more('}') {
			switch c.find(d.key(), "f,t,addr,pfx,m") {
			case 0:
				decFloat32(d, &v.F)
			case 1:
				decJSON(d, v.T.UnmarshalJSON)
			case 2:
				decText(d, v.Addr.UnmarshalText)
			case 3:
				if d.null() {
					v.Pfx = nil
				} else {
					v.Pfx = new(netip.Prefix)
					decText(d, v.Pfx.UnmarshalText)
				}
			case 4:
				decMap(d, &v.M, decInt[int])
			default:
				d.skip()
			}
		}
	}
	enc := func(e *encoder, v *shape) {
		e.open("")
		encFloat32(e, `"f":`, &v.F)
		encJSON(e, `"t":`, v.T.MarshalJSON)
		encText(e, `"addr":`, v.Addr.MarshalText)
		if v.Pfx == nil {
			e.null(`"pfx":`)
		} else {
			encText(e, `"pfx":`, v.Pfx.MarshalText)
		}
		encMap(e, `"m":`, &v.M, encInt[int])
		e.end('}')
	}
	for _, text := range []string{
		`{"f":1.5e-7,"t":"2026-12-03T15:00:00.5+01:00","addr":"10.0.0.1","pfx":"10.0.0.0/8","m":{"b":2,"a":1}}`,
		`{"f":3.4028235e38,"t":null,"addr":"::1","pfx":null,"m":{}}`,
		`{"f":1e39}`, `{"t":"yesterday"}`, `{"addr":"10.0.0.256"}`, `{"addr":7}`,
	} {
		var want, got shape
		jerr := json.Unmarshal([]byte(text), &want)
		d := &decoder{s: text}
		dec(d, &got)
		cerr := d.finish()
		if (jerr == nil) != (cerr == nil) || !reflect.DeepEqual(got, want) && jerr == nil {
			t.Errorf("%s: codec %v %+v, json %v %+v", text, cerr, got, jerr, want)
			continue
		}
		if jerr != nil {
			continue
		}
		wantText, _ := json.Marshal(want)
		e := &encoder{}
		enc(e, &got)
		if e.err != nil || string(e.b) != string(wantText) {
			t.Errorf("%s: codec writes %s (%v), json %s", text, e.b, e.err, wantText)
		}
	}
}

// TestMapValueWriters: the generic writers a map's values use (the
// generated code calls the encoder's methods for fields and elements).
func TestMapValueWriters(t *testing.T) {
	type modes string
	strs := map[string]modes{"b": "<x>", "a": ""}
	bools := map[string]bool{"y": true, "n": false}
	floats := map[string]float64{"big": 1e21, "small": 1e-7, "one": 1}
	uints := map[modes]uint32{"max": 1<<32 - 1}
	e := &encoder{}
	e.open("")
	encMap(e, `"b":`, &bools, encBool[bool])
	encMap(e, `"f":`, &floats, encFloat64[float64])
	encMap(e, `"s":`, &strs, encStr[modes])
	encMap(e, `"u":`, &uints, encUint[uint32])
	e.end('}')
	want, _ := json.Marshal(map[string]any{"s": strs, "b": bools, "f": floats, "u": uints})
	if e.err != nil || string(e.b) != string(want) {
		t.Errorf("codec writes %s (%v), json %s", e.b, e.err, want)
	}
}
