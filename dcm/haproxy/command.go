package haproxy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dcm-router/dcm/dcm"
	"github.com/dcm-router/dcm/dcm/routing"
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
	replyShowMap
	replyNewCert
	replySetCert
	replyCommitCert
	replyAddCrtList
	replyDelCrtList
	replyDelCert
	replyNewCA
	replySetCA
	replyCommitCA
	replyDelCA
	// replyAny is for best-effort commands (abort ssl cert after a failure).
	replyAny
)

// Command is one runtime API command. Only this package builds commands, from
// validated values, so no caller can smuggle a ';' or a newline into HAProxy.
type Command struct {
	text string
	kind replyKind
	// payload follows the command on the socket ("<text> <<\n<payload>\n\n");
	// it is never logged (it may be a private key).
	payload string
	// file is the certificate file a certificate command names, which its
	// success reply repeats.
	file string
	// list is the crt-list a crt-list command names when it is not
	// CrtListName: a Gateway HTTPS bind's.
	list string
}

// crtList is the crt-list a command names.
func (c Command) crtList() string {
	if c.list != "" {
		return c.list
	}
	return CrtListName
}

func (c Command) String() string { return c.text }

// CommandFor turns one server op into exactly one command, validating every
// string again. The command names the backend as HAProxy knows it (its
// spare, when it has one), and a new server's TLS follows h2 (its ALPN,
// as the cfg's server lines do). A map replace is a command per entry:
// see Driver.mapCommands.
func CommandFor(op dcm.Op, h2 HTTP2) (Command, error) {
	if op.Kind == dcm.OpMapReplace {
		return Command{}, fmt.Errorf("op %s %s: a command per entry, not one command", op.Kind, op.Map)
	}
	if op.Kind == dcm.OpCookieKey {
		return Command{}, fmt.Errorf("op %s %s: needs the cookie secret (CookieKeyCommands)", op.Kind, op.Backend)
	}
	proxy := op.ProxyName()
	if err := validateBackendName(proxy); err != nil {
		return Command{}, fmt.Errorf("op %s: %w", op.Kind, err)
	}
	if err := dcm.ValidateServerName("server name", op.Server); err != nil {
		return Command{}, fmt.Errorf("op %s on %s: %w", op.Kind, proxy, err)
	}
	target := proxy + "/" + op.Server
	switch op.Kind {
	case dcm.OpAddServer:
		// A new server starts in maint whatever we say; saying it keeps the
		// arguments equal to the cfg line of a server in maint.
		args, err := ServerArgs(dcm.Server{Name: op.Server, Addr: op.Addr, Port: op.Port, Weight: op.Weight, Check: op.Check, MaxConn: op.MaxConn, CheckInterMillis: op.CheckInterMillis, State: dcm.StateMaint, Endpoint: op.Server, Upstream: op.Upstream, Proto: op.Proto}, h2)
		if err != nil {
			return Command{}, fmt.Errorf("op %s on %s: %w", op.Kind, target, err)
		}
		return Command{text: "add server " + target + " " + args, kind: replyAddServer}, nil
	case dcm.OpDelServer:
		return Command{text: "del server " + target, kind: replyDelServer}, nil
	case dcm.OpSetAddr:
		if err := dcm.ValidateAddr("address", op.Addr); err != nil {
			return Command{}, fmt.Errorf("op %s on %s: %w", op.Kind, target, err)
		}
		if err := dcm.ValidatePort("port", op.Port); err != nil {
			return Command{}, fmt.Errorf("op %s on %s: %w", op.Kind, target, err)
		}
		return Command{text: "set server " + target + " addr " + op.Addr + " port " + strconv.Itoa(op.Port), kind: replySetAddr}, nil
	case dcm.OpSetState:
		switch op.State {
		case dcm.StateReady, dcm.StateDrain, dcm.StateMaint:
		default:
			return Command{}, fmt.Errorf("op %s on %s: unknown state %q", op.Kind, target, op.State)
		}
		return Command{text: "set server " + target + " state " + string(op.State), kind: replyEmpty}, nil
	case dcm.OpSetWeight:
		if op.Weight < 0 || op.Weight > 256 {
			return Command{}, fmt.Errorf("op %s on %s: weight %d out of range 0-256", op.Kind, target, op.Weight)
		}
		return Command{text: "set weight " + target + " " + strconv.Itoa(op.Weight), kind: replyEmpty}, nil
	case dcm.OpEnableHealth:
		return Command{text: "enable health " + target, kind: replyEmpty}, nil
	case dcm.OpSetMaxConn:
		return maxConnCommand(target, op.MaxConn)
	case dcm.OpDynamicCookie:
		// A backend command: it recomputes the cookie of every server of
		// the backend, the new one included (2.6's add server computes none).
		return Command{text: "enable dynamic-cookie backend " + proxy, kind: replyEmpty}, nil
	}
	return Command{}, fmt.Errorf("op %q on %s: unknown op kind", op.Kind, target)
}

