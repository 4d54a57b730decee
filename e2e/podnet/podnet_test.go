package podnet

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary a helper process that holds a network
// until it is killed (see holdNetwork).
const helperEnv = "DCM_PODNET_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(holdNetwork(mode))
	}
	os.Exit(m.Run())
}

// holdNetwork sets a network up, prints "HOLD <slot>", and holds it until
// its stdin closes (the test is done with it) or two minutes pass. In mode
// "signal" it closes the network on SIGINT/SIGTERM; in mode "plain" a
// signal kills it with the network in place.
func holdNetwork(mode string) int {
	n, err := Setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if mode == "signal" {
		defer n.CloseOnSignal()()
	}
	fmt.Printf("HOLD %d\n", n.slot)
	eof := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(eof)
	}()
	select {
	case <-eof:
	case <-time.After(2 * time.Minute):
	}
	if err := n.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// needRoot skips when what the package needs is absent, saying which.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("network namespaces and veth pairs need root (euid %d)", os.Geteuid())
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skipf("iproute2's ip is not installed: %v", err)
	}
}

func setup(t *testing.T) *Network {
	t.Helper()
	n, err := Setup()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	return n
}

func ipOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// echo listens at addr inside n and checks that bytes sent from the host
// come back: the host reaches the pod address, and the reply the host.
func echo(t *testing.T, n *Network, addr netip.Addr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ln, err := n.Listen(ctx, "tcp", netip.AddrPortFrom(addr, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.CopyN(c, c, 4)
	}()
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial %s from the host: %v", ln.Addr(), err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "ping"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo from %s: %q, %v", ln.Addr(), got, err)
	}
}

func TestSetupAndClose(t *testing.T) {
	needRoot(t)
	n, err := Setup()
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	s := n.slot
	if p := n.Prefix(); p.Bits() != 16 || p.Addr().As4()[0] != 10 || int(p.Addr().As4()[1]) < firstSlot || int(p.Addr().As4()[1]) > lastSlot {
		t.Fatalf("prefix %s: want 10.X.0.0/16 with X in %d..%d", p, firstSlot, lastSlot)
	}
	if !strings.Contains(ipOut(t, "netns", "list"), n.Name()) {
		t.Errorf("ip netns list has no %s", n.Name())
	}
	if out := ipOut(t, "-4", "-o", "addr", "show", "dev", s.hostLink()); !strings.Contains(out, " "+s.hostAddr().String()+"/16 ") {
		t.Errorf("host end %s: %s, want %s/16", s.hostLink(), out, s.hostAddr())
	}
	// The host reaches pods through the veth; nothing of the range is
	// local on the host.
	if out := ipOut(t, "route", "get", n.Addr(1, 1).String()); strings.HasPrefix(out, "local") || !strings.Contains(out, "dev "+s.hostLink()) {
		t.Errorf("host route to a pod: %s, want via %s", out, s.hostLink())
	}
	if ln, err := net.Listen("tcp", netip.AddrPortFrom(n.Addr(1, 1), 0).String()); err == nil {
		ln.Close()
		t.Errorf("the host can bind the pod address %s", n.Addr(1, 1))
	}
	local := ipOut(t, "-n", n.Name(), "route", "show", "table", "local")
	for _, p := range s.podRoutes() {
		if !strings.Contains(local, "local "+p.String()+" dev lo") {
			t.Errorf("the namespace's local table lacks %s:\n%s", p, local)
		}
	}
	// The host's address is not the namespace's: replies to it leave by
	// the veth.
	if out := ipOut(t, "-n", n.Name(), "route", "get", s.hostAddr().String()); strings.HasPrefix(out, "local") || !strings.Contains(out, "dev "+s.peerLink()) {
		t.Errorf("the namespace's route to the host: %s, want via %s", out, s.peerLink())
	}
	for _, a := range []netip.Addr{n.Addr(1, 1), n.Addr(2, 200), n.Addr(77, 7), n.Addr(255, 254)} {
		if !n.Contains(a) {
			t.Errorf("Contains(%s) = false", a)
		}
		echo(t, n, a)
	}
	// The namespace answered the host's ARP for a local-routed address.
	if out := ipOut(t, "neigh", "show", n.Addr(1, 1).String(), "dev", s.hostLink()); !strings.Contains(out, "lladdr") {
		t.Errorf("no neighbour entry for %s on the host: %q", n.Addr(1, 1), out)
	}
	for _, a := range []netip.Addr{s.hostAddr(), netip.MustParseAddr("127.0.0.1"), netip.AddrFrom4([4]byte{10, byte(s) + 1, 1, 1})} {
		if n.Contains(a) {
			t.Errorf("Contains(%s) = true", a)
		}
	}

	mark := markLeftover(t, s)
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	checkGone(t, s, mark)
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := n.Listen(context.Background(), "tcp", netip.AddrPortFrom(n.Addr(1, 1), 0).String()); !errors.Is(err, ErrClosed) {
		t.Errorf("Listen after Close: %v, want ErrClosed", err)
	}
}

