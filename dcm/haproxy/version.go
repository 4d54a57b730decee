// Package haproxy is the only place in dcm that spells HAProxy: runtime API
// commands and the parsing of their replies, haproxy.cfg and map rendering,
// and the supervision and reload of the HAProxy master process.
package haproxy

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/dcm-router/dcm/dcm"
)

// Version is an HAProxy release, e.g. 2.6.12 from "2.6.12-1+deb12u4".
type Version struct {
	Major, Minor, Patch int
	// Full is the version string as HAProxy prints it, distribution suffix included.
	Full string
}

// The oldest HAProxy dcm drives: 2.6 is the first release whose runtime API
// has add server and del server without experimental mode.
const (
	minMajor = 2
	minMinor = 6
)

// AtLeast reports whether v is major.minor or newer.
func (v Version) AtLeast(major, minor int) bool {
	if v.Major != major {
		return v.Major > major
	}
	return v.Minor >= minor
}

func (v Version) String() string {
	if v.Full != "" {
		return v.Full
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// versionRE matches the banner of `haproxy -v`; releases before 1.9 spelled
// the name HA-Proxy.
var versionRE = regexp.MustCompile(`^HA-?Proxy version ((\d+)\.(\d+)(?:\.(\d+))?\S*)`)

var versionNumberRE = regexp.MustCompile(`^((\d+)\.(\d+)(?:\.(\d+))?\S*)$`)

// ParseVersion reads the first line of `haproxy -v`.
func ParseVersion(out string) (Version, error) {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	m := versionRE.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return Version{}, fmt.Errorf("unrecognised haproxy version output %q", truncate(line, 200))
	}
	return parseVersionParts(m[1], m[2], m[3], m[4])
}

// parseVersionNumber reads a bare version such as the reply of `show version`.
func parseVersionNumber(s string) (Version, error) {
	m := versionNumberRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Version{}, fmt.Errorf("unrecognised haproxy version %q", truncate(s, 200))
	}
	return parseVersionParts(m[1], m[2], m[3], m[4])
}

func parseVersionParts(full, major, minor, patch string) (Version, error) {
	v := Version{Full: full}
	var err error
	if v.Major, err = strconv.Atoi(major); err != nil {
		return Version{}, fmt.Errorf("haproxy version %q: %w", full, err)
	}
	if v.Minor, err = strconv.Atoi(minor); err != nil {
		return Version{}, fmt.Errorf("haproxy version %q: %w", full, err)
	}
	if patch != "" {
		if v.Patch, err = strconv.Atoi(patch); err != nil {
			return Version{}, fmt.Errorf("haproxy version %q: %w", full, err)
		}
	}
	return v, nil
}

// DetectVersion runs `<bin> -v` and refuses HAProxy releases dcm cannot drive.
func DetectVersion(ctx context.Context, bin string) (Version, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return Version{}, fmt.Errorf("haproxy binary %q not found: install Debian's haproxy package (make deps) or pass --haproxy-bin: %w", bin, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-v").CombinedOutput()
	if err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			return Version{}, fmt.Errorf("run %s -v: %w", path, err)
		}
		// Some builds exit non-zero on -v; the banner still tells the version.
	}
	v, perr := ParseVersion(string(out))
	if perr != nil {
		if err != nil {
			return Version{}, fmt.Errorf("run %s -v: %w (output: %q)", path, err, truncate(string(out), 200))
		}
		return Version{}, fmt.Errorf("%s -v: %w", path, perr)
	}
	if !v.AtLeast(minMajor, minMinor) {
		return v, fmt.Errorf("haproxy %s at %s is too old: dcm needs HAProxy %d.%d or newer because it adds and deletes servers at runtime (add server / del server)",
			v, path, minMajor, minMinor)
	}
	return v, nil
}

// CapsFor says what the planner may do with HAProxy v in the given mode:
// slots per backend in slots mode, spare backends per route kind in dynamic
// mode when HAProxy can add servers to them.
func CapsFor(v Version, mode dcm.Mode, slots, pool int) dcm.Caps {
	c := dcm.Caps{Mode: mode, AddServer: v.AtLeast(2, 6)}
	switch {
	case mode == dcm.ModeSlots:
		c.Slots = slots
	case mode == dcm.ModeDynamic && c.AddServer:
		c.Pool = pool
	}
	// The SSL transactions dcm uses (new/set/commit/abort/del ssl cert,
	// add/del ssl crt-list) are checked against 2.6 (TestCertCommands).
	c.RuntimeCerts = mode == dcm.ModeDynamic && v.AtLeast(2, 6)
	return c
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
