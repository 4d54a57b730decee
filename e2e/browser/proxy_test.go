package browser

import (
	"io"
	"net"
	"sync"
	"testing"
)

// cutter is a TCP proxy between chromium and the portal that a test can
// cut: Cut closes every connection through it and refuses new ones until
// Resume, as a network outage or a restarting load balancer would.
type cutter struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

func startCutter(t *testing.T, target string) *cutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.serve(&wg)
	}()
	t.Cleanup(func() {
		ln.Close()
		c.Cut()
		wg.Wait()
	})
	return c
}

// URL is the portal's address through the proxy.
func (c *cutter) URL() string { return "http://" + c.ln.Addr().String() }

func (c *cutter) serve(wg *sync.WaitGroup) {
	for {
		in, err := c.ln.Accept()
		if err != nil {
			return
		}
		out, err := c.open(in)
		if err != nil {
			in.Close()
			continue
		}
		wg.Add(2)
		go c.pipe(wg, in, out)
		go c.pipe(wg, out, in)
	}
}

// open connects to the portal unless the proxy is cut.
func (c *cutter) open(in net.Conn) (net.Conn, error) {
	c.mu.Lock()
	down := c.down
	c.mu.Unlock()
	if down {
		return nil, net.ErrClosed
	}
	out, err := net.Dial("tcp", c.target)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		out.Close()
		return nil, net.ErrClosed
	}
	c.conns[in], c.conns[out] = struct{}{}, struct{}{}
	return out, nil
}

func (c *cutter) pipe(wg *sync.WaitGroup, dst, src net.Conn) {
	defer wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	c.mu.Lock()
	delete(c.conns, dst)
	delete(c.conns, src)
	c.mu.Unlock()
}

// Cut closes every connection and refuses new ones.
func (c *cutter) Cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = true
	for conn := range c.conns {
		conn.Close()
	}
}

// Resume lets connections through again.
func (c *cutter) Resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.down = false
}
