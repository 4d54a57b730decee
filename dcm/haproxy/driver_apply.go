package haproxy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// Apply sends ops as a pipelined batch, one command per server op and one
// per changed map entry (mapCommands): the server ops before the map ops,
// the map ops (contiguous in ops, as the planner emits them), the server
// ops after them. next, the state the ops lead to, is what Write writes
// after; the map ops carry their entries themselves. Nothing is sent when
// any op fails validation; a failed batch stops before the next.
//
// Certificate ops come first and last (the planner puts a host's
// certificate in place before its route and removes it after): each is
// its own batch, one SSL transaction at a time, aborted when it fails.
// Without an HTTPS frontend they are skipped: no certificate is served.
// A *BusyError says that everything was applied but the del server
// commands it lists, and returns unsent the certificate and CA ops after
// them.
func (d *Driver) Apply(ctx context.Context, ops []dcm.Op, next dcm.State) error {
	d.setApplied(next)
	certFirst, ops, certLast, err := splitCertOps(ops)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	// Without an HTTPS frontend no route's certificate is served, nor a
	// Gateway listener's on a bind HAProxy lacks; CA files are still
	// needed, by servers.
	certFirst, certLast = d.servedCertOps(certFirst, next), d.servedCertOps(certLast, next)
	first, err := d.certTransactions(certFirst)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	last, err := d.certTransactions(certLast)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	batch, err := d.prepareServersAndMaps(ops)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	if err := d.runCertTransactions(ctx, first); err != nil {
		return err
	}
	if err := d.applyServersAndMaps(ctx, batch); err != nil {
		var be *BusyError
		if errors.As(err, &be) {
			// A server HAProxy kept may use a CA file the plan deletes
			// after it: deleting the file now would leave dcm believing it
			// is still there (so deleting it again later fails) and a
			// server re-added with it unable to load it. Which still go is
			// the planner's rule (plan.KeepBusy): the driver sends none.
			for _, tx := range last {
				be.Unsent = append(be.Unsent, tx.op)
			}
		}
		return err
	}
	return d.runCertTransactions(ctx, last)
}

// serverBatch is the server ops and map ops of an Apply, spelled and
// validated before anything is sent.
type serverBatch struct {
	ops  int
	cmds []Command
}

func (d *Driver) prepareServersAndMaps(ops []dcm.Op) (serverBatch, error) {
	pre, maps, post, err := splitMapOps(ops)
	if err != nil {
		return serverBatch{}, err
	}
	cmds, err := commandsFor(pre, d.cfg.Settings)
	if err != nil {
		return serverBatch{}, err
	}
	mapCmds, err := d.mapCommands(maps)
	if err != nil {
		return serverBatch{}, err
	}
	postCmds, err := commandsFor(post, d.cfg.Settings)
	if err != nil {
		return serverBatch{}, err
	}
	return serverBatch{ops: len(ops), cmds: append(append(cmds, mapCmds...), postCmds...)}, nil
}

func (d *Driver) applyServersAndMaps(ctx context.Context, b serverBatch) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return err
	}
	_, err := d.client.Exec(ctx, b.cmds)
	busy, err := splitBusy(err)
	if err != nil {
		return fmt.Errorf("apply %d ops (%d commands): %w", b.ops, len(b.cmds), err)
	}
	return busyError(busy)
}

// BusyError is a batch that HAProxy applied but for del server commands it
// refused because a connection was still attached to the server: a request
// that arrived between the read-back that found the server idle and the
// command. Each command of a batch is independent, so the rest stands.
// The driver only recognises the refusal (splitBusy) and reports it; what
// dcm does about it (the servers stay, in maint, until a later read-back
// finds them idle; which unsent ops still go) is one rule, plan.KeepBusy.
type BusyError struct {
	// Servers are "<proxy>/<server>", as the commands named them.
	Servers []string
	// Unsent are the certificate and CA ops the plan put after the server
	// ops, not sent: one of Servers may still use a CA file they delete.
	Unsent []dcm.Op
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("del server refused, connections still attached: %s", strings.Join(e.Servers, ", "))
}

func busyError(servers []string) error {
	if len(servers) == 0 {
		return nil
	}
	return &BusyError{Servers: servers}
}

// delServerBusy is 2.6's reply to del server while the server has a stream
// or a connection in use (cli_parse_delete_server).
const delServerBusy = "Server still has connections attached to it, cannot remove it."

// splitBusy takes the busy del server replies out of an Exec error: the
// servers they named, and what remains (nil when they were all of it).
func splitBusy(err error) (busy []string, rest error) {
	if err == nil {
		return nil, nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var others []error
	for _, e := range errs {
		var ce *CommandError
		if errors.As(e, &ce) && strings.HasPrefix(ce.Command, "del server ") {
			if _, msg, _ := severity(ce.Reply); strings.TrimSpace(msg) == delServerBusy {
				busy = append(busy, strings.TrimPrefix(ce.Command, "del server "))
				continue
			}
		}
		others = append(others, e)
	}
	return busy, errors.Join(others...)
}

func commandsFor(ops []dcm.Op, s Settings) ([]Command, error) {
	cmds := make([]Command, 0, len(ops))
	for _, op := range ops {
		if op.Kind == dcm.OpCookieKey {
			cs, err := CookieKeyCommands(op, s.CookieSecret)
			if err != nil {
				return nil, err
			}
			cmds = append(cmds, cs...)
			continue
		}
		c, err := CommandFor(op, s.HTTP2)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, c)
	}
	return cmds, nil
}
