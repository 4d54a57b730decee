// Command sizecheck holds the repository to its size limits: no
// hand-written, non-test Go file over maxFileLines lines and no function
// over maxFuncLines. Generated files (templ's _templ.go, files marked "Code
// generated … DO NOT EDIT.") and tests do not count. It prints the largest
// file and the longest function either way, so a reviewer sees how close
// the code runs to the limits, and exits 1 listing what breaks them.
//
// Usage: go run ./internal/sizecheck [root]
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

const (
	maxFileLines = 700
	maxFuncLines = 100
)

// measure is one file's or function's length.
type measure struct {
	name  string
	lines int
}

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	files, funcs, err := measureTree(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sizecheck:", err)
		os.Exit(2)
	}
	over := report(os.Stdout, files, funcs)
	if over > 0 {
		os.Exit(1)
	}
}

// report prints the largest file and function and everything over the
// limits; it returns how many are over.
func report(w *os.File, files, funcs []measure) int {
	byLength := func(ms []measure) {
		sort.Slice(ms, func(i, j int) bool {
			if ms[i].lines != ms[j].lines {
				return ms[i].lines > ms[j].lines
			}
			return ms[i].name < ms[j].name
		})
	}
	byLength(files)
	byLength(funcs)
	if len(files) > 0 {
		fmt.Fprintf(w, "sizecheck: largest file %s (%d lines, limit %d)\n", files[0].name, files[0].lines, maxFileLines)
	}
	if len(funcs) > 0 {
		fmt.Fprintf(w, "sizecheck: longest function %s (%d lines, limit %d)\n", funcs[0].name, funcs[0].lines, maxFuncLines)
	}
	over := 0
	for _, f := range files {
		if f.lines > maxFileLines {
			fmt.Fprintf(w, "  file over %d lines: %s (%d)\n", maxFileLines, f.name, f.lines)
			over++
		}
	}
	for _, f := range funcs {
		if f.lines > maxFuncLines {
			fmt.Fprintf(w, "  function over %d lines: %s (%d)\n", maxFuncLines, f.name, f.lines)
			over++
		}
	}
	return over
}

var generated = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)

// measureTree walks root's Go files that count.
func measureTree(root string) (files, funcs []measure, err error) {
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_templ.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if generated.Match(src) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		files = append(files, measure{path, bytes.Count(src, []byte("\n"))})
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			funcs = append(funcs, measure{path + ":" + funcName(fn), lines})
		}
		return nil
	})
	return files, funcs, err
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
