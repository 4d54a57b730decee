package haproxy

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
)

// replyKind says which reply means success for a command.
type replyKind int

const (
	replyEmpty replyKind = iota + 1
	replyAddServer
	replyDelServer
	replySetAddr
	replyInfo
	replyVersion
	replyServersState
	replyStat
	replyBackends
)

// Command is one runtime API command. Only this package builds commands, from
// validated values, so no caller can smuggle a ';' or a newline into HAProxy.
type Command struct {
	text string
	kind replyKind
}

func (c Command) String() string { return c.text }

// CommandFor turns one op into exactly one command, validating every string again.
func CommandFor(op dcm.Op) (Command, error) {
	if err := validateBackendName(op.Backend); err != nil {
		return Command{}, fmt.Errorf("op %s: %w", op.Kind, err)
	}
	if err := dcm.ValidateServerName("server name", op.Server); err != nil {
		return Command{}, fmt.Errorf("op %s on %s: %w", op.Kind, op.Backend, err)
	}
	target := op.Backend + "/" + op.Server
	switch op.Kind {
	case dcm.OpAddServer:
		// A new server starts in maint whatever we say; saying it keeps the
		// arguments equal to the cfg line of a server in maint.
		args, err := ServerArgs(dcm.Server{Name: op.Server, Addr: op.Addr, Port: op.Port, Weight: op.Weight, Check: op.Check, State: dcm.StateMaint, Endpoint: op.Server})
		if err != nil {
			return Command{}, fmt.Errorf("op %s on %s: %w", op.Kind, target, err)
		}
		return Command{"add server " + target + " " + args, replyAddServer}, nil
	case dcm.OpDelServer:
		return Command{"del server " + target, replyDelServer}, nil
	case dcm.OpSetAddr:
		if err := dcm.ValidateAddr("address", op.Addr); err != nil {
			return Command{}, fmt.Errorf("op %s on %s: %w", op.Kind, target, err)
		}
		if err := dcm.ValidatePort("port", op.Port); err != nil {
			return Command{}, fmt.Errorf("op %s on %s: %w", op.Kind, target, err)
		}
		return Command{"set server " + target + " addr " + op.Addr + " port " + strconv.Itoa(op.Port), replySetAddr}, nil
	case dcm.OpSetState:
		switch op.State {
		case dcm.StateReady, dcm.StateDrain, dcm.StateMaint:
		default:
			return Command{}, fmt.Errorf("op %s on %s: unknown state %q", op.Kind, target, op.State)
		}
		return Command{"set server " + target + " state " + string(op.State), replyEmpty}, nil
	case dcm.OpSetWeight:
		if op.Weight < 0 || op.Weight > 256 {
			return Command{}, fmt.Errorf("op %s on %s: weight %d out of range 0-256", op.Kind, target, op.Weight)
		}
		return Command{"set weight " + target + " " + strconv.Itoa(op.Weight), replyEmpty}, nil
	case dcm.OpEnableHealth:
		return Command{"enable health " + target, replyEmpty}, nil
	}
	return Command{}, fmt.Errorf("op %q on %s: unknown op kind", op.Kind, target)
}

// InfoCommand is `show info`.
func InfoCommand() Command { return Command{"show info", replyInfo} }

// VersionCommand is `show version`.
func VersionCommand() Command { return Command{"show version", replyVersion} }

// BackendsCommand is `show backend`.
func BackendsCommand() Command { return Command{"show backend", replyBackends} }

// ServersStateCommand is `show servers state`, for one backend or, with "", all.
func ServersStateCommand(backend string) (Command, error) {
	if backend == "" {
		return Command{"show servers state", replyServersState}, nil
	}
	if err := validateProxyName(backend); err != nil {
		return Command{}, err
	}
	return Command{"show servers state " + backend, replyServersState}, nil
}

// StatCommand is `show stat` limited to servers, for one backend or, with "", all.
func StatCommand(backend string) (Command, error) {
	if backend == "" {
		return Command{"show stat -1 4 -1", replyStat}, nil
	}
	if err := validateProxyName(backend); err != nil {
		return Command{}, err
	}
	// 2.6 takes a proxy name here (colons included), not only an id.
	return Command{"show stat " + backend + " 4 -1", replyStat}, nil
}

func validateProxyName(name string) error {
	if name == DefaultBackend {
		return nil
	}
	return validateBackendName(name)
}

// setAddrRE is every success reply of `set server <b/s> addr A port P` in 2.6.
var setAddrRE = regexp.MustCompile(`^(IP changed from '[^']*' to '[^']*'|no need to change the addr), (port changed from '[^']*' to '[^']*'|no need to change the port) by 'stats socket command'$`)

// severity splits the "[N]: " prefix that `set severity-output number` adds.
func severity(reply string) (int, string, bool) {
	if len(reply) >= 5 && reply[0] == '[' && reply[1] >= '0' && reply[1] <= '7' && reply[2] == ']' && reply[3] == ':' && reply[4] == ' ' {
		return int(reply[1] - '0'), reply[5:], true
	}
	return 0, reply, false
}

// errorSeverity is syslog's "err": replies at this level or below are failures.
const errorSeverity = 3

// succeeded reports whether reply is the known success reply of c. Anything
// unknown is a failure: the next sync then falls back to a reload.
func (c Command) succeeded(reply string) bool {
	sev, msg, prefixed := severity(reply)
	if prefixed && sev <= errorSeverity {
		return false
	}
	switch c.kind {
	case replyEmpty:
		return reply == ""
	case replyAddServer:
		return prefixed && msg == "New server registered."
	case replyDelServer:
		return prefixed && msg == "Server deleted."
	case replySetAddr:
		return prefixed && setAddrRE.MatchString(msg)
	case replyVersion:
		_, err := parseVersionNumber(msg)
		return err == nil
	case replyInfo:
		return !prefixed && strings.HasPrefix(reply, "Name: ") && strings.Contains(reply, "\nPid: ")
	case replyServersState:
		return !prefixed && strings.HasPrefix(reply, "1\n# be_id ")
	case replyStat:
		return !prefixed && strings.HasPrefix(reply, "# pxname,")
	case replyBackends:
		return !prefixed && (reply == "# name" || strings.HasPrefix(reply, "# name\n"))
	}
	return false
}
