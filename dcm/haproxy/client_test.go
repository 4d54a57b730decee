package haproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/internal/testkit"
)

// TestReadReplyStream splits a prompt-mode stream captured from HAProxy
// 2.6.12 (testdata/prompt_commands.txt sent after "prompt") and checks each
// reply against its command's success condition.
func TestReadReplyStream(t *testing.T) {
	stream := testdata(t, "prompt_stream.txt")
	cmds := strings.Split(strings.TrimSuffix(testdata(t, "prompt_commands.txt"), "\n"), "\n")
	r := bufio.NewReaderSize(strings.NewReader(stream), 16) // tiny buffer: lines longer than it
	var replies []string
	for {
		text, err := readReply(r)
		if err != nil {
			break
		}
		replies = append(replies, text)
	}
	if len(replies) != len(cmds)+1 {
		t.Fatalf("got %d replies, want %d (prompt + commands): %q", len(replies), len(cmds)+1, replies)
	}
	if replies[0] != "" {
		t.Errorf("reply to prompt = %q", replies[0])
	}
	replies = replies[1:]
	tests := []struct {
		kind  replyKind
		ok    bool
		reply string // "" = not checked beyond ok
	}{
		{replyEmpty, true, ""},
		{replyAddServer, true, "[6]: New server registered."},
		{replyAddServer, false, "[3]: Already exists a server with the same name in backend."},
		{replyEmpty, true, ""},
		{replyEmpty, true, ""},
		{replyEmpty, true, ""},
		{replySetAddr, true, "[4]: no need to change the addr, port changed from '9001' to '9002' by 'stats socket command'"},
		{replySetAddr, true, "[4]: no need to change the addr, no need to change the port by 'stats socket command'"},
		{replySetAddr, true, "[4]: IP changed from '127.0.0.1' to '127.0.0.2', no need to change the port by 'stats socket command'"},
		{replyEmpty, false, "[3]: Absolute weight can only be between 0 and 256 inclusive."},
		{replyEmpty, false, "[3]: No such server."},
		{replyDelServer, false, "[3]: Only servers in maintenance mode can be deleted."},
		{replyEmpty, true, ""},
		{replyDelServer, true, "[6]: Server deleted."},
		{replyVersion, true, "[6]: 2.6.12-1+deb12u4"},
		{replyServersState, true, ""},
		{replyBackends, true, "# name\nbe_default\nbe_http:ns:r1"},
		{replyAddServer, true, "[6]: New server registered."},
		{replySetAddr, true, "[4]: IP changed from '0.0.0.0' to '127.0.0.1', port changed from '1' to '9004' by 'stats socket command'"},
		{replyEmpty, true, ""},
	}
	if len(tests) != len(cmds) {
		t.Fatalf("table has %d rows for %d commands", len(tests), len(cmds))
	}
	for i, tt := range tests {
		c := Command{text: cmds[i], kind: tt.kind}
		if got := c.succeeded(replies[i]); got != tt.ok {
			t.Errorf("%q → %q: succeeded = %v, want %v", cmds[i], replies[i], got, tt.ok)
		}
		if tt.reply != "" && replies[i] != tt.reply {
			t.Errorf("%q: reply %q, want %q", cmds[i], replies[i], tt.reply)
		}
	}
	if _, err := ParseServersState(replies[15]); err != nil {
		t.Errorf("servers state from the stream: %v", err)
	}
}

func TestSucceededRejectsOddReplies(t *testing.T) {
	tests := []struct {
		kind  replyKind
		reply string
	}{
		{replyEmpty, "[4]: something unexpected"},
		{replyAddServer, "New server registered."}, // no severity: not what 2.6 says
		{replyAddServer, "[3]: New server registered."},
		{replyDelServer, "[6]: Server deleted. And more"},
		{replySetAddr, "[3]: No such server."},
		{replySetAddr, "[4]: Update for the current server address family is only supported through configuration file"},
		{replyInfo, "[3]: Permission denied"},
		{replyStat, "[3]: No such proxy."},
		{replyServersState, "[3]: Can't find backend."},
		{replyVersion, "[6]: Unknown command"},
		{replyBackends, "[3]: Permission denied"},
		{0, ""},
	}
	for _, tt := range tests {
		if (Command{text: "x", kind: tt.kind}).succeeded(tt.reply) {
			t.Errorf("kind %d accepted %q", tt.kind, tt.reply)
		}
	}
}

