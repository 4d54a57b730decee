// Command jsgen writes web/display_gen.js, the words for ops and server
// states that views/words.go declares, as a module web/format.js imports:
// the pages rendered on the server and the scripts that keep them live
// read the same table. Run it from the repository's root (make generate
// does); TestGeneratedJSFresh fails while the committed file differs from
// what it writes.
package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// outPath is the generated module, relative to the repository's root.
const outPath = "web/display_gen.js"

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	src, err := render()
	if err == nil {
		err = os.WriteFile(filepath.Join(root, outPath), []byte(src), 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jsgen:", err)
		os.Exit(1)
	}
}
