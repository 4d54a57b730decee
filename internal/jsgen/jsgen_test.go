package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedJSFresh: web/display_gen.js is committed as jsgen writes it
// now.
func TestGeneratedJSFresh(t *testing.T) {
	want, err := render()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", outPath))
	if err != nil {
		t.Fatalf("%s: %v (run go run ./internal/jsgen)", outPath, err)
	}
	if string(got) != want {
		t.Errorf("%s is stale: run go run ./internal/jsgen (make generate) and commit it", outPath)
	}
}