func TestCommandFor(t *testing.T) {
	be := "be_http:ns:r"
	tests := []struct {
		op   dcm.Op
		want string // "" = error
	}{
		{dcm.Op{Kind: dcm.OpAddServer, Backend: be, Server: "s1", Addr: "10.0.0.1", Port: 80, Weight: 3}, "add server be_http:ns:r/s1 10.0.0.1:80 weight 3 disabled"},
		{dcm.Op{Kind: dcm.OpAddServer, Backend: be, Server: "s1", Addr: "fd00::1", Port: 80, Weight: 3, Check: true}, "add server be_http:ns:r/s1 [fd00::1]:80 weight 3 check inter 5s disabled"},
		{dcm.Op{Kind: dcm.OpDelServer, Backend: be, Server: "pod-a:http"}, "del server be_http:ns:r/pod-a:http"},
		{dcm.Op{Kind: dcm.OpSetAddr, Backend: be, Server: "s1", Addr: "fd00::1", Port: 8080}, "set server be_http:ns:r/s1 addr fd00::1 port 8080"},
		{dcm.Op{Kind: dcm.OpSetState, Backend: be, Server: "s1", State: dcm.StateDrain}, "set server be_http:ns:r/s1 state drain"},
		{dcm.Op{Kind: dcm.OpSetWeight, Backend: be, Server: "s1", Weight: 0}, "set weight be_http:ns:r/s1 0"},
		{dcm.Op{Kind: dcm.OpEnableHealth, Backend: be, Server: "s1"}, "enable health be_http:ns:r/s1"},
		{dcm.Op{Kind: dcm.OpAddServer, Backend: be, Server: "s1", Port: 80, Weight: 3}, ""},
		{dcm.Op{Kind: dcm.OpSetAddr, Backend: be, Server: "s1", Addr: "10.0.0.1; del server x/y", Port: 80}, ""},
		{dcm.Op{Kind: dcm.OpSetAddr, Backend: be, Server: "s1", Addr: "10.0.0.1", Port: 0}, ""},
		{dcm.Op{Kind: dcm.OpSetState, Backend: be, Server: "s1", State: "up"}, ""},
		{dcm.Op{Kind: dcm.OpSetWeight, Backend: be, Server: "s1", Weight: 257}, ""},
		{dcm.Op{Kind: dcm.OpSetWeight, Backend: be, Server: "s1;shutdown", Weight: 1}, ""},
		{dcm.Op{Kind: dcm.OpSetWeight, Backend: "be_x\nshow info", Server: "s1", Weight: 1}, ""},
		{dcm.Op{Kind: dcm.OpSetWeight, Backend: "other", Server: "s1", Weight: 1}, ""},
		{dcm.Op{Kind: dcm.OpSetWeight, Backend: DefaultBackend, Server: "s1", Weight: 1}, ""},
		{dcm.Op{Kind: "disable-health", Backend: be, Server: "s1"}, ""},
	}
	for _, tt := range tests {
		c, err := CommandFor(tt.op, HTTP2{})
		if (err != nil) != (tt.want == "") || c.String() != tt.want {
			t.Errorf("CommandFor(%+v) = %q, %v; want %q", tt.op, c, err, tt.want)
		}
	}
}

