package haproxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	files  Files // what the running worker loaded, or was told at runtime
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
	if d.cfg.Settings.HTTPSBind != "" {
		if d.defaultCert, err = EnsureDefaultCert(d.cfg.WorkDir); err != nil {
			return err
		}
	}
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
	d.files = files

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

// Apply sends ops as pipelined batches, one command per server op. Map
// replaces (contiguous in ops, as the planner emits them) send the maps of
// next, the state the ops lead to, as rendered for the files: the runtime
// map and the file Write writes next are the same lines. They take two
// batches, since add map needs the version prepare map returns: the server
// ops before the maps and the prepares, then the entries, the commits and
// the server ops after the maps. Nothing is sent when any op fails
// validation; a failed batch stops before the next.
//
// Certificate ops come first and last (the planner puts a host's
// certificate in place before its route and removes it after): each is
// its own batch, one SSL transaction at a time, aborted when it fails.
// Without an HTTPS frontend they are skipped: no certificate is served.
// A *BusyError says that everything was applied but the del server
// commands it lists and the CA deletions it returns unsent.
func (d *Driver) Apply(ctx context.Context, ops []dcm.Op, next dcm.State) error {
	certFirst, ops, certLast, err := splitCertOps(ops)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	if d.cfg.Settings.HTTPSBind == "" {
		// No certificate is served; CA files are still needed, by servers.
		certFirst, certLast = onlyCAOps(certFirst), onlyCAOps(certLast)
	}
	first, err := d.certTransactions(certFirst)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	last, err := d.certTransactions(certLast)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	batch, err := d.prepareServersAndMaps(ops, next)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	if err := d.runCertTransactions(ctx, first); err != nil {
		return err
	}
	busy := d.applyServersAndMaps(ctx, batch)
	var be *BusyError
	if busy != nil {
		if !errors.As(busy, &be) {
			return busy
		}
		// A server HAProxy kept may use a CA file the plan deletes after
		// it: deleting the file now would leave dcm believing it is still
		// there (so deleting it again later fails) and a server re-added
		// with it unable to load it. The caller decides which still go.
		last = slices.DeleteFunc(last, func(tx certTx) bool {
			if isCAOp(tx.op) && tx.op.Kind == dcm.OpCADel {
				be.Unsent = append(be.Unsent, tx.op)
				return true
			}
			return false
		})
	}
	if err := d.runCertTransactions(ctx, last); err != nil {
		return err
	}
	return busy
}

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

