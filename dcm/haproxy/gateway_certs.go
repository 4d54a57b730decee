package haproxy

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// Certificates of Gateway HTTPS listeners (dcm.Cert with a Bind): every
// Gateway HTTPS bind has its own crt-list (GatewayCrtList), one line per
// listener hostname naming its own file (GatewayCertFile), added and
// deleted at runtime as the edge routes' are, and its own default file,
// served for an SNI no line matches: dcm's self-signed certificate until
// a listener without a hostname has one, which then replaces the file's
// content at runtime (set ssl cert) and is replaced back when it goes.

// gatewayFileBase is a bind in a file name: "gw_<ip>_<port>".
func gatewayFileBase(bind string) string {
	return CertsDir + "/gw_" + strings.ReplaceAll(bind, ":", "_")
}

// GatewayCrtList is the crt-list of a Gateway HTTPS bind, relative to the
// cfg.
func GatewayCrtList(bind string) string { return gatewayFileBase(bind) + ".list" }

// GatewayCertFile is the file of a Gateway listener's certificate on a
// bind, for an SNI host ("*" as "_", as CertFile), or, for "", the bind's
// default. No host file of CertFile starts with "gw_" (hosts have no "_").
func GatewayCertFile(bind, host string) string {
	if host == "" {
		return gatewayFileBase(bind) + ".pem"
	}
	return gatewayFileBase(bind) + "_" + strings.Replace(host, "*", "_", 1) + ".pem"
}

func gatewayCertFileFor(c dcm.Cert) (string, error) {
	if err := dcm.ValidateGatewayBind("certificate bind", c.Bind); err != nil {
		return "", err
	}
	if c.Host != "" {
		if err := dcm.ValidateGatewayHostname("certificate host", c.Host); err != nil {
			return "", err
		}
	}
	return GatewayCertFile(c.Bind, c.Host), nil
}

// gatewayCertCommands spells a Gateway listener's certificate op: a
// host's file and crt-list line as an edge host's (CertCommands), the
// bind's default file updated in place (added: the listener's; deleted:
// pemText is dcm's own again).
func gatewayCertCommands(op dcm.Op, pemText string) ([]Command, *Command, error) {
	file, err := gatewayCertFileFor(*op.Cert)
	if err != nil {
		return nil, nil, fmt.Errorf("op %s: %w", op.Kind, err)
	}
	list := GatewayCrtList(op.Cert.Bind)
	ab := Command{text: "abort ssl cert " + file, kind: replyAny, file: file}
	set := func() ([]Command, error) {
		if err := payloadText(pemText); err != nil {
			return nil, fmt.Errorf("op %s %s: %w", op.Kind, op.Cert.Key(), err)
		}
		return []Command{{text: "set ssl cert " + file, payload: pemText, kind: replySetCert, file: file},
			{text: "commit ssl cert " + file, kind: replyCommitCert, file: file}}, nil
	}
	if op.Cert.Host == "" || op.Kind == dcm.OpCertUpdate {
		cmds, err := set()
		return cmds, &ab, err
	}
	switch op.Kind {
	case dcm.OpCertAdd:
		cmds, err := set()
		if err != nil {
			return nil, nil, err
		}
		cmds = append([]Command{{text: "new ssl cert " + file, kind: replyNewCert, file: file}}, cmds...)
		return append(cmds, Command{text: "add ssl crt-list " + list, payload: file + " " + op.Cert.Host, kind: replyAddCrtList, file: file, list: list}), &ab, nil
	case dcm.OpCertDel:
		return []Command{
			{text: "del ssl crt-list " + list + " " + file, kind: replyDelCrtList, file: file, list: list},
			{text: "del ssl cert " + file, kind: replyDelCert, file: file},
		}, nil, nil
	}
	return nil, nil, fmt.Errorf("op %s: not a certificate op", op.Kind)
}

// renderGatewayCrtLists is the crt-list of every Gateway HTTPS bind: a
// line per listener hostname's certificate, by file name then host.
func renderGatewayCrtLists(binds []string, backends []*dcm.Backend) (map[string][]byte, error) {
	if len(binds) == 0 {
		return nil, nil
	}
	out := make(map[string][]byte, len(binds))
	bufs := make(map[string]*bytes.Buffer, len(binds))
	for _, b := range binds {
		bufs[b] = &bytes.Buffer{}
	}
	for _, c := range dcm.CertsOf(backends) {
		if c.Bind == "" || c.Host == "" {
			continue
		}
		buf, ok := bufs[c.Bind]
		if !ok {
			continue // a bind HAProxy does not have: its routes serve nothing
		}
		file, err := gatewayCertFileFor(c)
		if err != nil {
			return nil, fmt.Errorf("gateway certificate %s: %w", c.Key(), err)
		}
		buf.WriteString(file + " " + c.Host + "\n")
	}
	for b, buf := range bufs {
		out[GatewayCrtList(b)] = buf.Bytes()
	}
	return out, nil
}

// gatewayPEMs adds to f the files of the Gateway listeners' certificates:
// every HTTPS bind's default (its listener's without hostname, or dcm's
// own) and every hostname's; keep collects the versions named.
func (d *Driver) gatewayPEMs(f *Files, st dcm.State, certs []dcm.Cert, keep map[string]bool) error {
	binds := d.cfg.Settings.gatewayBindsWith(st.GatewayBinds, true)
	if len(binds) == 0 {
		return nil
	}
	if f.Certs == nil {
		f.Certs = map[string][]byte{}
	}
	own, err := NormalizePEM(d.defaultCert)
	if err != nil {
		return fmt.Errorf("default certificate: %w", err)
	}
	for _, b := range binds {
		f.Certs[GatewayCertFile(b, "")] = []byte(own + "\n")
	}
	for _, c := range certs {
		if c.Bind == "" {
			continue
		}
		file, err := gatewayCertFileFor(c)
		if err != nil {
			return err
		}
		if _, ok := f.Certs[GatewayCertFile(c.Bind, "")]; !ok {
			continue // a bind HAProxy does not have
		}
		p, err := d.certPEM(c)
		if err != nil {
			return err
		}
		f.Certs[file] = p
		keep[certKey(c)] = true
	}
	return nil
}