// CookieKeyCommands give a sticky spare its route's dynamic-cookie-key
// (CookieKey of the route's backend name, so it equals the key a reload
// renders) and turn its dynamic cookies on.
func CookieKeyCommands(op dcm.Op, secret string) ([]Command, error) {
	proxy := op.ProxyName()
	if err := validateBackendName(proxy); err != nil {
		return nil, fmt.Errorf("op %s: %w", op.Kind, err)
	}
	return []Command{
		{text: "set dynamic-cookie-key backend " + proxy + " " + CookieKey(secret, op.Backend), kind: replyEmpty},
		{text: "enable dynamic-cookie backend " + proxy, kind: replyEmpty},
	}, nil
}

// Routing maps change entry by entry: `add map` for a key the map gains,
// `set map` for one it repoints, `del map` for one it loses, each answered
// with nothing by 2.6.12 (checked: set map of a key the map lacks answers
// "entry not found.", del map "Key not found.", at severity 3). No lookup
// depends on the order of a map's entries (dcm.MapTable.Prefix), so a
// route added among thousands costs its own entries, not a resend of the
// maps; what a request sees between two commands is Driver.Apply's.

// mapFileFor validates a routing map and names its file.
func mapFileFor(t dcm.MapTable) (string, error) {
	if !slices.Contains(dcm.MapTables, t) {
		return "", fmt.Errorf("unknown routing map %q", t)
	}
	return MapFile(t), nil
}

// AddMapCommand is `add map <file> <key> <value>`: an entry whose key the
// map does not hold (it would hold it twice). The key and the value (an
// HAProxy backend name, or the map's kind of value) are validated again.
func AddMapCommand(t dcm.MapTable, key, value string) (Command, error) {
	return mapEntryCommand("add", t, key, value)
}

// SetMapCommand is `set map <file> <key> <value>`: a new value for a key
// the map holds, validated as AddMapCommand's.
func SetMapCommand(t dcm.MapTable, key, value string) (Command, error) {
	return mapEntryCommand("set", t, key, value)
}

func mapEntryCommand(verb string, t dcm.MapTable, key, value string) (Command, error) {
	file, err := mapFileFor(t)
	if err != nil {
		return Command{}, err
	}
	if err := dcm.ValidateMapKey("map key", key); err != nil {
		return Command{}, fmt.Errorf("map %s: %w", t, err)
	}
	if err := validateMapValue(t, key, value); err != nil {
		return Command{}, fmt.Errorf("map %s key %s: %w", t, key, err)
	}
	// The CLI splits commands at ';' (an HSTS value has some): escaped,
	// it reaches the map as written (checked against 2.6.12, add map and
	// set map alike).
	value = strings.ReplaceAll(value, ";", `\;`)
	return Command{text: verb + " map " + file + " " + key + " " + value, kind: replyEmpty}, nil
}

// DelMapCommand is `del map <file> <key>`, the key validated again.
func DelMapCommand(t dcm.MapTable, key string) (Command, error) {
	file, err := mapFileFor(t)
	if err != nil {
		return Command{}, err
	}
	if err := dcm.ValidateMapKey("map key", key); err != nil {
		return Command{}, fmt.Errorf("map %s: %w", t, err)
	}
	return Command{text: "del map " + file + " " + key, kind: replyEmpty}, nil
}