func onlyCAOps(ops []dcm.Op) []dcm.Op {
	var out []dcm.Op
	for _, o := range ops {
		if isCAOp(o) {
			out = append(out, o)
		}
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
		if op.Kind != dcm.OpCertDel {
			if op.Cert == nil {
				return nil, fmt.Errorf("op %s: no certificate", op.Kind)
			}
			p, err := d.certPEM(*op.Cert)
			if err != nil {
				return nil, err
			}
			pemText = strings.TrimSuffix(string(p), "\n")
		}
		cmds, abort, err := CertCommands(op, pemText)
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

// serverBatch is the server ops and map replaces of an Apply, spelled and
// validated before anything is sent.
type serverBatch struct {
	ops               int
	preCmds, postCmds []Command
	txs               []mapTx
}

func (d *Driver) prepareServersAndMaps(ops []dcm.Op, next dcm.State) (serverBatch, error) {
	pre, maps, post, err := splitMapOps(ops)
	if err != nil {
		return serverBatch{}, err
	}
	preCmds, err := commandsFor(pre, d.cfg.Settings.CookieSecret)
	if err != nil {
		return serverBatch{}, err
	}
	postCmds, err := commandsFor(post, d.cfg.Settings.CookieSecret)
	if err != nil {
		return serverBatch{}, err
	}
	txs, err := d.mapTransactions(maps, next)
	if err != nil {
		return serverBatch{}, err
	}
	return serverBatch{ops: len(ops), preCmds: preCmds, postCmds: postCmds, txs: txs}, nil
}

func (d *Driver) applyServersAndMaps(ctx context.Context, b serverBatch) error {
	preCmds, postCmds, txs := b.preCmds, b.postCmds, b.txs
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return err
	}
	var busy []string
	if len(txs) == 0 {
		_, err := d.client.Exec(ctx, append(preCmds, postCmds...))
		if busy, err = splitBusy(err); err != nil {
			return fmt.Errorf("apply %d ops: %w", b.ops, err)
		}
		return busyError(busy)
	}
	first := preCmds
	for _, tx := range txs {
		first = append(first, tx.prepare)
	}
	replies, err := d.client.Exec(ctx, first)
	if busy, err = splitBusy(err); err != nil {
		return fmt.Errorf("apply %d ops, before the map commits: %w", len(preCmds)+len(txs), err)
	}
	var second []Command
	for k, tx := range txs {
		version, err := ParseMapVersion(replies[len(preCmds)+k].Text)
		if err != nil {
			return fmt.Errorf("apply: %w", err)
		}
		cmds, err := tx.commands(version)
		if err != nil {
			return fmt.Errorf("apply: %w", err)
		}
		second = append(second, cmds...)
	}
	second = append(second, postCmds...)
	_, err = d.client.Exec(ctx, second)
	more, err := splitBusy(err)
	if err != nil {
		return fmt.Errorf("apply %d map replaces and %d ops after them: %w", len(txs), len(postCmds), err)
	}
	return busyError(append(busy, more...))
}

// BusyError is a batch that HAProxy applied but for del server commands it
// refused because a connection was still attached to the server: a request
// that arrived between the read-back that found the server idle and the
// command. Each command of a batch is independent, so the rest stands; the
// servers stay, in maint, until a later read-back finds them idle.
type BusyError struct {
	// Servers are "<proxy>/<server>", as the commands named them.
	Servers []string
	// Unsent are the ca-del ops of the plan, not sent: one of Servers may
	// still use the file. Those whose CA no server uses any more can be
	// applied on their own.
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

// splitMapOps cuts ops into the server ops before the map replaces, the map
// replaces, and the server ops after them.
func splitMapOps(ops []dcm.Op) (pre, maps, post []dcm.Op, err error) {
	first := slices.IndexFunc(ops, func(o dcm.Op) bool { return o.Kind == dcm.OpMapReplace })
	if first < 0 {
		return ops, nil, nil, nil
	}
	end := first
	for end < len(ops) && ops[end].Kind == dcm.OpMapReplace {
		end++
	}
	if slices.ContainsFunc(ops[end:], func(o dcm.Op) bool { return o.Kind == dcm.OpMapReplace }) {
		return nil, nil, nil, errors.New("map replaces are not contiguous")
	}
	return ops[:first], ops[first:end], ops[end:], nil
}

func commandsFor(ops []dcm.Op, cookieSecret string) ([]Command, error) {
	cmds := make([]Command, 0, len(ops))
	for _, op := range ops {
		if op.Kind == dcm.OpCookieKey {
			cs, err := CookieKeyCommands(op, cookieSecret)
			if err != nil {
				return nil, err
			}
			cmds = append(cmds, cs...)
			continue
		}
		c, err := CommandFor(op)
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, c)
	}
	return cmds, nil
}

// mapTx is one map replace: its prepare, and the lines of the new map.
type mapTx struct {
	table   dcm.MapTable
	prepare Command
	lines   [][2]string // key, value
}

// mapTransactions renders next and takes each replaced map's lines from it,
// validated now so that nothing is sent when one is wrong.
func (d *Driver) mapTransactions(ops []dcm.Op, next dcm.State) ([]mapTx, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	files, err := d.render(next)
	if err != nil {
		return nil, err
	}
	txs := make([]mapTx, 0, len(ops))
	for _, op := range ops {
		if !d.loadsMap(op.Map) {
			continue
		}
		prepare, err := PrepareMapCommand(op.Map)
		if err != nil {
			return nil, err
		}
		tx := mapTx{table: op.Map, prepare: prepare}
		for _, line := range strings.Split(string(files.Maps[MapFile(op.Map)]), "\n") {
			if line == "" {
				continue
			}
			key, value, ok := strings.Cut(line, " ")
			if !ok {
				return nil, fmt.Errorf("map %s: line %q has no value", op.Map, line)
			}
			if _, err := AddMapCommand(0, op.Map, key, value); err != nil {
				return nil, err
			}
			tx.lines = append(tx.lines, [2]string{key, value})
		}
		txs = append(txs, tx)
	}
	return txs, nil
}

// loadsMap reports whether HAProxy loads a routing map: the SNI map is
// read by the HTTPS address's TCP frontend only, and the insecure maps by
// fe_http only when there is HTTPS to send plain HTTP to, so without one
// HAProxy does not know them and their replaces are skipped (passthrough
// routes are then not served, TLS routes are served as HTTP), as
// certificate ops are.
func (d *Driver) loadsMap(t dcm.MapTable) bool {
	return !t.HTTPSOnly() || d.cfg.Settings.HTTPSBind != ""
}

// commands fills the prepared version and commits it.
func (tx mapTx) commands(version uint32) ([]Command, error) {
	cmds := make([]Command, 0, len(tx.lines)+1)
	for _, l := range tx.lines {
		c, err := AddMapCommand(version, tx.table, l[0], l[1])
		if err != nil {
			return nil, err
		}
		cmds = append(cmds, c)
	}
	commit, err := CommitMapCommand(version, tx.table)
	if err != nil {
		return nil, err
	}
	return append(cmds, commit), nil
}

// RuntimeMaps reads the routing maps HAProxy uses, as file bytes keyed
// like Files.Maps, to compare the runtime with the files.
func (d *Driver) RuntimeMaps(ctx context.Context) (map[string][]byte, error) {
	tables := slices.DeleteFunc(slices.Clone(dcm.MapTables), func(t dcm.MapTable) bool { return !d.loadsMap(t) })
	cmds := make([]Command, 0, len(tables))
	for _, t := range tables {
		c, err := ShowMapCommand(t)
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
		return nil, fmt.Errorf("show map: %w", err)
	}
	out := make(map[string][]byte, len(cmds))
	for i, t := range tables {
		text, err := ParseShowMap(replies[i].Text)
		if err != nil {
			return nil, err
		}
		out[MapFile(t)] = []byte(text)
	}
	return out, nil
}

// Render renders st without touching the files or the cache of the
// renderer Write uses (for comparing the runtime with the files).
func (d *Driver) Render(st dcm.State) (Files, error) {
	return Render(d.cfg.Settings, st)
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
	d.files = files
	return nil
}

// Reload renders st, validates it (a configuration HAProxy refuses is never
// written nor loaded: the old worker keeps serving), writes it, reloads and
// reconnects the admin client to the new worker.
func (d *Driver) Reload(ctx context.Context, st dcm.State) (ReloadResult, error) {
	files, err := d.renderFiles(st)
	if err != nil {
		return ReloadResult{}, fmt.Errorf("reload: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return ReloadResult{}, err
	}
	return d.reloadLocked(ctx, files)
}

func (d *Driver) reloadLocked(ctx context.Context, files Files) (ReloadResult, error) {
	if err := Validate(ctx, d.cfg.Binary, d.cfg.WorkDir, files); err != nil {
		return ReloadResult{}, fmt.Errorf("reload: %w", err)
	}
	prev := d.files
	if err := WriteFiles(d.cfg.WorkDir, files, prev); err != nil {
		return ReloadResult{}, fmt.Errorf("reload: %w", err)
	}
	// The old worker's connection would keep talking to the old worker.
	_ = d.client.Close()
	res, err := d.proc.Reload(ctx, d.cfg.ReloadTimeout)
	if err != nil {
		if errors.Is(err, ErrReloadRejected) && prev.Config != nil {
			// Keep the disk equal to what the surviving worker runs.
			if werr := WriteFiles(d.cfg.WorkDir, prev, files); werr != nil {
				err = errors.Join(err, fmt.Errorf("restore previous files: %w", werr))
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

// Observe reports the servers of every backend dcm manages, as HAProxy sees
// them: address, weight, admin state, health and load. Origin, Pod,
// Endpoint and Check are left for the engine, which knows them.
func (d *Driver) Observe(ctx context.Context) (map[string][]dcm.Server, error) {
	state, _ := ServersStateCommand("")
	stat, _ := StatCommand("")
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return nil, err
	}
	replies, err := d.client.Exec(ctx, []Command{BackendsCommand(), state, stat})
	if err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	out := map[string][]dcm.Server{}
	for _, name := range strings.Split(replies[0].Text, "\n")[1:] {
		if managed(name) {
			out[name] = []dcm.Server{}
		}
	}
	if err := merge(out, replies[1].Text, replies[2].Text, nil); err != nil {
		return nil, fmt.Errorf("observe: %w", err)
	}
	return out, nil
}

// ObserveBackends is Observe limited to some backends, in one batch. A
// backend HAProxy does not know is absent from the result.
func (d *Driver) ObserveBackends(ctx context.Context, names []string) (map[string][]dcm.Server, error) {
	return d.observeBackends(ctx, names, true)
}

// ObserveStates is ObserveBackends without the traffic figures: admin state,
// address, weight and a health derived from the operational state, from
// `show servers state` alone. It is several times cheaper than show stat
// (which walks every proxy for each backend asked), so the periodic drift
// check uses it; Sessions, Queued, UsedConn and IdleConn are left zero.
func (d *Driver) ObserveStates(ctx context.Context, names []string) (map[string][]dcm.Server, error) {
	return d.observeBackends(ctx, names, false)
}

func (d *Driver) observeBackends(ctx context.Context, names []string, traffic bool) (map[string][]dcm.Server, error) {
	per := 1
	if traffic {
		per = 2
	}
	cmds := make([]Command, 0, per*len(names))
	for _, n := range names {
		state, err := ServersStateCommand(n)
		if err != nil {
			return nil, fmt.Errorf("observe: %w", err)
		}
		cmds = append(cmds, state)
		if traffic {
			stat, err := StatCommand(n)
			if err != nil {
				return nil, fmt.Errorf("observe: %w", err)
			}
			cmds = append(cmds, stat)
		}
	}
	if len(cmds) == 0 {
		return map[string][]dcm.Server{}, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.ready(); err != nil {
		return nil, err
	}
	replies, err := d.client.Exec(ctx, cmds)
	if len(replies) < len(cmds) {
		return nil, fmt.Errorf("observe: %w", err)
	}
	out := map[string][]dcm.Server{}
	for i, n := range names {
		st := replies[per*i].Text
		sr := ""
		if traffic {
			sr = replies[per*i+1].Text
		}
		if missingBackend(st) || missingBackend(sr) {
			continue
		}
		if !cmds[per*i].succeeded(st) || traffic && !cmds[per*i+1].succeeded(sr) {
			return nil, fmt.Errorf("observe %s: %w", n, err)
		}
		if managed(n) {
			out[n] = []dcm.Server{}
		}
		if err := merge(out, st, sr, map[string]bool{n: true}); err != nil {
			return nil, fmt.Errorf("observe %s: %w", n, err)
		}
	}
	return out, nil
}

// missingBackend recognises 2.6's replies for a backend that does not exist.
func missingBackend(reply string) bool {
	_, msg, ok := severity(reply)
	return ok && (msg == "Can't find backend." || msg == "No such proxy." || msg == "No such backend.")
}

// managed says whether dcm manages a backend: be_* but not the 404 backend.
func managed(name string) bool {
	return strings.HasPrefix(name, BackendPrefix) && name != DefaultBackend
}

// merge joins `show servers state` and `show stat` into out, per backend.
func merge(out map[string][]dcm.Server, stateText, statText string, only map[string]bool) error {
	states, err := ParseServersState(stateText)
	if err != nil {
		return err
	}
	var stats []StatRow
	if statText != "" {
		if stats, err = ParseStat(statText); err != nil {
			return err
		}
	}
	type key struct{ b, s string }
	byKey := make(map[key]StatRow, len(stats))
	for _, r := range stats {
		if r.Type == StatServer {
			byKey[key{r.Proxy, r.Server}] = r
		}
	}
	for _, s := range states {
		if !managed(s.Backend) || (only != nil && !only[s.Backend]) {
			continue
		}
		srv := dcm.Server{Name: s.Name, Addr: s.Addr, Port: s.Port, Weight: s.Weight, State: s.State}
		if r, ok := byKey[key{s.Backend, s.Name}]; ok {
			srv.Health, srv.Sessions, srv.Queued, srv.UsedConn, srv.IdleConn = statusWord(r.Status), r.Sessions, r.Queued, r.UsedConn, r.IdleConn
		} else {
			srv.Health = healthOf(s)
		}
		out[s.Backend] = append(out[s.Backend], srv)
	}
	for b := range out {
		dcm.SortServers(out[b])
	}
	return nil
}

// statusWord keeps the state of show stat's status column and drops the
// check's progress ("UP 1/3" → "UP"; "no check" → "UP"), so that it reads
// the same as healthOf and only changes when the server's health does.
func statusWord(status string) string {
	w, _, _ := strings.Cut(status, " ")
	if w == "no" || w == "" {
		return "UP"
	}
	return w
}

// healthOf words a server's state as show stat's status column does, from
// `show servers state` alone.
func healthOf(s ServerState) string {
	switch {
	case s.State == dcm.StateMaint:
		return "MAINT"
	case s.OpState == 0:
		return "DOWN"
	case s.State == dcm.StateDrain:
		return "DRAIN"
	case s.OpState == 3:
		return "NOLB"
	}
	return "UP"
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
	d.cancel()
	d.proc.Wait()
	return err
}
