package haproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ProcessConfig says how to run, or where to find, the HAProxy master.
type ProcessConfig struct {
	Binary string
	// ConfigFile is the haproxy.cfg the master loads (and reloads), and
	// BackendsDir the directory of backend files it loads after it (none
	// when empty).
	ConfigFile  string
	BackendsDir string
	// MasterSocket is the master CLI's path. With Attach it must already exist.
	MasterSocket string
	// Attach uses a master started by someone else instead of starting one;
	// it is then neither supervised nor stopped.
	Attach bool
	// AdminSocket is probed with `show info` to know the worker is serving.
	AdminSocket string
	// StartTimeout bounds the wait for the admin socket; 0 means 10s.
	StartTimeout time.Duration
	// StopTimeout bounds the wait after SIGTERM before SIGKILL; 0 means 10s.
	StopTimeout time.Duration
	// MaxBackoff caps the delay between restarts; 0 means 10s.
	MaxBackoff time.Duration
}

// ProcessEventType says what happened to the master.
type ProcessEventType string

const (
	// ProcessExited: the master died without being asked to.
	ProcessExited ProcessEventType = "exited"
	// ProcessRestarted: a new master serves again, from the files on disk.
	ProcessRestarted ProcessEventType = "restarted"
	// ProcessRestartFailed: a restart attempt failed; another follows after a backoff.
	ProcessRestartFailed ProcessEventType = "restart-failed"
)

// ProcessEvent tells the engine the master changed under it, so it re-observes.
type ProcessEvent struct {
	Type ProcessEventType
	PID  int // the new master for ProcessRestarted, the dead one otherwise
	Err  error
	Time time.Time
}

// Process runs `haproxy -W -S <master.sock> -f <cfg>` as a child, restarts it
// with backoff when it dies (the files on disk always equal the runtime
// state, so a restart restores it) and stops it when its context ends.
type Process struct {
	cfg    ProcessConfig
	log    *slog.Logger
	master *Master
	events chan ProcessEvent
	// forwarders copy HAProxy's stdout and stderr into the log.
	forwarders sync.WaitGroup

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	waitErr error
	stderr  *tail
	done    chan struct{} // closed when the supervisor has stopped the master
	started bool
}

// NewProcess prepares a Process; Start runs it.
func NewProcess(cfg ProcessConfig, logger *slog.Logger) *Process {
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 10 * time.Second
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 10 * time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 10 * time.Second
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Process{
		cfg:    cfg,
		log:    logger.With("component", "haproxy"),
		master: NewMaster(cfg.MasterSocket, 5*time.Second),
		events: make(chan ProcessEvent, 16),
		done:   make(chan struct{}),
	}
}

// Events reports exits and restarts of a master this Process started.
func (p *Process) Events() <-chan ProcessEvent { return p.events }

// Master is the master CLI client.
func (p *Process) Master() *Master { return p.master }

// ShowProc lists the master and its workers.
func (p *Process) ShowProc(ctx context.Context) (Procs, error) { return p.master.ShowProc(ctx) }

// Reload reloads through the master CLI and waits for the new worker.
func (p *Process) Reload(ctx context.Context, timeout time.Duration) (ReloadResult, error) {
	return p.master.Reload(ctx, timeout)
}

// PID is the pid of the master this Process started, 0 when attached or stopped.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Start starts the master (or checks the attached one) and returns once the
// admin socket answers. The master lives until ctx ends; then it gets
// SIGTERM, SIGKILL after StopTimeout, and is waited for. Wait tells when.
func (p *Process) Start(ctx context.Context) error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errors.New("haproxy process already started")
	}
	p.started = true
	p.mu.Unlock()

	if p.cfg.Attach {
		close(p.done)
		if _, err := p.master.ShowProc(ctx); err != nil {
			return fmt.Errorf("attach to haproxy master %s: %w", p.cfg.MasterSocket, err)
		}
		return p.waitReady(ctx, nil)
	}
	if err := p.spawn(ctx); err != nil {
		close(p.done)
		return err
	}
	go p.supervise(ctx)
	return nil
}

// Wait blocks until a started master has been stopped after its context ended.
func (p *Process) Wait() {
	<-p.done
	// HAProxy's last lines are logged before Wait returns, so nothing logs
	// after the caller believes HAProxy is gone.
	p.forwarders.Wait()
}

