package haproxy

import (
	"fmt"
	"slices"

	"github.com/dcm-router/dcm/dcm"
)

// renderFiles renders st with its certificate and CA files, for the disk.
func (d *Driver) renderFiles(st dcm.State) (Files, error) {
	f, err := d.render(st)
	if err != nil {
		return Files{}, err
	}
	if err := d.pemFiles(&f, st); err != nil {
		return Files{}, err
	}
	return f, nil
}

// Render renders st without touching the files or the cache of the
// renderer Write uses (for comparing the runtime with the files).
func (d *Driver) Render(st dcm.State) (Files, error) {
	d.renderMu.Lock()
	s := d.cfg.Settings
	d.renderMu.Unlock()
	return Render(s, st)
}

// ReadFiles reads haproxy.cfg and the map files as they are on disk.
func (d *Driver) ReadFiles() (Files, error) {
	return ReadFiles(d.cfg.WorkDir)
}

// render renders st, re-rendering only the backends that changed.
func (d *Driver) render(st dcm.State) (Files, error) {
	d.renderMu.Lock()
	defer d.renderMu.Unlock()
	return d.renderer.Render(st)
}

// Write renders st and writes it to disk, so that a reload or a restart
// reproduces the runtime state. A rendering error writes nothing. The
// certificate and CA files are looked up again only when a backend that
// changed since the last write serves a certificate or has servers with a
// CA file: at 10,000 routes, listing them costs more than the change.
func (d *Driver) Write(st dcm.State) error {
	d.filesMu.Lock() // before rendering: a write never lands after a later one
	defer d.filesMu.Unlock()
	files, err := d.render(st)
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if d.files.Config == nil || pemsMoved(d.written, st) {
		if err := d.pemFiles(&files, st); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	} else {
		files.Certs, files.CAs = d.files.Certs, d.files.CAs
	}
	if err := WriteFiles(d.cfg.WorkDir, files, d.files); err != nil {
		d.files = Files{} // what is on disk is unknown now: write everything next time
		return err
	}
	d.files, d.written = files, st
	return nil
}

// Share makes the driver hold st's backends in place of those it last
// rendered and wrote that render exactly as they do (Renderer.Share): the
// engine calls it when it replaced backends with what HAProxy reported, so
// that one copy of them is held, not two. Nothing is rendered or written.
//
// It saves memory only, so it gives way to a write in progress rather than
// wait for it: a write holds filesMu for its rendering and the disk (at
// 10,000 routes, tens of ms, and more on a busy machine), and the engine's
// sync, whose read-back calls Share, waited that long (it held the admin
// socket's lock meanwhile, so Apply waited too). What is not shared now
// is rendered again by the next write, which then holds the state's own.
func (d *Driver) Share(st dcm.State) {
	if !d.filesMu.TryLock() { // d.written is filesMu's, as Write has it
		return
	}
	defer d.filesMu.Unlock()
	d.renderMu.Lock()
	d.renderer.Share(st)
	d.renderMu.Unlock()
	d.written.Backends = shareBackends(d.written.Backends, st.Backends)
}

// pemsMoved reports whether the certificate or CA files of b may differ
// from a's: the default certificate changed, or a backend whose pointer
// moved serves a certificate or has a server with a CA file, before or
// after.
func pemsMoved(a, b dcm.State) bool {
	if a.DefaultCert != b.DefaultCert || !slices.Equal(a.GatewayBinds, b.GatewayBinds) {
		return true
	}
	pems := func(x *dcm.Backend) bool {
		return x.Route.TLS != nil || slices.ContainsFunc(x.Servers, func(s dcm.Server) bool { return s.Upstream != nil })
	}
	i, j := 0, 0
	for i < len(a.Backends) || j < len(b.Backends) {
		switch {
		case j >= len(b.Backends) || i < len(a.Backends) && a.Backends[i].Name < b.Backends[j].Name:
			if pems(a.Backends[i]) {
				return true
			}
			i++
		case i >= len(a.Backends) || b.Backends[j].Name < a.Backends[i].Name:
			if pems(b.Backends[j]) {
				return true
			}
			j++
		default:
			if a.Backends[i] != b.Backends[j] && (pems(a.Backends[i]) || pems(b.Backends[j])) {
				return true
			}
			i++
			j++
		}
	}
	return false
}

// setApplied records the state HAProxy is being brought to.
func (d *Driver) setApplied(st dcm.State) {
	d.appliedMu.Lock()
	d.applied = st
	d.appliedMu.Unlock()
}

// isLatest reports whether st is the state last applied: the same
// backends (states share them, so the same slice) and default
// certificate.
func (d *Driver) isLatest(st dcm.State) bool {
	d.appliedMu.Lock()
	defer d.appliedMu.Unlock()
	a := d.applied
	same := len(a.Backends) == len(st.Backends) && (len(a.Backends) == 0 || &a.Backends[0] == &st.Backends[0])
	return same && a.DefaultCert == st.DefaultCert
}
