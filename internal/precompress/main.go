// Command precompress writes x.gz and x.br beside each file x given, for
// static/ to serve to browsers that accept them. Brotli at its best level
// takes seconds on the planner, so a file whose copies were made from the
// same content (.x.sha256 records it; go:embed leaves dot files out) is
// left alone.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/andybalholm/brotli"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: precompress FILE...")
		os.Exit(2)
	}
	for _, name := range os.Args[1:] {
		if err := precompress(name); err != nil {
			fmt.Fprintln(os.Stderr, "precompress:", err)
			os.Exit(1)
		}
	}
}

func precompress(name string) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	stamp := hex.EncodeToString(sum[:])
	stampFile := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".sha256")
	if old, err := os.ReadFile(stampFile); err == nil && string(old) == stamp && exists(name+".gz") && exists(name+".br") {
		return nil
	}
	gz, err := compress(data, func(w io.Writer) (io.WriteCloser, error) { return gzip.NewWriterLevel(w, gzip.BestCompression) })
	if err != nil {
		return fmt.Errorf("gzip %s: %w", name, err)
	}
	br, err := compress(data, func(w io.Writer) (io.WriteCloser, error) {
		return brotli.NewWriterLevel(w, brotli.BestCompression), nil
	})
	if err != nil {
		return fmt.Errorf("brotli %s: %w", name, err)
	}
	for ext, out := range map[string][]byte{".gz": gz, ".br": br} {
		if err := os.WriteFile(name+ext, out, 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(stampFile, []byte(stamp), 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d bytes, gzip %d, brotli %d\n", name, len(data), len(gz), len(br))
	return nil
}

func compress(data []byte, open func(io.Writer) (io.WriteCloser, error)) ([]byte, error) {
	var b bytes.Buffer
	w, err := open(&b)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
