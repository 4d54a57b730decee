package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/system"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{args: nil},
		{args: []string{"--mode=slots", "--slots=1"}},
		{args: []string{"--mode=reload", "--namespace=a", "--namespace=b"}},
		{args: []string{"--mode=fast"}, wantErr: "unknown mode"},
		{args: []string{"--mode=slots", "--slots=0"}, wantErr: "--slots"},
		{args: []string{"--event-history=500"}},
		{args: []string{"--event-history=0"}, wantErr: "--event-history"},
		{args: []string{"--https-redirect-port=443"}},
		{args: []string{"--https-redirect-port=70000"}, wantErr: "--https-redirect-port"},
		{args: []string{"--routes=false", "--route-subdomain=apps.example.com"}},
		{args: []string{"--route-subdomain=Apps;x"}, wantErr: "--route-subdomain"},
		{args: []string{"extra"}, wantErr: "unexpected arguments"},
		{args: []string{"--no-such-flag"}, wantErr: "unknown flag"},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args)
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("parseFlags(%q) = %v, want error containing %q", tt.args, err, tt.wantErr)
		}
	}
}

// TestRedirectPort: redirects go to --https-bind's port unless the flag
// names the one clients use.
func TestRedirectPort(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{args: nil, want: 8443},
		{args: []string{"--https-bind=0.0.0.0:443"}, want: 443},
		{args: []string{"--https-bind=[::1]:9443"}, want: 9443},
		{args: []string{"--https-bind=0.0.0.0:8443", "--https-redirect-port=443"}, want: 443},
		{args: []string{"--https-bind="}, want: 0},
	}
	for _, tt := range tests {
		o, err := parseFlags(tt.args)
		if err != nil {
			t.Fatalf("parseFlags(%q): %v", tt.args, err)
		}
		if got := o.RedirectPort(); got != tt.want {
			t.Errorf("RedirectPort(%q) = %d, want %d", tt.args, got, tt.want)
		}
	}
}

// TestRunNeedsUsableHAProxy: a missing or too old haproxy stops dcm at once
// with an error that says what to do.
func TestRunNeedsUsableHAProxy(t *testing.T) {
	old := filepath.Join(t.TempDir(), "haproxy")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho 'HAProxy version 1.8.30 2021/04/12 - https://haproxy.org/'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		bin  string
		want []string
	}{
		{bin: filepath.Join(t.TempDir(), "missing-haproxy"), want: []string{"not found", "make deps", "--haproxy-bin"}},
		{bin: old, want: []string{"1.8.30", "2.6"}},
	}
	for _, tt := range tests {
		o, err := parseFlags([]string{"--demo", "--haproxy-bin", tt.bin, "--work-dir", t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		err = run(context.Background(), o, io.Discard)
		if err == nil {
			t.Fatalf("run with haproxy %s succeeded", tt.bin)
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not mention %q", err, w)
			}
		}
	}
}

// TestFlagDefaultsAreSystemDefaults: dcm without flags runs
// system.Defaults, which the e2e harness starts from too.
func TestFlagDefaultsAreSystemDefaults(t *testing.T) {
	got, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := system.Defaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("flags give %+v\nsystem.Defaults is %+v", got, want)
	}
}
