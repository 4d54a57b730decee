package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestGeneratedCodecFresh: wasm/codec/codec_gen.go is committed as
// codecgen writes it now.
func TestGeneratedCodecFresh(t *testing.T) {
	want, err := render(roots())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", outPath))
	if err != nil {
		t.Fatalf("%s: %v (run go run ./internal/codecgen)", outPath, err)
	}
	if string(got) != want {
		t.Errorf("%s is stale: run go run ./internal/codecgen (make generate) and commit it", outPath)
	}
}

type (
	withAny      struct{ X any }
	withBytes    struct{ X []byte }
	withArray    struct{ X [2]int }
	withIntKeys  struct{ X map[int]int }
	inner        struct{ A int }
	withEmbedded struct{ *inner }
	withString   struct {
		X int `json:"x,string"`
	}
	withSameName struct {
		A int `json:"a"`
		B int `json:"A"`
	}
	withPromoted struct {
		inner
		B      string `json:"b,omitempty"`
		Hidden int    `json:"-"`
		//lint:ignore SA5008 encoding/json names this field "-"
		Dash  int `json:"-,"`
		plain int
	}
)

// TestFollowsEncodingJSONRules: promoted fields of an embedded struct, the
// tag's "-" and "-," and unexported fields, as encoding/json reads them.
func TestFollowsEncodingJSONRules(t *testing.T) {
	_ = withPromoted{}.plain
	src, err := render([]root{{"X", "x", reflect.TypeFor[withPromoted]()}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"A,b,-"`, "&v.A)", `if v.B != "" {`, `e.int64("\"-\":", int64(v.Dash))`} {
		if !strings.Contains(src, want) {
			t.Errorf("the generated code lacks %s:\n%s", want, src)
		}
	}
	for _, unwanted := range []string{"Hidden", "plain"} {
		if strings.Contains(src, unwanted) {
			t.Errorf("the generated code has %s:\n%s", unwanted, src)
		}
	}
}

// TestRefusesWhatItCannotFollow: a shape encoding/json would encode in a
// way the generated code does not is an error, not a silent difference.
func TestRefusesWhatItCannotFollow(t *testing.T) {
	cases := []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[withAny](), "not supported"},
		{reflect.TypeFor[withBytes](), "not supported"},
		{reflect.TypeFor[withArray](), "not supported"},
		{reflect.TypeFor[withString](), `tag option "string"`},
		{reflect.TypeFor[withIntKeys](), "map keys"},
		{reflect.TypeFor[withEmbedded](), "embedded"},
		{reflect.TypeFor[withSameName](), "two fields"},
	}
	for _, c := range cases {
		t.Run(c.typ.Name(), func(t *testing.T) {
			_, err := render([]root{{"X", "x", c.typ}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("render: %v, want an error with %q", err, c.want)
			}
		})
	}
}