// spawn starts one master and waits for its worker to answer.
func (p *Process) spawn(ctx context.Context) error {
	// A stale socket from a killed master would answer nothing; the new master
	// would replace it anyway, but removing it keeps the readiness probe honest.
	_ = os.Remove(p.cfg.MasterSocket)
	args := []string{"-W", "-S", p.cfg.MasterSocket + ",mode,600", "-f", p.cfg.ConfigFile}
	if p.cfg.BackendsDir != "" {
		args = append(args, "-f", p.cfg.BackendsDir)
	}
	cmd := exec.Command(p.cfg.Binary, args...)
	// Own process group: a SIGKILL for a stuck shutdown reaches the workers too.
	// Pdeathsig: if dcm dies, its HAProxy goes with it rather than serving stale state.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	outR, outW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start haproxy: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_ = outR.Close()
		_ = outW.Close()
		return fmt.Errorf("start haproxy: %w", err)
	}
	// *os.File outputs are handed to the child directly, so Wait does not wait
	// for workers that inherited them; the forwarders end at EOF on their own.
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{outR, outW, errR, errW} {
			_ = f.Close()
		}
		return fmt.Errorf("start haproxy %s: %w", p.cfg.Binary, err)
	}
	_ = outW.Close()
	_ = errW.Close()
	t := newTail(20)
	p.forwarders.Add(2)
	go func() { defer p.forwarders.Done(); forward(p.log, outR, nil) }()
	go func() { defer p.forwarders.Done(); forward(p.log, errR, t) }()

	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited, p.stderr, p.waitErr = cmd, exited, t, nil
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(exited)
	}()
	p.log.Info("haproxy master started", "pid", cmd.Process.Pid, "config", p.cfg.ConfigFile)

	if err := p.waitReady(ctx, exited); err != nil {
		p.stop(cmd, exited)
		return err
	}
	return nil
}

// waitReady polls the admin socket with `show info` and the master CLI with
// `show proc` until both answer, the master exits (the error carries
// HAProxy's stderr) or StartTimeout passes.
func (p *Process) waitReady(ctx context.Context, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.StartTimeout)
	defer cancel()
	probeCtx, cancelProbe := context.WithCancel(ctx)
	defer cancelProbe()
	if exited != nil {
		// A probe blocked on a dying master's socket must not hide its exit.
		go func() {
			select {
			case <-exited:
				cancelProbe()
			case <-probeCtx.Done():
			}
		}()
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		// The worker answers on the admin socket before the master, which
		// re-executes itself after loading, serves its CLI: wait for both.
		lastErr = probeInfo(probeCtx, p.cfg.AdminSocket)
		if lastErr == nil {
			var procs Procs
			if procs, lastErr = p.master.ShowProc(probeCtx); lastErr == nil {
				if _, ok := procs.Current(); ok {
					return nil
				}
				lastErr = errors.New("master lists no worker yet")
			}
		}
		select {
		case <-exited: // first: a dead master explains any probe error
			return p.exitedErr()
		default:
		}
		select {
		case <-exited:
			return p.exitedErr()
		case <-ctx.Done():
			msg := ""
			if exited != nil {
				p.mu.Lock()
				msg = p.stderr.String()
				p.mu.Unlock()
			}
			return fmt.Errorf("haproxy admin socket %s not answering after %s: %w (haproxy said: %s)", p.cfg.AdminSocket, p.cfg.StartTimeout, lastErr, msg)
		case <-tick.C:
		}
	}
}

// exitedErr describes a master that died while starting, in HAProxy's words.
func (p *Process) exitedErr() error {
	p.mu.Lock()
	werr, t := p.waitErr, p.stderr
	p.mu.Unlock()
	t.settle()
	return fmt.Errorf("haproxy exited during start (%v): %s", werr, t.String())
}

// probeInfo asks `show info` on a fresh non-interactive connection.
func probeInfo(ctx context.Context, socket string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	dl, _ := ctx.Deadline()
	_ = conn.SetDeadline(dl)
	if _, err := io.WriteString(conn, "show info\n"); err != nil {
		return err
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		return err
	}
	_, err = ParseInfo(string(out))
	return err
}

// supervise restarts the master when it dies and stops it when ctx ends.
func (p *Process) supervise(ctx context.Context) {
	defer close(p.done)
	backoff := 100 * time.Millisecond
	for {
		p.mu.Lock()
		cmd, exited := p.cmd, p.exited
		p.mu.Unlock()
		runningSince := time.Now()
		select {
		case <-ctx.Done():
			p.stop(cmd, exited)
			return
		case <-exited:
		}
		p.mu.Lock()
		werr, t := p.waitErr, p.stderr
		p.mu.Unlock()
		t.settle()
		p.log.Error("haproxy master exited unexpectedly", "pid", cmd.Process.Pid, "err", werr, "stderr", t.String())
		p.emit(ProcessEvent{Type: ProcessExited, PID: cmd.Process.Pid, Err: fmt.Errorf("haproxy master exited: %v", werr)})
		if time.Since(runningSince) > time.Minute {
			backoff = 100 * time.Millisecond // it ran fine for a while: not a crash loop
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, p.cfg.MaxBackoff)
			if err := p.spawn(ctx); err != nil {
				p.log.Error("haproxy restart failed", "err", err, "retry_in", backoff)
				p.emit(ProcessEvent{Type: ProcessRestartFailed, Err: err})
				continue
			}
			p.emit(ProcessEvent{Type: ProcessRestarted, PID: p.PID()})
			break
		}
	}
}

