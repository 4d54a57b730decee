// Command docgen writes the reference pages that are generated from the
// code, so that they cannot drift from it: docs/flags.md from dcm's flag
// set, docs/annotations.md from kube's annotation table. Run it from the
// repository's root (make generate does); TestGeneratedDocsFresh fails
// while a committed page differs from what it writes.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	for _, p := range pages() {
		path := filepath.Join(root, p.path)
		if err := os.WriteFile(path, []byte(p.render()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "docgen:", err)
			os.Exit(1)
		}
	}
}

// page is one generated file, its path relative to the repository's root.
type page struct {
	path   string
	render func() string
}

func pages() []page {
	return []page{{"docs/flags.md", flagsPage}, {"docs/annotations.md", annotationsPage}}
}
