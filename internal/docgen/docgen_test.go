package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedDocsFresh: every generated page is committed as docgen
// writes it now.
func TestGeneratedDocsFresh(t *testing.T) {
	for _, p := range pages() {
		path := filepath.Join("..", "..", p.path)
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run go run ./internal/docgen)", p.path, err)
		}
		if string(got) != p.render() {
			t.Errorf("%s is stale: run go run ./internal/docgen (make generate) and commit it", p.path)
		}
	}
}

// TestPagesListed: the pages TestGeneratedDocsFresh compares include every
// generated reference page, so a stale one fails it.
func TestPagesListed(t *testing.T) {
	for _, want := range []string{"docs/flags.md", "docs/annotations.md"} {
		found := false
		for _, p := range pages() {
			found = found || p.path == want
		}
		if !found {
			t.Errorf("%s is not among docgen's pages", want)
		}
	}
}
