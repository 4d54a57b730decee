package gwdriver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Gateway is how dcm serves Gateways in the run: the flags make
// conformance passes it, each at the value dcm's Gateway support documents
// as its default where it has one.
type Gateway struct {
	ControllerName string // --gateway-controller-name
	Addresses      string // --gateway-addresses: loopback addresses Gateways get
	HTTPPorts      string // --gateway-http-ports
	HTTPSPorts     string // --gateway-https-ports
}

// DefaultGateway is the run's Gateway configuration: a /28 of loopback
// addresses (Linux serves all of 127.0.0.0/8 on lo, nothing to configure)
// with the ports the suite's listeners use, which it sends its requests to:
// 80 and 443, 8080 (GatewayPort8080, the port redirects) and 8090
// (HTTPRouteListenerPortMatching) for HTTP, 8443 for HTTPS. dcm binds them
// ahead of time, as a deployment lists the ports its Gateways use most; a
// listener on another port would be bound by a reload
// (gateway-listener-port), which the run must not have.
var DefaultGateway = Gateway{ControllerName: ControllerName, Addresses: "127.0.20.0/28",
	HTTPPorts: "80,8080,8090", HTTPSPorts: "443,8443"}

// Flags are g as dcm's command-line flags.
func (g Gateway) Flags() []string {
	return []string{
		"--gateway-controller-name=" + g.ControllerName,
		"--gateway-addresses=" + g.Addresses,
		"--gateway-http-ports=" + g.HTTPPorts,
		"--gateway-https-ports=" + g.HTTPSPorts,
	}
}

// MissingFlags reports which of flags (as --name=value) dcm's --help does
// not list: a dcm without Gateway support yet.
func MissingFlags(ctx context.Context, bin string, flags []string) ([]string, error) {
	out, err := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
	if err != nil && len(out) == 0 {
		return nil, fmt.Errorf("%s --help: %w", bin, err)
	}
	var missing []string
	for _, f := range flags {
		name, _, _ := strings.Cut(f, "=")
		// pflag lists "--name type" or, for a boolean, "--name[=true|false]".
		if !strings.Contains(string(out), name+" ") && !strings.Contains(string(out), name+"[") {
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// DCM is the running dcm binary.
type DCM struct {
	Portal  string // its --listen address
	WorkDir string
	cmd     *exec.Cmd
	exited  chan error
	client  *http.Client
}

// StartDCM starts bin with args (they must include --listen=portal and
// --work-dir=workDir) and waits until its /healthz answers. dcm gets
// SIGKILL if this process dies; its HAProxy follows it (dcm starts
// HAProxy with a parent-death signal of its own).
func StartDCM(ctx context.Context, bin, portal, workDir string, args []string, out io.Writer) (*DCM, error) {
	d := &DCM{Portal: portal, WorkDir: workDir, exited: make(chan error, 1), client: &http.Client{Timeout: 10 * time.Second}}
	d.cmd = exec.Command(bin, args...)
	d.cmd.Stdout, d.cmd.Stderr = out, out
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start dcm: %w", err)
	}
	go func() { d.exited <- d.cmd.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := d.client.Get("http://" + portal + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d, nil
			}
		}
		select {
		case err := <-d.exited:
			d.exited <- err
			return nil, fmt.Errorf("dcm exited before it was healthy: %v", err)
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), d.Stop())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, errors.Join(fmt.Errorf("dcm not healthy within a minute: %v", err), d.Stop())
		}
	}
}

// Pid is dcm's process id.
func (d *DCM) Pid() int { return d.cmd.Process.Pid }

// Stop sends SIGTERM and waits 20 seconds, then kills. Calling it again
// does nothing.
func (d *DCM) Stop() error {
	if d.cmd.Process == nil {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.exited:
		d.exited <- err
		return err
	case <-time.After(20 * time.Second):
		_ = d.cmd.Process.Kill()
		err := <-d.exited
		d.exited <- err
		return fmt.Errorf("dcm did not exit within 20s of SIGTERM (killed): %v", err)
	}
}

// Reloads are dcm_reloads_total by reason, from dcm's /metrics.
func (d *DCM) Reloads(ctx context.Context) (Counts, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.Portal+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("dcm metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("dcm metrics: %s", resp.Status)
	}
	return ParseCounter(resp.Body, "dcm_reloads_total", "reason")
}

// Counts are a counter's values by one label.
type Counts map[string]float64

// Total is the sum over the label's values.
func (c Counts) Total() float64 {
	t := 0.0
	for _, v := range c {
		t += v
	}
	return t
}

// Minus is c less before, label by label.
func (c Counts) Minus(before Counts) Counts {
	out := Counts{}
	for k, v := range c {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// String lists the values by label, sorted.
func (c Counts) String() string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%g", k, c[k])
	}
	return b.String()
}

// ParseCounter reads the samples of counter name from Prometheus's text
// format, by the value of label.
func ParseCounter(r io.Reader, name, label string) (Counts, error) {
	out := Counts{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		labels, value := "", rest
		if strings.HasPrefix(rest, "{") {
			end := strings.LastIndex(rest, "}")
			if end < 0 {
				return nil, fmt.Errorf("metrics line %q: unterminated labels", line)
			}
			labels, value = rest[1:end], rest[end+1:]
		}
		f := strings.Fields(value)
		if len(f) == 0 {
			return nil, fmt.Errorf("metrics line %q: no value", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out[labelValue(labels, label)] += v
	}
	return out, sc.Err()
}

// labelValue finds label="value" among a sample's labels.
func labelValue(labels, label string) string {
	for _, kv := range strings.Split(labels, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if ok && k == label {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// gatewayStaticAddresses are the addresses GatewayStaticAddresses asks a
// Gateway for: the pool's last (usable: in --gateway-addresses, and the
// last one the suite's other Gateways would be given) and the one after it
// (unusable: outside the pool). The suite only reads the Gateway's status
// for them; it sends no traffic there.
func gatewayStaticAddresses(pool string) (usable, unusable string) {
	p, err := netip.ParsePrefix(pool)
	if err != nil {
		return "", ""
	}
	p = p.Masked()
	last := p.Addr()
	for n := 1; n < 1<<(p.Addr().BitLen()-p.Bits()); n++ {
		last = last.Next()
	}
	return last.String(), last.Next().String()
}
