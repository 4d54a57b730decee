package haproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// DriverConfig configures a Driver.
type DriverConfig struct {
	// Binary is the haproxy executable; "" means "haproxy" on PATH.
	Binary string
	// WorkDir holds haproxy.cfg, maps/, the sockets and the staging directory.
	WorkDir string
	// Settings for rendering; AdminSocket "" means <WorkDir>/admin.sock.
	Settings Settings
	// MasterSocket, when set, attaches to a master someone else started with
	// -f <WorkDir>/haproxy.cfg; otherwise the Driver starts and supervises one
	// with its master CLI at <WorkDir>/master.sock.
	MasterSocket string
	// ReadTimeout bounds each admin socket read; 0 means DefaultReadTimeout.
	ReadTimeout time.Duration
	// StartTimeout bounds the wait for a new master; 0 means 10s.
	StartTimeout time.Duration
	// ReloadTimeout bounds the wait for the new worker; 0 means 30s.
	ReloadTimeout time.Duration
	// Observer sees every admin command's latency and outcome.
	Observer Observer
	// Certs hands out the PEM of edge routes' certificates (with
	// Settings.HTTPSBind); nil serves no edge certificate.
	Certs CertSource
	// CAs hands out the PEM of reencrypt routes' destination CAs; nil adds
	// no server that needs one.
	CAs CASource
}

// Driver is the engine's handle on HAProxy. One mutex orders everything it
// does, so no runtime command is sent while a reload is in flight.
type Driver struct {
	cfg DriverConfig
	log *slog.Logger

	renderMu sync.Mutex // the renderer's cache is its own: rendering never waits for HAProxy
	renderer *Renderer

	// version is set once by Start and read without mu: the engine asks
	// for it under its own lock (snapshots, pages), which must never wait
	// for an admin socket that stalls while mu is held.
	version atomic.Pointer[Version]

	// certPEMs and caPEMs keep the versions the last rendering named.
	certPEMs, caPEMs pemCache

	mu     sync.Mutex
	proc   *Process
	client *Client
	// traffic is the connection ReadTraffic reads over, beside client:
	// at 10,000 backends HAProxy takes hundreds of ms to dump show stat on
	// a busy machine, and an Apply waiting for it behind mu held up a
	// sync's runtime commands by as much. trafficMu is held while a read
	// runs and taken after mu, so a reload (under mu) waits for the read
	// in flight and no read starts before it is done.
	trafficMu sync.Mutex
	traffic   *Client

	// filesMu orders the writes of the files, and is taken after mu
	// (Start, Reload and SetMaxConn hold both): Write takes it alone, so a
	// write behind the engine's sync never holds up the next Apply.
	filesMu sync.Mutex
	files   Files // what the running worker loaded, or was told at runtime
	// written is the state files were rendered from, so a change of a
	// global setting rewrites the files of the state HAProxy runs.
	written dcm.State

	// applied is the state the last Apply, Reload or Start led to (pemFiles).
	appliedMu sync.Mutex
	applied   dcm.State
	// defaultCert is the HTTPS frontend's default certificate (PEM).
	defaultCert []byte
	cancel      context.CancelFunc
	started     bool
}