// TestParallelSetups: networks set up at the same time, as by test
// packages running side by side, get different /16s, and each works.
func TestParallelSetups(t *testing.T) {
	needRoot(t)
	nets := make([]*Network, 3)
	errs := make([]error, len(nets))
	var wg sync.WaitGroup
	for i := range nets {
		wg.Go(func() { nets[i], errs[i] = Setup() })
	}
	wg.Wait()
	for i, n := range nets {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		t.Cleanup(func() { n.Close() })
	}
	seen := map[netip.Prefix]bool{}
	for _, n := range nets {
		if seen[n.Prefix()] {
			t.Errorf("two networks got %s", n.Prefix())
		}
		seen[n.Prefix()] = true
		echo(t, n, n.Addr(1, 1))
	}
}

// TestThreadsStayInHostNamespace: after many listeners opened inside, no
// thread of the process is left in the namespace.
func TestThreadsStayInHostNamespace(t *testing.T) {
	needRoot(t)
	n := setup(t)
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			ln, err := n.Listen(context.Background(), "tcp", netip.AddrPortFrom(n.Addr(3, byte(1+i)), 0).String())
			if err != nil {
				t.Error(err)
				return
			}
			ln.Close()
		})
	}
	wg.Wait()
	tasks, err := filepath.Glob("/proc/self/task/*/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		ns, err := os.Readlink(task)
		if err != nil {
			continue // the thread ended meanwhile
		}
		if ns != host {
			t.Errorf("%s is in %s, not the host's %s", task, ns, host)
		}
	}
}

// TestSweepAfterKill: a run killed with SIGKILL holding a network leaves it
// behind; the next Setup removes it.
func TestSweepAfterKill(t *testing.T) {
	needRoot(t)
	h := startHolder(t, "plain")
	mark := markLeftover(t, h.slot)
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = h.cmd.Wait()
	if !exists(h.slot.netnsPath()) || !exists(filepath.Join(sysNet, h.slot.hostLink())) {
		t.Fatalf("a killed run left nothing of %s to sweep: the test proves nothing", h.slot.netns())
	}
	setup(t)
	checkGone(t, h.slot, mark)
}

// TestCloseOnSignal: SIGTERM tears the network down and still ends the
// process by SIGTERM.
func TestCloseOnSignal(t *testing.T) {
	needRoot(t)
	h := startHolder(t, "signal")
	mark := markLeftover(t, h.slot)
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := h.cmd.Wait()
	ws, ok := h.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("helper ended with %v, want killed by SIGTERM", err)
	}
	checkGone(t, h.slot, mark)
}

func TestOverlaps(t *testing.T) {
	routes, err := parseRoutes([]byte(`[{"dst":"default","dev":"eth0"},{"dst":"10.201.4.0/24","dev":"tun0"},
		{"dst":"10.202.0.0/16","dev":"dcmp202"},{"type":"local","dst":"10.203.9.9","dev":"eth1","table":"local"}]`))
	if err != nil {
		t.Fatal(err)
	}
	for s, want := range map[slot]bool{200: false, 201: true, 202: false, 203: true} {
		if got := s.overlaps(routes); got != want {
			t.Errorf("slot %d overlaps = %v, want %v", s, got, want)
		}
	}
}

// holder is a helper process holding a network.
type holder struct {
	cmd  *exec.Cmd
	slot slot
}

// startHolder re-executes the test binary as a helper holding a network
// (see holdNetwork) and waits until it does.
func startHolder(t *testing.T, mode string) *holder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	// Closed when the test ends: a helper still alive then lets go.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Scan()
		line <- sc.Text()
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var got string
	select {
	case got = <-line:
	case <-time.After(time.Minute):
		t.Fatal("helper did not set a network up within a minute")
	}
	x, err := strconv.Atoi(strings.TrimPrefix(got, "HOLD "))
	if err != nil {
		t.Fatalf("helper said %q: %v", got, err)
	}
	return &holder{cmd: cmd, slot: slot(x)}
}

// markLeftover tags a slot's veth and namespace, so that checkGone can
// tell them from a network another run set up on the slot meanwhile.
func markLeftover(t *testing.T, s slot) string {
	t.Helper()
	mark := fmt.Sprintf("podnet-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	ipOut(t, "link", "set", "dev", s.hostLink(), "alias", mark)
	ipOut(t, "-n", s.netns(), "link", "set", "dev", "lo", "alias", mark)
	return mark
}

// checkGone fails if the slot's marked veth or namespace is still there;
// what ip netns list and ip link show under the slot's names now, if
// anything, is another run's.
func checkGone(t *testing.T, s slot, mark string) {
	t.Helper()
	if alias, err := os.ReadFile(filepath.Join(sysNet, s.hostLink(), "ifalias")); err == nil && strings.TrimSpace(string(alias)) == mark {
		t.Errorf("veth %s is left", s.hostLink())
	}
	if !strings.Contains(ipOut(t, "netns", "list"), s.netns()) {
		return
	}
	out, err := exec.Command("ip", "-j", "-n", s.netns(), "link", "show", "dev", "lo").Output()
	if err != nil {
		return // deleted meanwhile
	}
	var links []struct {
		IfAlias string `json:"ifalias"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		t.Fatalf("ip -j link: %v", err)
	}
	if len(links) == 1 && links[0].IfAlias == mark {
		t.Errorf("namespace %s is left", s.netns())
	}
}
