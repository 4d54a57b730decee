package localpod

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"
)

// testPrefix keeps these tests off the ranges of the demo (127.0.) and of its
// tests (127.81.), which may run at the same time.
var testPrefix = [2]byte{127, 83}

func TestPool(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name string
		// ops run in order: "a" allocates and expects want, "r<i>" releases
		// index i, "u<i>" marks index i unusable.
		ops  []string
		want []string // one address per "a"
	}{
		{name: "first addresses", ops: []string{"a", "a", "a"}, want: []string{"127.0.1.1", "127.0.1.2", "127.0.1.3"}},
		{name: "released address reused first", ops: []string{"a", "a", "a", "r1", "a", "a"},
			want: []string{"127.0.1.1", "127.0.1.2", "127.0.1.3", "127.0.1.2", "127.0.1.4"}},
		{name: "unusable address skipped", ops: []string{"u0", "a", "a"}, want: []string{"127.0.1.2", "127.0.1.3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPool([2]byte{127, 0})
			var got []string
			for _, op := range tt.ops {
				switch op[0] {
				case 'a':
					i, ok := p.alloc(now)
					if !ok {
						t.Fatalf("pool empty")
					}
					got = append(got, p.addr(i).String())
				case 'r':
					p.release(int(op[1] - '0'))
				case 'u':
					p.unusable(int(op[1]-'0'), now.Add(time.Minute))
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("skips .0 and .255", func(t *testing.T) {
		p := NewPool([2]byte{127, 0})
		tests := map[int]string{0: "127.0.1.1", 253: "127.0.1.254", 254: "127.0.2.1", poolSize - 1: "127.0.255.254"}
		for i, want := range tests {
			if got := p.addr(i).String(); got != want {
				t.Errorf("addr(%d) = %s, want %s", i, got, want)
			}
		}
	})
	t.Run("avoidance expires", func(t *testing.T) {
		p := NewPool([2]byte{127, 0})
		p.unusable(0, now.Add(time.Second))
		if i, _ := p.alloc(now); i != 1 {
			t.Errorf("allocated %d while 0 is avoided", i)
		}
		if i, _ := p.alloc(now.Add(2 * time.Second)); i != 0 {
			t.Errorf("allocated %d after the avoidance of 0 expired", i)
		}
	})
	t.Run("exhausted", func(t *testing.T) {
		p := NewPool([2]byte{127, 0})
		for range poolSize {
			if _, ok := p.alloc(now); !ok {
				t.Fatalf("pool ran out early")
			}
		}
		if _, ok := p.alloc(now); ok {
			t.Errorf("allocated past the pool's size")
		}
	})
}

func TestParsePrefix(t *testing.T) {
	tests := []struct {
		in   string
		want [2]byte
		ok   bool
	}{
		{"127.0.", [2]byte{127, 0}, true},
		{"10.200.", [2]byte{10, 200}, true},
		{"127.0", [2]byte{}, false},
		{"127.", [2]byte{}, false},
		{"127.0.0.", [2]byte{}, false},
		{"127.256.", [2]byte{}, false},
		{"127.00.", [2]byte{}, false},
		{"::1.", [2]byte{}, false},
	}
	for _, tt := range tests {
		got, err := ParsePrefix(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParsePrefix(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// exhaust takes every address of p, so that Listen can only wait.
func exhaust(p *Pool) {
	for range poolSize {
		p.alloc(time.Now())
	}
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func TestListenGivesUp(t *testing.T) {
	tests := []struct {
		name    string
		full    bool // the pool has no free address
		port    int
		cancel  <-chan struct{}
		ctx     func() (context.Context, context.CancelFunc)
		wantErr error // nil: any error
		maxTime time.Duration
	}{
		{name: "ctx already done", port: 0, ctx: canceledCtx, wantErr: context.Canceled},
		{name: "ctx done while waiting for an address", full: true, port: 0,
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 50*time.Millisecond)
			},
			wantErr: context.DeadlineExceeded},
		{name: "cancel closed while waiting for an address", full: true, port: 0, cancel: closed(),
			ctx: background, wantErr: ErrCanceled},
		{name: "negative port", port: -1, ctx: background},
		{name: "port too large", port: 65536, ctx: background},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPool(testPrefix)
			if tt.full {
				exhaust(p)
			}
			ctx, cancel := tt.ctx()
			defer cancel()
			start := time.Now()
			ln, addr, release, err := p.Listen(ctx, tt.port, tt.cancel, nil)
			if err == nil {
				ln.Close()
				release()
				t.Fatalf("listened on %s, want an error", addr)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if ln != nil || addr.IsValid() || release != nil {
				t.Errorf("error %v came with %v, %v, release=%v", err, ln, addr, release != nil)
			}
			// Giving up never waits for the next round.
			if took := time.Since(start); took > bindRetry/2 {
				t.Errorf("gave up after %v", took)
			}
		})
	}
}

func background() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

func canceledCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx, cancel
}

func TestListen(t *testing.T) {
	// A port nobody else uses on the test addresses: the one the kernel
	// picked for the blocker, which holds the pool's first address.
	blocker, err := net.Listen("tcp", netip.AddrPortFrom(NewPool(testPrefix).addr(0), 0).String())
	if err != nil {
		t.Fatalf("cannot bind the test range %d.%d.x.y: %v", testPrefix[0], testPrefix[1], err)
	}
	defer blocker.Close()
	port := blocker.Addr().(*net.TCPAddr).Port

	type step struct {
		op   string // "listen", or "release<n>" for the n-th listen's address
		want string // the address listen binds
	}
	tests := []struct {
		name    string
		port    int
		blocked bool // the pool's first address is held elsewhere
		steps   []step
	}{
		{name: "lowest free first, reused after release", port: 0, steps: []step{
			{"listen", "127.83.1.1"}, {"listen", "127.83.1.2"}, {"listen", "127.83.1.3"},
			{"release1", ""}, {"listen", "127.83.1.2"}, {"listen", "127.83.1.4"},
		}},
		{name: "address held elsewhere skipped and avoided", port: port, blocked: true, steps: []step{
			{"listen", "127.83.1.2"}, {"listen", "127.83.1.3"},
			{"release0", ""}, {"listen", "127.83.1.2"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPool(testPrefix)
			var lns []net.Listener
			var releases []func()
			defer func() {
				for i, ln := range lns {
					ln.Close()
					releases[i]()
				}
			}()
			for _, s := range tt.steps {
				if s.op != "listen" {
					n := int(s.op[len("release")] - '0')
					lns[n].Close()
					releases[n]()
					releases[n]() // twice is harmless
					continue
				}
				ln, addr, release, err := p.Listen(context.Background(), tt.port, nil, nil)
				if err != nil {
					t.Fatalf("Listen: %v", err)
				}
				lns, releases = append(lns, ln), append(releases, release)
				if addr.String() != s.want {
					t.Errorf("listened on %s, want %s", addr, s.want)
				}
				got := ln.Addr().(*net.TCPAddr).AddrPort()
				if got.Addr() != addr || tt.port != 0 && int(got.Port()) != tt.port {
					t.Errorf("listener on %s, want %s:%d", got, addr, tt.port)
				}
			}
		})
	}
}

// TestListenConcurrent checks, under -race in particular, that concurrent
// Listens share the pool without handing out an address twice.
func TestListenConcurrent(t *testing.T) {
	p := NewPool(testPrefix)
	const n = 32
	var wg sync.WaitGroup
	addrs := make([]netip.Addr, n)
	lns := make([]net.Listener, n)
	for i := range n {
		wg.Go(func() {
			ln, addr, release, err := p.Listen(context.Background(), 0, nil, nil)
			if err != nil {
				t.Errorf("Listen: %v", err)
				return
			}
			_ = release // the pool goes away with the test
			addrs[i], lns[i] = addr, ln
		})
	}
	wg.Wait()
	seen := map[netip.Addr]bool{}
	for i, a := range addrs {
		if lns[i] != nil {
			lns[i].Close()
		}
		if seen[a] {
			t.Errorf("%s handed out twice", a)
		}
		seen[a] = true
	}
}

// TestNewPoolWith: the pool binds through the function it was given (a
// network namespace's, in e2e), with the address it picked.
func TestNewPoolWith(t *testing.T) {
	var got []string
	listen := func(ctx context.Context, network, address string) (net.Listener, error) {
		got = append(got, network+" "+address)
		return (&net.ListenConfig{}).Listen(ctx, network, address)
	}
	p := NewPoolWith(testPrefix, listen)
	ln, addr, release, err := p.Listen(context.Background(), 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	defer ln.Close()
	if want := []string{"tcp " + addr.String() + ":0"}; !slices.Equal(got, want) {
		t.Errorf("listen called with %q, want %q", got, want)
	}
}