// NewDriver prepares a Driver; Start runs it.
func NewDriver(cfg DriverConfig, logger *slog.Logger) *Driver {
	if cfg.Binary == "" {
		cfg.Binary = "haproxy"
	}
	if cfg.Settings.AdminSocket == "" && cfg.WorkDir != "" {
		cfg.Settings.AdminSocket = filepath.Join(cfg.WorkDir, "admin.sock")
	}
	if cfg.ReloadTimeout <= 0 {
		cfg.ReloadTimeout = 30 * time.Second
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Driver{cfg: cfg, log: logger, renderer: NewRenderer(cfg.Settings)}
}

// Start detects the version, renders and validates initial, writes the
// files, starts (or attaches to) the master and connects the admin client.
// HAProxy runs until ctx ends or Close is called.
func (d *Driver) Start(ctx context.Context, initial dcm.State) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return errors.New("haproxy driver already started")
	}
	if d.cfg.WorkDir == "" || !filepath.IsAbs(d.cfg.WorkDir) {
		return fmt.Errorf("haproxy work dir %q: want an absolute path", d.cfg.WorkDir)
	}
	v, err := DetectVersion(ctx, d.cfg.Binary)
	if err != nil {
		return err
	}
	d.version.Store(&v)
	if err := os.MkdirAll(d.cfg.WorkDir, 0o755); err != nil {
		return fmt.Errorf("haproxy work dir: %w", err)
	}
	if d.cfg.Settings.HTTPSBind != "" || gatewayServed(d.cfg.Settings.Gateway) {
		if d.defaultCert, err = EnsureDefaultCert(d.cfg.WorkDir); err != nil {
			return err
		}
	}
	d.filesMu.Lock()
	defer d.filesMu.Unlock()
	d.setApplied(initial)
	files, err := d.renderFiles(initial)
	if err != nil {
		return fmt.Errorf("render initial configuration: %w", err)
	}
	if err := Validate(ctx, d.cfg.Binary, d.cfg.WorkDir, files); err != nil {
		return fmt.Errorf("initial configuration: %w", err)
	}
	if err := WriteFiles(d.cfg.WorkDir, files, Files{}); err != nil {
		return err
	}
	if err := removeLegacyACLs(d.cfg.WorkDir); err != nil {
		return err
	}
	d.files, d.written = files, initial

	master := d.cfg.MasterSocket
	attach := master != ""
	if !attach {
		master = filepath.Join(d.cfg.WorkDir, "master.sock")
	}
	// Start's ctx is the lifetime of HAProxy: its end stops the master.
	runCtx, cancel := context.WithCancel(ctx)
	d.proc = NewProcess(ProcessConfig{
		Binary:       d.cfg.Binary,
		ConfigFile:   filepath.Join(d.cfg.WorkDir, ConfigName),
		BackendsDir:  filepath.Join(d.cfg.WorkDir, BackendsDir),
		MasterSocket: master,
		Attach:       attach,
		AdminSocket:  d.cfg.Settings.AdminSocket,
		StartTimeout: d.cfg.StartTimeout,
	}, d.log)
	if err := d.proc.Start(runCtx); err != nil {
		cancel()
		d.proc.Wait()
		return err
	}
	d.client = NewClient(d.cfg.Settings.AdminSocket, ClientOptions{ReadTimeout: d.cfg.ReadTimeout, Observer: d.cfg.Observer, Logger: d.log})
	d.traffic = NewClient(d.cfg.Settings.AdminSocket, ClientOptions{ReadTimeout: d.cfg.ReadTimeout, Observer: d.cfg.Observer, Logger: d.log})
	if attach {
		// The attached master runs whatever it loaded last: reload it so the
		// running state is the one just written.
		_, err = d.reloadLocked(ctx, files)
	} else {
		_, err = d.infoLocked(ctx)
	}
	if err != nil {
		_ = d.client.Close()
		cancel()
		d.proc.Wait()
		return fmt.Errorf("start haproxy: %w", err)
	}
	d.cancel = cancel
	d.started = true
	return nil
}

// Version is the HAProxy version found at Start.
func (d *Driver) Version() Version {
	if v := d.version.Load(); v != nil {
		return *v
	}
	return Version{}
}

// MasterPID is the pid of the master the driver started (0 when attached
// or not running).
func (d *Driver) MasterPID() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proc == nil {
		return 0
	}
	return d.proc.PID()
}

// Events reports master exits and restarts; after a restart the runtime
// state is whatever the files on disk say, so the engine re-observes.
func (d *Driver) Events() <-chan ProcessEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proc == nil {
		return nil
	}
	return d.proc.Events()
}

