package haproxy

import (
	"fmt"

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
// reproduces the runtime state. A rendering error writes nothing.
func (d *Driver) Write(st dcm.State) error {
	files, err := d.renderFiles(st)
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := WriteFiles(d.cfg.WorkDir, files, d.files); err != nil {
		d.files = Files{} // what is on disk is unknown now: write everything next time
		return err
	}
	d.files, d.written = files, st
	return nil
}
