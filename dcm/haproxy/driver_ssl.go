package haproxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// certTx is one certificate op's commands, and the abort that undoes its
// open transaction when one of them fails.
type certTx struct {
	op    dcm.Op
	cmds  []Command
	abort *Command
}

// splitCertOps cuts ops into the leading certificate ops, the server and
// map ops, and the trailing certificate ops.
func splitCertOps(ops []dcm.Op) (first, rest, last []dcm.Op, err error) {
	isCert := func(o dcm.Op) bool {
		return o.Kind == dcm.OpCertAdd || o.Kind == dcm.OpCertUpdate || o.Kind == dcm.OpCertDel || isCAOp(o)
	}
	i := 0
	for i < len(ops) && isCert(ops[i]) {
		i++
	}
	j := len(ops)
	for j > i && isCert(ops[j-1]) {
		j--
	}
	if slices.ContainsFunc(ops[i:j], isCert) {
		return nil, nil, nil, errors.New("certificate ops between server ops")
	}
	return ops[:i], ops[i:j], ops[j:], nil
}

func isCAOp(o dcm.Op) bool { return o.Kind == dcm.OpCAAdd || o.Kind == dcm.OpCADel }

// servedCertOps keeps the CA ops and the certificate ops of what HAProxy
// serves: the HTTPS frontend's when it has one, the Gateway HTTPS binds'
// it binds.
func (d *Driver) servedCertOps(ops []dcm.Op, next dcm.State) []dcm.Op {
	binds := d.cfg.Settings.gatewayBindsWith(next.GatewayBinds, true)
	var out []dcm.Op
	for _, o := range ops {
		switch {
		case isCAOp(o):
		case o.Cert != nil && o.Cert.Bind != "":
			if !slices.Contains(binds, o.Cert.Bind) {
				continue
			}
		case d.cfg.Settings.HTTPSBind == "":
			continue
		}
		out = append(out, o)
	}
	return out
}

// certTransactions spells certificate and CA ops, with the PEM of each
// version from the CertSource or CASource; nothing is sent when one cannot
// be.
func (d *Driver) certTransactions(ops []dcm.Op) ([]certTx, error) {
	txs := make([]certTx, 0, len(ops))
	for _, op := range ops {
		if isCAOp(op) {
			var pemText string
			if op.Kind == dcm.OpCAAdd {
				if op.Upstream == nil {
					return nil, fmt.Errorf("op %s: no CA", op.Kind)
				}
				p, err := d.caPEM(*op.Upstream)
				if err != nil {
					return nil, err
				}
				pemText = strings.TrimSuffix(string(p), "\n")
			}
			cmds, abort, err := CACommands(op, pemText)
			if err != nil {
				return nil, err
			}
			txs = append(txs, certTx{op: op, cmds: cmds, abort: abort})
			continue
		}
		var pemText string
		switch {
		case op.Cert != nil && op.Kind == dcm.OpCertDel && op.Cert.Bind != "" && op.Cert.Host == "":
			// A Gateway bind's default goes back to dcm's own.
			p, err := NormalizePEM(d.defaultCert)
			if err != nil {
				return nil, fmt.Errorf("op %s: default certificate: %w", op.Kind, err)
			}
			pemText = p
		case op.Kind != dcm.OpCertDel:
			if op.Cert == nil {
				return nil, fmt.Errorf("op %s: no certificate", op.Kind)
			}
			p, err := d.certPEM(*op.Cert)
			if err != nil {
				return nil, err
			}
			pemText = strings.TrimSuffix(string(p), "\n")
		}
		cmds, abort, err := CertCommands(op, pemText, d.cfg.Settings.HTTP2)
		if err != nil {
			return nil, err
		}
		txs = append(txs, certTx{op: op, cmds: cmds, abort: abort})
	}
	return txs, nil
}

func (d *Driver) runCertTransactions(ctx context.Context, txs []certTx) error {
	if len(txs) == 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return err
	}
	for _, tx := range txs {
		if _, err := d.client.Exec(ctx, tx.cmds); err != nil {
			if tx.abort != nil {
				// Best effort: a transaction left open would swallow the
				// next set ssl cert, whatever file it names.
				if _, aerr := d.client.Exec(ctx, []Command{*tx.abort}); aerr != nil {
					err = errors.Join(err, fmt.Errorf("abort: %w", aerr))
				}
			}
			return fmt.Errorf("apply %s: %w", tx.op, err)
		}
	}
	return nil
}

// CASource hands the driver the PEM of a destination CA version (ca is
// UpstreamTLS.CA, where it came from).
type CASource interface {
	CAPEM(ca, version string) ([]byte, error)
}
