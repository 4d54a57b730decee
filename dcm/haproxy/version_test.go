package haproxy

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		out     string
		want    Version
		wantErr bool
	}{
		{"HAProxy version 2.6.12-1+deb12u4 2026/10/17 - https://haproxy.org/\nStatus: long-term", Version{2, 6, 12, "2.6.12-1+deb12u4"}, false},
		{"HA-Proxy version 1.8.30 2021/04/12\n", Version{1, 8, 30, "1.8.30"}, false},
		{"HAProxy version 3.0.5 2024/09/19", Version{3, 0, 5, "3.0.5"}, false},
		{"HAProxy version 2.9-dev5-1234", Version{2, 9, 0, "2.9-dev5-1234"}, false},
		{"", Version{}, true},
		{"nginx version: nginx/1.22.1", Version{}, true},
		{"HAProxy version x.y", Version{}, true},
	}
	for _, tt := range tests {
		got, err := ParseVersion(tt.out)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseVersion(%q) = %+v, %v; want %+v, err %v", tt.out, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestVersionAtLeast(t *testing.T) {
	tests := []struct {
		v            Version
		major, minor int
		want         bool
	}{
		{Version{Major: 2, Minor: 6}, 2, 6, true},
		{Version{Major: 2, Minor: 5, Patch: 99}, 2, 6, false},
		{Version{Major: 3, Minor: 0}, 2, 6, true},
		{Version{Major: 1, Minor: 9}, 2, 0, false},
	}
	for _, tt := range tests {
		if got := tt.v.AtLeast(tt.major, tt.minor); got != tt.want {
			t.Errorf("%v.AtLeast(%d,%d) = %v", tt.v, tt.major, tt.minor, got)
		}
	}
	if c := CapsFor(Version{Major: 2, Minor: 6}, dcm.ModeDynamic, 4, 10); !c.AddServer || c.Pool != 10 || c.Slots != 0 || !c.RuntimeCerts {
		t.Errorf("2.6 dynamic caps = %+v", c)
	}
	if c := CapsFor(Version{Major: 2, Minor: 6}, dcm.ModeReload, 4, 10); c.Pool != 0 || c.RuntimeCerts {
		t.Errorf("2.6 reload caps = %+v", c)
	}
	if c := CapsFor(Version{Major: 2, Minor: 6}, dcm.ModeSlots, 4, 10); !c.AddServer || c.Slots != 4 || c.Pool != 0 || c.Mode != dcm.ModeSlots {
		t.Errorf("CapsFor 2.6 slots: %+v", c)
	}
	if c := CapsFor(Version{Major: 2, Minor: 4}, dcm.ModeDynamic, 4, 10); c.AddServer || c.Slots != 0 || c.Pool != 0 {
		t.Errorf("CapsFor 2.4 dynamic: %+v", c)
	}
}

func fakeBinary(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "haproxy")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDetectVersion(t *testing.T) {
	tests := []struct {
		name string
		bin  string
		want []string // substrings of the error; none = success
	}{
		{"missing", filepath.Join(t.TempDir(), "no-haproxy"), []string{"not found", "install Debian's haproxy package (make deps) or pass --haproxy-bin"}},
		{"too-old", fakeBinary(t, `echo "HAProxy version 1.8.30 2021/04/12 - https://haproxy.org/"`), []string{"1.8.30", "too old", "2.6", "add server"}},
		{"garbage", fakeBinary(t, `echo "hello"`), []string{"unrecognised haproxy version output", "hello"}},
		{"fails", fakeBinary(t, `echo boom >&2; exit 3`), []string{"exit status 3", "boom"}},
		{"new", fakeBinary(t, `echo "HAProxy version 3.2.1 2025/06/01"`), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := DetectVersion(context.Background(), tt.bin)
			if tt.want == nil {
				if err != nil || !v.AtLeast(3, 2) {
					t.Fatalf("got %v, %v", v, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %v, want an error", v)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestDetectVersionReal(t *testing.T) {
	bin := testkit.HAProxy(t)
	v, err := DetectVersion(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	if !v.AtLeast(2, 6) {
		t.Errorf("installed haproxy %v", v)
	}
}

func TestLineLevel(t *testing.T) {
	tests := []struct {
		line string
		want slog.Level
	}{
		{"[ALERT]    (8898) : Current worker (8900) exited with code 143 (Terminated)", slog.LevelError},
		{"[ALERT]    (2836) : CLI : 'server be/d1' : Already exists a server with the same name in backend.", slog.LevelError},
		{"[WARNING]  (8900) : CLI : Server be/s is UP/READY (leaving forced maintenance).", slog.LevelDebug},
		{"[WARNING]  (2836) : Server be/s0 is DOWN, reason: Layer4 connection problem", slog.LevelWarn},
		// 2.6.12's words for set server … state, as a test of it printed them.
		{"[WARNING]  (21755) : Server be_http:ns:a/a-0:http is going DOWN for maintenance. 1 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.", slog.LevelDebug},
		{"[WARNING]  (21755) : Server be_http:ns:a/a-0:http is UP/READY (leaving forced maintenance).", slog.LevelDebug},
		{"[WARNING]  (21755) : Server be_http:ns:a/a-0:http is UP/DRAIN (leaving forced maintenance).", slog.LevelDebug},
		{"[WARNING]  (21755) : Server be_http:ns:a/a-0:http enters drain state. 1 active and 0 backup servers online. 0 sessions requeued, 0 total in queue.", slog.LevelDebug},
		{"[WARNING]  (21755) : Server be_http:ns:a/a-0:http is UP (leaving forced drain).", slog.LevelDebug},
		{"[WARNING]  (21755) : Server be_http:ns:a/a-0:http remains in forced drain mode.", slog.LevelDebug},
		// What HAProxy decided itself stays a warning.
		{"[WARNING]  (7) : Server app/s-3 is going DOWN for maintenance (No IP for server ). 4 active and 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in queue.", slog.LevelWarn},
		{"[WARNING]  (7) : Server app/s-3 is DOWN, reason: Layer7 wrong status, code: 503. 0 active and 0 backup servers left.", slog.LevelWarn},
		{"[NOTICE]   (2833) : Loading success.", slog.LevelInfo},
	}
	for _, tt := range tests {
		if got := lineLevel(tt.line); got != tt.want {
			t.Errorf("lineLevel(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}