// Reload renders st, validates it (a configuration HAProxy refuses is never
// written nor loaded: the old worker keeps serving), writes it, reloads and
// reconnects the admin client to the new worker.
func (d *Driver) Reload(ctx context.Context, st dcm.State) (ReloadResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return ReloadResult{}, err
	}
	// Rendered under mu: a global setting changed meanwhile (SetMaxConn)
	// is in the files this worker loads.
	d.filesMu.Lock()
	defer d.filesMu.Unlock()
	d.setApplied(st)
	files, err := d.renderFiles(st)
	if err != nil {
		return ReloadResult{}, fmt.Errorf("reload: %w", err)
	}
	res, err := d.reloadLocked(ctx, files)
	if err == nil {
		d.written = st
	}
	return res, err
}

func (d *Driver) reloadLocked(ctx context.Context, files Files) (ReloadResult, error) {
	if err := Validate(ctx, d.cfg.Binary, d.cfg.WorkDir, files); err != nil {
		return ReloadResult{}, fmt.Errorf("reload: %w", err)
	}
	prev := d.files
	if err := WriteFiles(d.cfg.WorkDir, files, prev); err != nil {
		return ReloadResult{}, fmt.Errorf("reload: %w", err)
	}
	// The old worker's connections would keep talking to the old worker.
	_ = d.client.Close()
	d.closeTraffic()
	res, err := d.proc.Reload(ctx, d.cfg.ReloadTimeout)
	if err != nil {
		d.files = Files{} // the disk holds files: unknown unless restored
		if errors.Is(err, ErrReloadRejected) && prev.Config != nil {
			// Keep the disk equal to what the surviving worker runs.
			if werr := WriteFiles(d.cfg.WorkDir, prev, files); werr != nil {
				err = errors.Join(err, fmt.Errorf("restore previous files: %w", werr))
			} else {
				d.files = prev
			}
		}
		return res, err
	}
	d.files = files
	if err := d.awaitWorkerLocked(ctx, res.NewPID); err != nil {
		return res, err
	}
	d.log.Info("haproxy reloaded", "old_pid", res.OldPID, "new_pid", res.NewPID, "duration", res.Duration)
	return res, nil
}

// awaitWorkerLocked reconnects until the admin socket is served by pid.
func (d *Driver) awaitWorkerLocked(ctx context.Context, pid int) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.ReloadTimeout)
	defer cancel()
	for {
		info, err := d.infoLocked(ctx)
		if err == nil && info.Pid == pid {
			return nil
		}
		_ = d.client.Close()
		select {
		case <-ctx.Done():
			return fmt.Errorf("reload: admin socket not served by new worker %d (last: pid %d, %v): %w", pid, info.Pid, err, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (d *Driver) infoLocked(ctx context.Context) (Info, error) {
	replies, err := d.client.Exec(ctx, []Command{InfoCommand()})
	if err != nil {
		return Info{}, fmt.Errorf("show info: %w", err)
	}
	info, err := ParseInfo(replies[0].Text)
	if err != nil {
		return Info{}, fmt.Errorf("show info: %w", err)
	}
	return info, nil
}

// Info is the worker's `show info`.
func (d *Driver) Info(ctx context.Context) (Info, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return Info{}, err
	}
	return d.infoLocked(ctx)
}

// Procs is the master's `show proc`.
func (d *Driver) Procs(ctx context.Context) (Procs, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return Procs{}, err
	}
	return d.proc.ShowProc(ctx)
}

// closeTraffic closes the traffic connection once no read runs over it;
// mu held, so none starts before mu is released.
func (d *Driver) closeTraffic() {
	d.trafficMu.Lock()
	defer d.trafficMu.Unlock()
	if d.traffic != nil {
		_ = d.traffic.Close()
	}
}

func (d *Driver) ready() error {
	if !d.started {
		return errors.New("haproxy driver not started")
	}
	return nil
}

// Close disconnects and, unless attached, stops the master and waits for it.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.started {
		return nil
	}
	d.started = false
	var err error
	if d.client != nil {
		err = d.client.Close()
	}
	d.closeTraffic()
	d.cancel()
	d.proc.Wait()
	return err
}