// fakeAdmin is a unix socket that hangs on the first `hang` connections and
// answers every line of later ones with an empty prompt-mode reply.
func fakeAdmin(t *testing.T, hang int32) (string, *atomic.Int32) {
	t.Helper()
	path := filepath.Join(testkit.ShortDir(t), "fake.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int32
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		l.Close()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n := accepted.Add(1)
			go func() {
				defer c.Close()
				if n <= hang {
					<-done // accept and never answer
					return
				}
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					reply := "\n> "
					if sc.Text() == "show info" {
						reply = "Name: HAProxy\nPid: 42\n\n> "
					}
					if _, err := c.Write([]byte(reply)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return path, &accepted
}

func TestClientReadDeadlineAndReconnect(t *testing.T) {
	t.Parallel()
	path, accepted := fakeAdmin(t, 1)
	var observed []error
	c := NewClient(path, ClientOptions{ReadTimeout: 150 * time.Millisecond, Observer: func(_ string, _ time.Duration, err error) { observed = append(observed, err) }})
	defer c.Close()
	start := time.Now()
	_, err := c.Exec(context.Background(), []Command{InfoCommand()})
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("hanging socket: got %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("deadline took %s", d)
	}
	replies, err := c.Exec(context.Background(), []Command{InfoCommand(), mustCommand(t, dcm.Op{Kind: dcm.OpSetWeight, Backend: "be_x", Server: "s", Weight: 1})})
	if err != nil || len(replies) != 2 {
		t.Fatalf("after reconnect: %v %v", replies, err)
	}
	if info, err := ParseInfo(replies[0].Text); err != nil || info.Pid != 42 {
		t.Errorf("info %+v %v", info, err)
	}
	if accepted.Load() != 2 {
		t.Errorf("%d connections, want 2 (one reconnect)", accepted.Load())
	}
	if len(observed) != 2 || observed[0] != nil || observed[1] != nil {
		t.Errorf("observer saw %v", observed)
	}
}

func TestClientContextCancel(t *testing.T) {
	t.Parallel()
	path, _ := fakeAdmin(t, 0)
	c := NewClient(path, ClientOptions{ReadTimeout: 10 * time.Second})
	defer c.Close()
	// Connected and in step first.
	if _, err := c.Exec(context.Background(), []Command{VersionCommand()}); err == nil {
		t.Fatal("the fake answers show version with an empty reply: want a *CommandError")
	} else if ce := commandErrors(err); len(ce) != 1 {
		t.Fatalf("got %v", err)
	}
	// Now hang: a command the fake never completes is simulated by a
	// deadline in the past.
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	<-ctx.Done()
	if _, err := c.Exec(ctx, []Command{InfoCommand()}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("expired context: got %v", err)
	}
	path2, _ := fakeAdmin(t, 1)
	c2 := NewClient(path2, ClientOptions{ReadTimeout: 10 * time.Second})
	defer c2.Close()
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel2)
	start := time.Now()
	if _, err := c2.Exec(ctx2, []Command{InfoCommand()}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cancel took %s", d)
	}
}

func TestClientRejectsForeignCommands(t *testing.T) {
	c := NewClient("/nonexistent.sock", ClientOptions{})
	if _, err := c.Exec(context.Background(), []Command{{}}); err == nil || !strings.Contains(err.Error(), "not built") {
		t.Errorf("zero Command: %v", err)
	}
	if _, err := c.Exec(context.Background(), []Command{InfoCommand()}); err == nil || !strings.Contains(err.Error(), "connect") {
		t.Errorf("missing socket: %v", err)
	}
}

func mustCommand(tb testing.TB, op dcm.Op) Command {
	tb.Helper()
	c, err := CommandFor(op, HTTP2{})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func benchClient(b *testing.B) (*Client, string) {
	r := route("ns", "bench", "bench.example", "/", dcm.PathPrefix)
	srv := dcm.Server{Name: "s1", Endpoint: "s1", Addr: "127.0.0.2", Port: 9, Weight: 1, State: dcm.StateReady}
	d, _ := startDriver(b, state(backendFor(r, srv)))
	c := NewClient(d.cfg.Settings.AdminSocket, ClientOptions{})
	b.Cleanup(func() { c.Close() })
	return c, r.BackendName()
}

func BenchmarkExecPipelined(b *testing.B) {
	c, be := benchClient(b)
	cmds := make([]Command, 1000)
	for i := range cmds {
		cmds[i] = mustCommand(b, dcm.Op{Kind: dcm.OpSetWeight, Backend: be, Server: "s1", Weight: i%256 + 1})
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Exec(ctx, cmds); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(cmds)), "ns/command")
}

func BenchmarkExecRoundTrip(b *testing.B) {
	c, be := benchClient(b)
	cmds := []Command{mustCommand(b, dcm.Op{Kind: dcm.OpSetWeight, Backend: be, Server: "s1", Weight: 2})}
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.Exec(ctx, cmds); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleCommandFor() {
	c, err := CommandFor(dcm.Op{Kind: dcm.OpAddServer, Backend: "be_http:shop:web", Server: "web-7d9f:http", Addr: "10.244.1.7", Port: 8080, Weight: 1, Check: true}, HTTP2{})
	fmt.Println(c, err)
	// Output: add server be_http:shop:web/web-7d9f:http 10.244.1.7:8080 weight 1 check inter 5s disabled <nil>
}

// FuzzReadReply splits arbitrary prompt-mode streams into replies. Whatever
// HAProxy sends, the split must not depend on how the bytes arrive (a 16-byte
// buffer, lines longer than it, or a 64 KiB one), a reply never carries a
// prompt inside it (a missed prompt would shift every later reply onto the
// wrong command), and it never ends in a newline.
func FuzzReadReply(f *testing.F) {
	f.Add(testdata(f, "prompt_stream.txt"), uint8(0))
	f.Add("> \n> [3]: No such server.\n\n> ", uint8(3))
	f.Add(strings.Repeat("x", 40)+"\n> "+strings.Repeat("> ", 20)+"\n\n> ", uint8(1))
	f.Fuzz(func(t *testing.T, stream string, small uint8) {
		split := func(size int) ([]string, int) {
			r := bufio.NewReaderSize(strings.NewReader(stream), size)
			var out []string
			consumed := 0
			for {
				text, err := readReply(r)
				if err != nil {
					return out, consumed
				}
				out = append(out, text)
				consumed += len(text) + 2
			}
		}
		a, consumed := split(16 + int(small))
		b, _ := split(64 << 10)
		if !slices.Equal(a, b) {
			t.Fatalf("the split depends on the buffer size:\n%q\n%q", a, b)
		}
		// A streamed reply is the same reply: its header, then its body.
		for _, kind := range []replyKind{replyStat, replyServersState} {
			if c := streamedSplit(stream, 16+int(small), Command{text: "show", kind: kind}); !slices.Equal(a, c) {
				t.Fatalf("streamed replies (kind %d) differ:\n%q\n%q", kind, a, c)
			}
		}
		if consumed > len(stream) {
			t.Fatalf("replies hold %d bytes of a %d-byte stream", consumed, len(stream))
		}
		for _, reply := range a {
			if strings.HasPrefix(reply, "> ") || strings.Contains(reply, "\n> ") || strings.HasSuffix(reply, "\n") {
				t.Fatalf("reply %q holds a prompt or ends in a newline", reply)
			}
		}
	})
}

// streamedSplit splits a prompt-mode stream as readReply does, reading
// every reply through readStreamed with cmd's header: a reply is its
// header and what the Stream read, put together again.
func streamedSplit(stream string, size int, cmd Command) []string {
	r := bufio.NewReaderSize(strings.NewReader(stream), size)
	var out []string
	for {
		body := ""
		text, _, err := readStreamed(r, cmd, func(_ string, b io.Reader) error {
			all, err := io.ReadAll(b)
			body = string(all)
			return err
		})
		if err != nil {
			return out
		}
		if body != "" {
			text = strings.TrimRight(text+"\n"+body, "\n")
		}
		out = append(out, text)
	}
}

// TestReadStreamed: the replies of show servers state and show stat read
// through a Stream, with a buffer smaller than their lines, are what
// readReply reads; a Stream that stops early leaves the connection in
// step; an error reply is not streamed.
func TestReadStreamed(t *testing.T) {
	state := testdata(t, "show_servers_state.txt")
	stat := testdata(t, "show_stat.txt")
	stream := "\n> " + state + "\n> " + "[3]: No such proxy.\n\n> " + stat + "\n> "
	want := []string{"", strings.TrimRight(state, "\n"), "[3]: No such proxy.", strings.TrimRight(stat, "\n")}
	cmds := []Command{{text: "prompt", kind: replyServersState}, {text: "show servers state", kind: replyServersState},
		{text: "show stat", kind: replyStat}, {text: "show stat", kind: replyStat}}
	r := bufio.NewReaderSize(strings.NewReader(stream), 16)
	for i, cmd := range cmds {
		streamed := false
		var rows int
		text, serr, err := readStreamed(r, cmd, func(header string, body io.Reader) error {
			streamed = true
			if cmd.kind == replyStat {
				return ReadStat(io.MultiReader(strings.NewReader(strings.TrimPrefix(header, "# ")+"\n"), body), func(StatRow) error {
					rows++
					return errors.New("enough") // the rest is read and dropped
				})
			}
			all, err := io.ReadAll(body)
			if got := strings.TrimRight(header+"\n"+string(all), "\n"); got != want[i] {
				t.Errorf("reply %d streamed as %q", i, got)
			}
			return err
		})
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if wantStreamed := i == 1 || i == 3; streamed != wantStreamed {
			t.Errorf("reply %d (%q): streamed %v", i, text, streamed)
		}
		if i == 3 && (serr == nil || rows != 1) {
			t.Errorf("a stream's error: %v after %d rows", serr, rows)
		}
		if !streamed && text != want[i] {
			t.Errorf("reply %d: %q, want %q", i, text, want[i])
		}
	}
	if rest, _ := io.ReadAll(r); len(rest) != 0 {
		t.Errorf("left unread: %q", rest)
	}
}
