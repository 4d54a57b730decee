package codec_test

import (
	"testing"

	"github.com/dcm-router/dcm/wasm/corpus"
)

// FuzzDecode: any text reads the same through the generated decoders as
// through encoding/json, or both refuse it (go test -fuzz FuzzDecode
// ./wasm/codec/ explores; plain go test runs the seeds).
func FuzzDecode(f *testing.F) {
	for _, s := range corpus.Generate(40, 7) {
		f.Add(s.Snapshot)
		f.Add(s.WhatIfs)
		f.Add(s.Compute)
		for _, c := range s.Follow {
			f.Add(c.Arg)
		}
	}
	f.Add(`{"type":"event","seq":2,"event":{"seq":2,"time":"2026-12-03T15:04:05.5+02:00","type":"reload","reload":{"reasons":["a"]}}}`)
	f.Add(`{"caps":{"mode":"a"},"caps":{"slots":2},"BACKENDS":[{"servers":[{"name":"\u00e9\ud83d\ude00"}]}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		snapshots.differs(t, text)
		feedMessages.differs(t, text)
		whatIfs.differs(t, text)
		computes.differs(t, text)
	})
}