func (p *Process) emit(e ProcessEvent) {
	e.Time = time.Now()
	select {
	case p.events <- e:
	default:
		// The engine re-observes on any event, so one it has not read yet
		// already makes it catch up.
		p.log.Warn("haproxy event dropped: nobody is reading", "type", e.Type)
	}
}

// stop sends SIGTERM, then SIGKILL to the whole group after StopTimeout, and
// waits for the master to be reaped.
func (p *Process) stop(cmd *exec.Cmd, exited <-chan struct{}) {
	select {
	case <-exited:
		return
	default:
	}
	pid := cmd.Process.Pid
	waitCatches(pid, syscall.SIGTERM, exited, 2*time.Second)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		p.mu.Lock()
		werr := p.waitErr
		p.mu.Unlock()
		p.log.Info("haproxy master stopped", "pid", pid, "exit", werr)
		return
	case <-time.After(p.cfg.StopTimeout):
	}
	p.log.Warn("haproxy master ignored SIGTERM; killing its process group", "pid", pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
}

// waitCatches waits until pid has a handler for sig. The 2.6 master
// re-executes itself after it loads a configuration (at start and on every
// reload), and until the new image has installed its handlers a SIGTERM
// kills it outright: its workers are orphaned instead of stopped and
// reaped (measured: the admin socket answers some 30 ms before the master
// catches SIGTERM). Without /proc it returns at once.
func waitCatches(pid int, sig syscall.Signal, exited <-chan struct{}, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		caught, ok := catchesSignal(pid, sig)
		if !ok || caught {
			return
		}
		select {
		case <-exited:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// catchesSignal reads the SigCgt mask of /proc/<pid>/status.
func catchesSignal(pid int, sig syscall.Signal) (caught, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, found := strings.CutPrefix(line, "SigCgt:"); found {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, false
			}
			return mask&(1<<(uint(sig)-1)) != 0, true
		}
	}
	return false, false
}

// forward logs HAProxy's output line by line at the level HAProxy gave it.
func forward(log *slog.Logger, r io.ReadCloser, t *tail) {
	defer r.Close()
	if t != nil {
		defer close(t.done)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if t != nil {
			t.add(line)
		}
		log.Log(context.Background(), lineLevel(line), line)
	}
}

// lineLevel maps HAProxy's message levels to slog's. HAProxy reports every
// state change dcm itself made over the CLI as a WARNING ("… : CLI : Server
// x is UP/READY", or, 2.6.12 for set server state, forcedStateChange); dcm
// logs those changes itself, so they are debug output. A full resync at
// 10,000 routes is 10,000 such lines: formatted as warnings they took half
// of dcm's CPU while HAProxy applied them.
func lineLevel(line string) slog.Level {
	switch {
	case strings.HasPrefix(line, "[ALERT]"), strings.HasPrefix(line, "[EMERG]"):
		return slog.LevelError
	case strings.Contains(line, ") : CLI : "), strings.HasPrefix(line, "[DEBUG]"), forcedStateChange(line):
		return slog.LevelDebug
	case strings.HasPrefix(line, "[WARNING]"):
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// forcedStateChange tells how HAProxy 2.6 words a server's admin state
// set over the CLI (set server … state): the forced changes, which only
// dcm makes on its admin socket. A change HAProxy made itself names its
// cause ("for maintenance (No IP for server )", "(via be/s)", "reason: …")
// and stays a warning.
func forcedStateChange(line string) bool {
	if !strings.HasPrefix(line, "[WARNING]") || !strings.Contains(line, ") : Server ") {
		return false
	}
	for _, s := range [...]string{
		" is going DOWN for maintenance. ",
		" (leaving forced maintenance).",
		" enters drain state. ",
		" (leaving forced drain).",
		" remains in forced drain mode.",
	} {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// tail keeps the last lines of HAProxy's stderr for error messages.
type tail struct {
	mu    sync.Mutex
	n     int
	lines []string
	done  chan struct{} // closed at EOF
}

func newTail(n int) *tail { return &tail{n: n, done: make(chan struct{})} }

// settle waits a little for the last lines of a process that just exited.
func (t *tail) settle() {
	select {
	case <-t.done:
	case <-time.After(500 * time.Millisecond):
	}
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
}

func (t *tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
