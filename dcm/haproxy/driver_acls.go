package haproxy

import (
	"context"
	"fmt"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// versionedTx is one versioned replace of a map or an ACL: its prepare,
// then, with the version HAProxy returned, its entries and its commit.
type versionedTx interface {
	prepareCommand() Command
	commands(version uint32) ([]Command, error)
}

func (tx mapTx) prepareCommand() Command { return tx.prepare }

// aclTx replaces the allowlist file of one HAProxy backend.
type aclTx struct {
	proxy   string
	prepare Command
	sources []string
}

func (tx aclTx) prepareCommand() Command { return tx.prepare }

func (tx aclTx) commands(version uint32) ([]Command, error) {
	cmds := make([]Command, 0, len(tx.sources)+1)
	for _, s := range tx.sources {
		c, err := AddACLCommand(version, tx.proxy, s)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, c)
	}
	commit, err := CommitACLCommand(version, tx.proxy)
	if err != nil {
		return nil, err
	}
	return append(cmds, commit), nil
}

// aclTransactions takes each replaced allowlist from the files of next, as
// Write writes them, validated now so that nothing is sent when one is
// wrong.
func (d *Driver) aclTransactions(ops []dcm.Op, next dcm.State) ([]versionedTx, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	files, err := d.render(next)
	if err != nil {
		return nil, err
	}
	txs := make([]versionedTx, 0, len(ops))
	for _, op := range ops {
		proxy := op.ProxyName()
		prepare, err := PrepareACLCommand(proxy)
		if err != nil {
			return nil, err
		}
		text, ok := files.ACLs[ACLFile(proxy)]
		if !ok {
			return nil, fmt.Errorf("allowlist of %s: the next state has no such backend", proxy)
		}
		tx := aclTx{proxy: proxy, prepare: prepare, sources: strings.Fields(string(text))}
		if _, err := tx.commands(0); err != nil {
			return nil, err
		}
		txs = append(txs, tx)
	}
	return txs, nil
}

// RuntimeACLs reads the allowlists HAProxy uses for the given backends (by
// the names HAProxy knows them by), as file bytes keyed like Files.ACLs.
func (d *Driver) RuntimeACLs(ctx context.Context, proxies []string) (map[string][]byte, error) {
	cmds := make([]Command, 0, len(proxies))
	for _, p := range proxies {
		c, err := ShowACLCommand(p)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, c)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return nil, err
	}
	replies, err := d.client.Exec(ctx, cmds)
	if err != nil {
		return nil, fmt.Errorf("show acl: %w", err)
	}
	out := make(map[string][]byte, len(proxies))
	for i, p := range proxies {
		text, err := ParseShowACL(replies[i].Text)
		if err != nil {
			return nil, err
		}
		out[ACLFile(p)] = []byte(text)
	}
	return out, nil
}
