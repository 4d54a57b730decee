package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
	"github.com/dcm-router/dcm/server/feedclient"
	"github.com/dcm-router/dcm/server/feedclient/feedtest"
)

// TestMain lets the test binary run as dcm itself in a child process
// (DCM_TEST_AS_DCM=1), so tests see main()'s dispatch, exit statuses and
// signal handling as a user would.
func TestMain(m *testing.M) {
	if os.Getenv("DCM_TEST_AS_DCM") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// syncBuffer is an io.Writer the command writes to while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// messages decodes the JSON lines written so far.
func (b *syncBuffer) messages(t *testing.T) []dcm.FeedMessage {
	t.Helper()
	var out []dcm.FeedMessage
	for line := range strings.Lines(b.String()) {
		var m dcm.FeedMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line %q is not a feed message: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func eventSeqs(msgs []dcm.FeedMessage) []uint64 {
	var out []uint64
	for _, m := range msgs {
		if m.Type == dcm.FeedTypeEvent {
			out = append(out, m.Seq)
		}
	}
	return out
}

// printed waits until dcm feed has printed event seq.
func printed(t *testing.T, stdout *syncBuffer, seq uint64) {
	t.Helper()
	testkit.Eventually(t, fmt.Sprintf("event %d printed", seq), 10*time.Second, func() error {
		if got := eventSeqs(stdout.messages(t)); !slices.Contains(got, seq) {
			return fmt.Errorf("events printed: %v", got)
		}
		return nil
	})
}

func publishTicks(srv *feedtest.Server, n int) {
	for range n {
		srv.Engine.Publish(dcm.Event{Type: dcm.EventAction, Actor: "test", Message: "tick"})
	}
}

func writeTokenFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFeedCommand: dcm feed prints one JSON line per message, keeps going
// across a lost connection (saying so on stderr) without losing or
// repeating an event, and ends cleanly when interrupted.
func TestFeedCommand(t *testing.T) {
	srv := feedtest.Start(t, feedtest.Options{})
	publishTicks(srv, 2)
	// The format of dcm's --auth-token-file: the first token is used.
	tokens := writeTokenFile(t, "# portal tokens\n\n"+feedtest.Token+" viewer tool\nsecond-token-0123456789 admin\n")
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- feedCommand(ctx, []string{"--server", srv.URL, "--token-file", tokens, "--since", "1"}, &stdout, &stderr)
	}()
	printed(t, &stdout, 2)
	publishTicks(srv, 1)
	printed(t, &stdout, 3)

	srv.SetDown(true)
	srv.Cut()
	srv.WaitSubscribers(t, 0)
	publishTicks(srv, 2) // 4, 5 while away
	srv.SetDown(false)
	printed(t, &stdout, 5)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("interrupted dcm feed returned %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("dcm feed did not stop after its context ended")
	}

	msgs := stdout.messages(t)
	if got := eventSeqs(msgs); !slices.Equal(got, []uint64{2, 3, 4, 5}) {
		t.Errorf("events %v, want 2-5 once each", got)
	}
	if msgs[0].Type != dcm.FeedTypeHello || !msgs[0].Hello.Resumed || msgs[0].Seq != 1 {
		t.Errorf("first line %+v, want hello resuming at 1", msgs[0])
	}
	if !strings.Contains(stderr.String(), "reconnecting") || !strings.Contains(stderr.String(), "since=3") {
		t.Errorf("stderr does not report the reconnect from seq 3:\n%s", stderr.String())
	}
}

func TestFeedCommandRefuses(t *testing.T) {
	srv := feedtest.Start(t, feedtest.Options{})
	empty := writeTokenFile(t, "# no tokens yet\n")
	tests := []struct {
		name      string
		args      []string
		wantUsage bool
		wantCode  int // a refusal by the server with this HTTP status
		wantText  string
	}{
		{name: "no token", args: []string{"--server", srv.URL}, wantUsage: true, wantText: "token is required"},
		{name: "two tokens", args: []string{"--server", srv.URL, "--token", "a", "--token-file", empty}, wantUsage: true},
		{name: "extra argument", args: []string{"--token", "a", "now"}, wantUsage: true, wantText: "now"},
		{name: "unknown flag", args: []string{"--token", "a", "--follow"}, wantUsage: true, wantText: "follow"},
		{name: "since not a number", args: []string{"--token", "a", "--since", "latest"}, wantUsage: true},
		{name: "empty token file", args: []string{"--server", srv.URL, "--token-file", empty}, wantText: "no token"},
		{name: "missing token file", args: []string{"--server", srv.URL, "--token-file", empty + ".nope"}, wantText: "no such file"},
		{name: "wrong token", args: []string{"--server", srv.URL, "--token", "wrong-0123456789abcdef"}, wantCode: 401},
		{name: "bad namespace", args: []string{"--server", srv.URL, "--token", feedtest.Token, "--namespace", "No_Such"}, wantCode: 400},
		{name: "not an HTTP URL", args: []string{"--server", "127.0.0.1:8080", "--token", feedtest.Token}, wantText: "http(s)://"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var stdout, stderr syncBuffer
			err := feedCommand(ctx, tt.args, &stdout, &stderr)
			if err == nil || ctx.Err() != nil {
				t.Fatalf("feedCommand = %v, want an error before the timeout", err)
			}
			if errors.Is(err, errUsage) != tt.wantUsage {
				t.Errorf("%v: usage error %v, want %v", err, errors.Is(err, errUsage), tt.wantUsage)
			}
			var he *feedclient.HandshakeError
			if tt.wantCode != 0 && (!errors.As(err, &he) || he.StatusCode != tt.wantCode) {
				t.Errorf("%v, want a refusal with HTTP %d", err, tt.wantCode)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("%v does not mention %q", err, tt.wantText)
			}
			if stdout.String() != "" {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
		})
	}
}

// asDCM runs this test binary as dcm with args.
func asDCM(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "DCM_TEST_AS_DCM=1")
	return cmd
}

// TestFeedProcess: dcm feed as a process — main() dispatches to it, it
// streams, SIGINT ends it with status 0, and the exit statuses of failures.
func TestFeedProcess(t *testing.T) {
	srv := feedtest.Start(t, feedtest.Options{})
	cmd := asDCM("feed", "--server", srv.URL, "--token", feedtest.Token)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := bufio.NewScanner(stdout)
	var types []string
	for len(types) < 3 && lines.Scan() {
		var m dcm.FeedMessage
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", lines.Text(), err)
		}
		types = append(types, m.Type)
		if m.Type == dcm.FeedTypeSnapshot {
			publishTicks(srv, 1)
		}
	}
	if !slices.Equal(types, []string{dcm.FeedTypeHello, dcm.FeedTypeSnapshot, dcm.FeedTypeEvent}) {
		t.Fatalf("lines %v, want hello, snapshot, event; stderr:\n%s", types, stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after SIGINT: %v, want exit status 0; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		// A bound, not a wait: it exits in milliseconds, but a CI machine
		// whose two cores build client-go beside it once took over 5 s.
		t.Fatal("dcm feed did not exit within 30 s of SIGINT")
	}

	tests := []struct {
		args       []string
		wantStatus int
		wantStderr string
	}{
		{args: []string{"--help"}, wantStatus: 0, wantStderr: "dcm feed [flags]"},
		{args: []string{"feed", "--help"}, wantStatus: 0, wantStderr: "--token-file"},
		{args: []string{"feed", "--server", srv.URL}, wantStatus: 2, wantStderr: "token is required"},
		{args: []string{"feed", "--server", srv.URL, "--token", "wrong-0123456789abcdef"}, wantStatus: 1, wantStderr: "HTTP 401"},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		cmd := asDCM(tt.args...)
		cmd.Stderr = &stderr
		err := cmd.Run()
		status := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if status != tt.wantStatus || !strings.Contains(stderr.String(), tt.wantStderr) {
			t.Errorf("dcm %v: status %d, stderr:\n%s\nwant status %d and %q", tt.args, status, stderr.String(), tt.wantStatus, tt.wantStderr)
		}
	}
}