// validateMapValue checks a map value against its map's allow-list: a
// backend name, an insecure action, a setting (routing.ValidateSetting),
// limits, header actions or an allowlist.
func validateMapValue(t dcm.MapTable, key, value string) error {
	switch {
	case t == dcm.MapAllowlist:
		return validateAllowlistEntry(key, value)
	case t == dcm.MapRateLimit:
		return validateRateLimitEntry(key, value)
	case t == dcm.MapHeaders:
		return routing.ValidateHeaderValue("header actions", value)
	case t.Gateway():
		return routing.ValidateGatewayValue(t, "gateway", value)
	case t.Insecure():
		return routing.ValidateInsecureAction("insecure action", value)
	case t.Setting():
		return routing.ValidateSetting(t, "setting", value)
	}
	return validateBackendName(value)
}

// ShowMapCommand is `show map <file>`: the visible version of a map.
func ShowMapCommand(t dcm.MapTable) (Command, error) {
	file, err := mapFileFor(t)
	if err != nil {
		return Command{}, err
	}
	return Command{text: "show map " + file, kind: replyShowMap}, nil
}

// ParseShowMap reads show map's "<ref> <key> <value>" lines as file lines,
// "<key> <value>\n" each, in HAProxy's order: the order entries came in.
func ParseShowMap(reply string) (string, error) {
	var b strings.Builder
	for _, line := range strings.Split(reply, "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 || !strings.HasPrefix(f[0], "0x") {
			return "", fmt.Errorf("show map: unexpected line %q", truncate(line, 200))
		}
		b.WriteString(f[1] + " " + f[2] + "\n")
	}
	return b.String(), nil
}

// InfoCommand is `show info`.
func InfoCommand() Command { return Command{text: "show info", kind: replyInfo} }

// VersionCommand is `show version`.
func VersionCommand() Command { return Command{text: "show version", kind: replyVersion} }

// BackendsCommand is `show backend`.
func BackendsCommand() Command { return Command{text: "show backend", kind: replyBackends} }

// ServersStateCommand is `show servers state`, for one backend or, with "", all.
func ServersStateCommand(backend string) (Command, error) {
	if backend == "" {
		return Command{text: "show servers state", kind: replyServersState}, nil
	}
	if err := validateProxyName(backend); err != nil {
		return Command{}, err
	}
	return Command{text: "show servers state " + backend, kind: replyServersState}, nil
}

// StatCommand is `show stat` limited to servers, for one backend or, with "", all.
func StatCommand(backend string) (Command, error) {
	if backend == "" {
		return Command{text: "show stat -1 4 -1", kind: replyStat}, nil
	}
	if err := validateProxyName(backend); err != nil {
		return Command{}, err
	}
	// 2.6 takes a proxy name here (colons included), not only an id.
	return Command{text: "show stat " + backend + " 4 -1", kind: replyStat}, nil
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
	if c.payload != "" {
		// 2.6 answers every payload line with a "+ " continuation prompt
		// before the reply itself.
		reply = continuationRE.ReplaceAllString(reply, "")
	}
	if c.kind >= replyNewCert {
		return c.certSucceeded(reply)
	}
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
	case replyShowMap:
		_, err := ParseShowMap(reply)
		return !prefixed && err == nil
	}
	return false
}

// headerLines is how many lines of the reply tell its success, for the
// replies a Stream may read (0: not one of them).
func (c Command) headerLines() int {
	switch c.kind {
	case replyServersState:
		return 2 // "1", then "# be_id ..."
	case replyStat:
		return 1 // "# pxname,..."
	}
	return 0
}

// splitsCommand reports whether the CLI would read text as more than one
// command: a ';' that no backslash escapes (an HSTS map value has escaped
// ones).
func splitsCommand(text string) bool {
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\\':
			i++
		case ';':
			return true
		}
	}
	return false
}
